#include "ExportDocument.h"

#include "controllers/RunController.h"

#include <florence/files.h>
#include <florence/machine.h>

#include <QDir>
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
    // Whole or not at all: a full disk keeps an earlier export intact (throws Error naming it).
    writeFileAtomically(path.toStdString(),
                        QJsonDocument(toJson()).toJson(QJsonDocument::Indented));
}

} // namespace florence::ui
