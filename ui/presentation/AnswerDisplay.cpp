#include "presentation/AnswerDisplay.h"

#include <QObject>

namespace florence::ui {

std::string cleanAnswerText(const std::string& text) {
    return readableText(text); // the engine's, so batch's text sidecars read the same
}

ParsedAnswer displayAnswer(const ParsedAnswer& answer, const std::optional<Box>& askedRegion) {
    return readableAnswer(answer, askedRegion); // the engine's, so the answer document agrees
}

QString itemCountText(const ParsedAnswer& a) {
    if (a.type == AnswerType::PureText)
        return QObject::tr("text answer");
    const int n = static_cast<int>(a.items.size());
    if (n == 0)
        return cleanAnswerText(a.text).empty() ? QObject::tr("no items")
                                               : QObject::tr("no items, text only");
    return n == 1 ? QObject::tr("1 item") : QObject::tr("%1 items").arg(n);
}

QString taskDisplayName(const QString& token) {
    try {
        return QString::fromStdString(taskInfo(token.toStdString()).name);
    } catch (const TaskError&) {
        return token;
    }
}

} // namespace florence::ui
