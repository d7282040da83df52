#include "ExportDocument.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>

#include <cmath>
#include <stdexcept>

namespace florence::ui {

namespace {

// Coordinates come from 1000 location bins, so a pixel value is only known to about
// size/1000; two decimals keep every bin apart on images up to 100,000 px and drop the float
// noise (101.37600000000002) that the computation leaves.
QJsonValue rounded(const QJsonValue& v) {
    if (v.isDouble())
        return std::round(v.toDouble() * 100.0) / 100.0;
    if (v.isArray()) {
        QJsonArray out;
        for (const QJsonValue& x : v.toArray())
            out.append(rounded(x));
        return out;
    }
    if (v.isObject()) {
        QJsonObject out = v.toObject();
        for (auto it = out.begin(); it != out.end(); ++it)
            it.value() = rounded(it.value());
        return out;
    }
    return v;
}

} // namespace

QJsonObject ExportDocument::toJson() const {
    QJsonObject root;
    root[QStringLiteral("huggingface")] = toHuggingFaceJson(answer);
    root[QStringLiteral("native")] = toNativeJson(answer);
    // COCO only where the answer has geometry; a caption has no annotations to carry.
    if (answer.type != AnswerType::PureText)
        root[QStringLiteral("coco")] =
            rounded(toCocoJson(answer, imageName.toStdString(), imageWidth, imageHeight));
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
