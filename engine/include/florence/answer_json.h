// The one JSON document of an answer, written the same way by the CLI (`run --json`, `--images`)
// and the app's export: the Hugging Face form exactly as the original post-processor returns it,
// the app's form, COCO, the raw text, the token ids and the timings, all keys snake_case.
// docs/answer-json.md describes every field with an example per task kind.
//
//   florence::Result r = session.generate(req, opts);
//   florence::ParsedAnswer a = florence::parseAnswer("<OD>", r.text, img.width, img.height);
//   florence::AnswerContext ctx;
//   ctx.imageFile = "pier.png";
//   ctx.prompt = req.prompt;
//   ctx.options = &opts;
//   QJsonObject doc = florence::answerJson(a, r, ctx);
//   doc["huggingface"];   // {"<OD>": {"bboxes": [[…]], "labels": ["car"]}}
#pragma once

#include <florence/answer.h>
#include <florence/engine.h>

#include <QJsonObject>

#include <optional>
#include <string>

namespace florence {

// Written as the document's "format_version"; raised when a field changes meaning or goes.
constexpr int kAnswerJsonVersion = 1;

// What the answer alone does not know. Empty strings and unset values leave their field out.
struct AnswerContext {
    std::string imageFile; // as the user named it; COCO's file_name is its last component
    std::string prompt;    // the text fed to the model
    std::string model;     // the model's name
    const GenerationOptions* options = nullptr; // "generation": beams, cache, token limit
    std::string precision;                      // precisionName() of the loaded model
    std::string encoderPrecision; // the encoders' (Model::encoderPrecision), when not `precision`
    std::optional<double> loadMs;               // the model's load time, in "timings"
    std::string runtime;                        // runtimeSummary()
    // "image.orientation_applied": whether the file's EXIF orientation turned the image (its
    // size and coordinates are then the upright picture's); absent when not known.
    std::optional<bool> orientationApplied;
};

// The answer document's "native" form: toNativeJson of `readable` (readableAnswer of `answer`)
// with `answer`'s answer type.
QJsonObject nativeForm(const ParsedAnswer& answer, const ParsedAnswer& readable);

// The document for one answer of one image. The answer's image size is the document's; the
// COCO part is there only for answers with geometry (a caption has no annotations to carry).
QJsonObject answerJson(const ParsedAnswer& answer, const Result& result,
                       const AnswerContext& context);

} // namespace florence
