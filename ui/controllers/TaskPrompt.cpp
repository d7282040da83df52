#include "controllers/TaskPrompt.h"

#include "presentation/AnswerDisplay.h"

#include <QObject>
#include <QRegularExpression>

#include <exception>

namespace florence::ui {

std::optional<Box> taskRegion(const QString& task, const std::optional<QRectF>& region) {
    if (!region || taskInfo(task.toStdString()).input != TaskInput::Region)
        return std::nullopt;
    return Box{region->left(), region->top(), region->right(), region->bottom()};
}

std::optional<std::string> promptFor(const QString& task, const QString& text,
                                     const std::optional<QRectF>& region, const RgbImage* image,
                                     QString* error) {
    TaskRequest request;
    request.task = task.toStdString();
    const TaskInfo& info = taskInfo(request.task);
    if (info.input == TaskInput::Text)
        request.text = text.trimmed().toStdString();
    // The engine's message speaks to the command line ("pass the text…"); the window says
    // where to type it.
    if (info.input == TaskInput::Text && request.text.empty()) {
        QString box = QString::fromStdString(info.inputLabel);
        if (!box.isEmpty())
            box[0] = box[0].toUpper();
        *error = QObject::tr("Type a %1 in the %2 box first: “%3” needs one.")
                     .arg(QString::fromStdString(info.inputLabel), box, taskDisplayName(task));
        return std::nullopt;
    }
    if (info.input == TaskInput::Region) {
        if (!region) {
            *error = QObject::tr("Drag a rectangle on the image to choose the region for %1 first.")
                         .arg(QString::fromStdString(info.name));
            return std::nullopt;
        }
        request.region = taskRegion(task, region);
    }
    try {
        return buildPrompt(request, image ? image->width : 1000, image ? image->height : 1000);
    } catch (const std::exception& e) {
        *error = withTaskNames(QString::fromStdString(e.what()));
        return std::nullopt;
    }
}

QString readablePrompt(const std::string& prompt, int imageWidth, int imageHeight) {
    // No image: promptFor's 1000 × 1000.
    if (imageWidth <= 0 || imageHeight <= 0)
        imageWidth = imageHeight = 1000;
    static const QRegularExpression fourLocs(
        QStringLiteral("<loc_(\\d{1,3})><loc_(\\d{1,3})><loc_(\\d{1,3})><loc_(\\d{1,3})>"));
    QString text = QString::fromStdString(prompt);
    QString out;
    qsizetype from = 0;
    for (auto it = fourLocs.globalMatch(text); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        out += text.mid(from, m.capturedStart() - from);
        const auto px = [&](int i, int size) {
            return QString::number(qRound(binToPixel(m.captured(i).toInt(), size)));
        };
        out +=
            QObject::tr("[box %1, %2 – %3, %4]")
                .arg(px(1, imageWidth), px(2, imageHeight), px(3, imageWidth), px(4, imageHeight));
        from = m.capturedEnd();
    }
    return out + text.mid(from);
}

QString withTaskNames(const QString& message) {
    static const QRegularExpression token(QStringLiteral("<[A-Z][A-Z_]*>"));
    QString out;
    qsizetype from = 0;
    for (auto it = token.globalMatch(message); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        out += message.mid(from, m.capturedStart() - from);
        const QString name = taskDisplayName(m.captured());
        out += name == m.captured() ? name : QStringLiteral("“%1”").arg(name);
        from = m.capturedEnd();
    }
    return out + message.mid(from);
}

} // namespace florence::ui
