// What an answer document says about the run that made it (<florence/answer_json.h>'s
// AnswerContext), built in one place so that the CLI's --json and --jsonl, the sidecars of a
// folder run, File › Export and an export from the History describe one run the same way.
//
//   const florence::GenerationOptions opts = model->defaultOptions();
//   const florence::AnswerContext context = florence::describeRun(
//       florence::modelFacts(*model), opts, "pier.png", prompt, image.orientationApplied);
//   const QJsonObject document = florence::answerJson(answer, result, context);
#pragma once

#include <florence/answer_json.h>
#include <florence/engine.h>

#include <optional>
#include <string>

namespace florence {

// What the document says of the model: plain values, so that a window or a history entry can
// keep them without holding the model.
struct ModelFacts {
    std::string name; // the manifest's name; "" = no model, and none of the fields below is written
    Precision precision = Precision::Float32;        // how the weights run
    Precision encoderPrecision = Precision::Float32; // Model::encoderPrecision
    double loadMs = 0;                               // the model's load time
};

ModelFacts modelFacts(const Model& model);

// The context of one answer: the image file as the user named it ("" for a pasted image), the
// prompt fed to the model, how the model ran, the generation options (kept by pointer: they
// must outlive the context), whether the image's EXIF orientation was applied (unset: not
// known) and the runtime of this process (runtimeSummary()).
AnswerContext describeRun(const ModelFacts& model, const GenerationOptions& options,
                          const std::string& imageFile, const std::string& prompt,
                          std::optional<bool> orientationApplied = std::nullopt);

} // namespace florence
