// Plain values exchanged between the window (GUI thread) and EngineWorker (engine thread) by
// queued signals. Nothing here refers to LibTorch.
//
//   florence::ui::registerWorkerTypes();            // once, before the first connection
//   RunRequest r;
//   r.runId = ++m_lastRunId;
//   r.cancel = std::make_shared<std::atomic<bool>>(false);
//   QMetaObject::invokeMethod(worker, [=] { worker->run(r); }, Qt::QueuedConnection);
#pragma once

#include <florence/answer.h>
#include <florence/auto_precision.h>
#include <florence/compare_job.h>
#include <florence/describe_run.h>
#include <florence/engine.h>
#include <florence/package.h>

#include <QMetaType>
#include <QString>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace florence::ui {

// What is run: one request, or the same request with and without the key/value cache.
enum class RunKind { Single, Compare };

struct RunRequest {
    quint64 runId = 0;
    RunKind kind = RunKind::Single;
    QString task;                          // task token, e.g. "<OD>"
    std::string prompt;                    // built on the GUI thread by buildPrompt()
    std::shared_ptr<const RgbImage> image; // shared, never copied per run
    GenerationOptions options;
    // Set by the GUI thread to stop this run; each run has its own flag so cancelling an old run
    // can never stop the one queued after it.
    std::shared_ptr<std::atomic<bool>> cancel;
    // RunKind::Compare: measured passes of each kind, alternating, after an optional warm-up.
    int compareRepeats = 3;
    bool compareWarmup = true;
};

// The vision encoder run ahead of Run on the image just opened ("encode on open").
struct EncodeRequest {
    quint64 imageId = 0; // the window's count of images shown
    std::shared_ptr<const RgbImage> image;
    std::string prompt; // the chosen task's prompt, encoded ahead too; empty: the image alone
    // Set by the GUI thread when a newer image (or model) makes this encode pointless; it stops
    // the encoders mid-pass.
    std::shared_ptr<std::atomic<bool>> cancel;
    // Set by the GUI thread when a newer prompt for the same image makes only the prompt's part
    // pointless: the vision encoder's pass goes on, its features are what the newer request
    // needs.
    std::shared_ptr<std::atomic<bool>> skipPrompt;
};

struct EncodeOutcome {
    quint64 imageId = 0;
    ImageEncoding encoding; // encoding.cancelled: skipped for a newer image or model
    QString error;          // non-empty when the encoder failed (the run will say so again)
};

// One streamed token: the engine's TokenEvent as it was reported, plus which run and pass it
// belongs to. `pass` is 0 for a single run; for a comparison 0 = cached, 1 = uncached.
struct TokenUpdate {
    quint64 runId = 0;
    int pass = 0;
    TokenEvent event;
    double elapsedMs = 0; // since the run started (the first one is the time to first token)
};

// One finished pass: the engine's Result and what the request asked for.
struct RunOutcome {
    quint64 runId = 0;
    int pass = 0;
    QString task;
    Result result; // result.text is decoded with special tokens kept
    // The answer parsed from the generated tokens, with the confidence scores of
    // result.tokenLogprobs (florence::parseResult); unset when the run produced nothing.
    std::optional<ParsedAnswer> scored;
    bool useCache = true;
    int numBeams = 1;
    int imageWidth = 0, imageHeight = 0;

    bool cancelled() const { return result.cancelled; }
    // Decoder start token excluded.
    int generatedTokens() const {
        return result.generatedIds.empty() ? 0 : static_cast<int>(result.generatedIds.size()) - 1;
    }
};

// A comparison (florence::CompareJob): the first measured pass of each kind as the window
// showed it, and what the job measured.
struct CompareOutcome {
    quint64 runId = 0;
    RunOutcome cached;
    RunOutcome uncached;
    // Every repeat's timings, whether it was cancelled and whether the answers were the same.
    CompareResult measured;
};

// How a run cancelled before the engine took it up ends: its outcome, and a comparison's too
// (the window ends a comparison on its CompareOutcome only).
struct CancelledBeforeStart {
    RunOutcome run;
    std::optional<CompareOutcome> compare;
};
CancelledBeforeStart cancelledBeforeStart(quint64 runId, RunKind kind, const QString& task);

// A loaded model: its package manifest and how this process runs it.
struct ModelInfo {
    QString dir;
    Manifest manifest;
    Precision precisionMode = Precision::Float32; // how the weights are run (not how stored)
    // How the encoders run (float32 where this CPU's bfloat16 products are inaccurate), and the
    // engine's sentence saying so (Model::precisionNote); empty when all runs in precisionMode.
    Precision encoderPrecision = Precision::Float32;
    QString precisionNote;
    // The precision was picked by Automatic (<florence/auto_precision.h>): its sentence, and
    // what each mode costs on this CPU as measured for this package.
    bool automatic = false;
    QString automaticReason;
    std::vector<PrecisionOption> precisionOptions;
    double loadMs = 0;
    GenerationOptions defaults;

    // The manifest's name, e.g. "florence2-tiny (random weights, seed 1234)".
    QString name() const { return QString::fromStdString(manifest.name); }
    // The manifest's account of where the weights came from.
    QString source() const { return QString::fromStdString(manifest.source); }
    QString precision() const { return QString::fromLatin1(precisionName(precisionMode)); }
    // What an answer document says of this model (describeRun).
    ModelFacts facts() const;
};

// Registers the types above for queued connections.
void registerWorkerTypes();

} // namespace florence::ui

Q_DECLARE_METATYPE(florence::ui::RunRequest)
Q_DECLARE_METATYPE(florence::ui::EncodeRequest)
Q_DECLARE_METATYPE(florence::ui::EncodeOutcome)
Q_DECLARE_METATYPE(florence::ui::TokenUpdate)
Q_DECLARE_METATYPE(florence::ui::RunOutcome)
Q_DECLARE_METATYPE(florence::ui::CompareOutcome)
Q_DECLARE_METATYPE(florence::ui::ModelInfo)
