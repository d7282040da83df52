// What File › Export JSON writes: the one answer document of <florence/answer_json.h>
// (docs/answer-json.md), the same the CLI's `run --json` writes, for the answer on screen and
// what the window knows about it (the image file, the model, how it was run).
//
//   florence::ui::ExportDocument doc = florence::ui::ExportDocument::ofAnswer(runs, info, path);
//   doc.write("/tmp/pier-OD.json");    // throws std::runtime_error naming the file
#pragma once

#include "controllers/WorkerTypes.h"

#include <florence/answer.h>
#include <florence/answer_json.h>
#include <florence/engine.h>

#include <QJsonObject>
#include <QString>

namespace florence::ui {

class RunController;

struct ExportDocument {
    ParsedAnswer answer;
    Result result;         // the run's text, ids, scores and timings
    AnswerContext context; // its `options` is set from `options` below when written
    GenerationOptions options;

    // The answer `runs` shows, of the image at `imagePath` ("" for a pasted or dropped image:
    // the document then names no file), run by the model `model` (none when `model` has no
    // manifest name).
    static ExportDocument ofAnswer(const RunController& runs, const ModelInfo& model,
                                   const QString& imagePath);

    QJsonObject toJson() const;
    // Throws std::runtime_error with the path and the system's reason when it cannot write.
    void write(const QString& path) const;
};

} // namespace florence::ui
