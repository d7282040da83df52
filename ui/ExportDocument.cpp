#include "ExportDocument.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>

#include <stdexcept>

namespace florence::ui {

QJsonObject ExportDocument::toJson() const {
    QJsonObject root;
    root[QStringLiteral("huggingface")] = toHuggingFaceJson(answer);
    root[QStringLiteral("native")] = toNativeJson(answer);
    // COCO only where the answer has geometry; a caption has no annotations to carry.
    if (answer.type != AnswerType::PureText)
        root[QStringLiteral("coco")] =
            toCocoJson(answer, imageName.toStdString(), imageWidth, imageHeight);
    root[QStringLiteral("rawText")] = QString::fromStdString(rawText);
    root[QStringLiteral("prompt")] = QString::fromStdString(prompt);
    root[QStringLiteral("image")] = imageName;
    root[QStringLiteral("model")] = modelName;
    return root;
}

void ExportDocument::write(const QString& path) const {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        f.write(QJsonDocument(toJson()).toJson(QJsonDocument::Indented)) < 0)
        throw std::runtime_error(QStringLiteral("Cannot write %1: %2")
                                     .arg(QDir::toNativeSeparators(path), f.errorString())
                                     .toStdString());
}

} // namespace florence::ui
