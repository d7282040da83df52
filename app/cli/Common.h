// What the CLI's commands that run a model share: the model folder, the precision, the answer
// document of one image, and the Ctrl+C flag.
#pragma once

#include "Args.h"

#include <florence/answer.h>
#include <florence/batch.h>
#include <florence/engine.h>
#include <florence/generation_settings.h>
#include <florence/image.h>

#include <QJsonObject>

#include <atomic>
#include <memory>
#include <optional>
#include <string>

namespace florence::cli {

// Set by SIGINT once installCancelHandler() ran; runs stop at their next step.
extern std::atomic<bool> g_cancel;
void installCancelHandler();

// --model, else the bundled model; UsageError when there is neither.
std::string modelDir(const Args& a);
// --threads: 0 (every core) when absent; UsageError when zero or negative; more than the
// usable cores is clamped to them with a note on stderr.
int threadsOption(const Args& a);
// What --beams, --max-new-tokens, --no-cache, --ignore-eos and --precision change from the
// package's defaults (nothing else: the CLI and the app answer alike with the same settings).
// --precision auto (or unset, unless $FLORENCE_PRECISION names one) leaves the precision
// unset: Automatic. UsageError for an unknown precision.
florence::GenerationSettings generationSettings(const Args& a);
// Checks --beams, --max-new-tokens, --precision and --threads (UsageError), before an image is
// decoded or a model loaded: a wrong number is the first thing said.
void checkRunNumbers(const Args& a);
// --region X1,Y1,X2,Y2 in pixels; UsageError naming the option when it is not four numbers.
florence::Box regionOption(const Args& a);
// A note on stderr when the --region of `task` reaches past the image `name` (w x h): the model
// is asked about the part inside it, and the note gives that part in pixels.
void noteClippedRegion(const florence::TaskRequest& task, const std::string& name, int width,
                       int height);
// That note's line ("" when there is none to give).
std::string clippedRegionNote(const florence::TaskRequest& task, const std::string& name, int width,
                              int height);
// The task named by --task; UsageError listing the known ones when there is none such.
const florence::TaskInfo& taskOption(const std::string& token);
// The task of --task (default <CAPTION>) with --text, or the free prompt of --prompt, checked:
// the package's own tasks are known first (its manifest is read, the model not loaded), so an
// unknown task fails before anything loads. The region is the caller's.
florence::TaskRequest taskRequest(const Args& a);
// The model of modelDir() with --threads and --precision; with auto (the default) in the
// precision automaticPrecision() picks for this CPU and package (<florence/auto_precision.h>),
// said on stderr.
std::shared_ptr<const florence::Model> loadModel(const Args& a);
// The model's generation defaults with generationSettings() applied.
florence::GenerationOptions runOptions(const Args& a, const florence::Model& model);
// The answer document (<florence/answer_json.h>) of one image's run.
QJsonObject resultJson(const std::string& imageFile, const std::string& prompt,
                       const florence::Result& r, const florence::ParsedAnswer& answer,
                       const florence::GenerationOptions& opts, const florence::Model& model,
                       std::optional<bool> orientationApplied = std::nullopt);
// --no-exif-rotate: the pixels as stored, as Florence-2's Python processor sees them.
florence::DecodeOptions decodeOptions(const Args& a);

// The --jsonl line of an image without an answer: {"image": {"file": …}, "error": "…"}.
QJsonObject failureJson(const florence::ImageOutcome& outcome);
// One compact JSON line, newline included.
std::string jsonLine(const QJsonObject& o);

// Flushes standard output; throws florence::Error ("cannot write to standard output (No space
// left on device)") when anything written to it so far was lost, so a full disk or a closed
// pipe is an exit code, not a silently short answer.
void flushStdout();

} // namespace florence::cli
