#include "ExportDocument.h"

#include "run/RunController.h"

#include <florence/machine.h>

#include <QDir>
#include <QFile>
#include <QJsonDocument>

#include <stdexcept>

namespace florence::ui {

ExportDocument ExportDocument::ofAnswer(const RunController& runs, const ModelInfo& model,
                                        const QString& imagePath) {
    ExportDocument doc;
    doc.answer = runs.answer();
    doc.result = runs.answerResult();
    doc.options = runs.answerOptions();
    doc.context.imageFile = imagePath.toStdString();
    doc.context.prompt = runs.answerPrompt();
    doc.context.model = model.manifest.name;
    if (!model.manifest.name.empty()) {
        doc.context.precision = precisionName(model.precisionMode);
        doc.context.encoderPrecision = precisionName(model.encoderPrecision);
        doc.context.loadMs = model.loadMs;
    }
    doc.context.runtime = runtimeSummary();
    return doc;
}

QJsonObject ExportDocument::toJson() const {
    AnswerContext c = context;
    c.options = &options;
    return answerJson(answer, result, c);
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
