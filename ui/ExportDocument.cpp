#include "ExportDocument.h"

#include "controllers/RunController.h"

#include <florence/files.h>
#include <florence/describe_run.h>

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
    const std::shared_ptr<const RgbImage>& image = runs.answerImage();
    doc.context = describeRun(model.facts(), doc.options, imagePath.toStdString(),
                              runs.answerPrompt(),
                              image ? std::optional<bool>(image->orientationApplied) : std::nullopt);
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
