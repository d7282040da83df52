// Plain values exchanged between the window (GUI thread) and EngineWorker (engine thread) by
// queued signals. Nothing here refers to LibTorch.
//
//   florence::ui::registerWorkerTypes();            // once, before the first connection
//   RunRequest r;
//   r.runId = ++m_lastRunId;
//   r.cancel = std::make_shared<std::atomic<bool>>(false);
//   QMetaObject::invokeMethod(worker, [=] { worker->run(r); }, Qt::QueuedConnection);
#pragma once

#include <florence/engine.h>

#include <QMetaType>
#include <QString>

#include <atomic>
#include <memory>
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
};

// One streamed token. `pass` is 0 for a single run; for a comparison 0 = cached, 1 = uncached.
struct TokenUpdate {
    quint64 runId = 0;
    int pass = 0;
    int step = 0;
    std::string textDelta;
    bool rewound = false; // `text` replaces everything shown so far
    std::string text;     // best hypothesis so far
    double stepMs = 0;
    double elapsedMs = 0; // since the run started (the first one is the time to first token)
    // The stages before decoding (the same in every update of a run; 0 for a skipped stage,
    // e.g. the vision encoder when the image features were reused).
    double preprocessMs = 0;
    double visionMs = 0;
    double textEncoderMs = 0;
};

struct RunOutcome {
    quint64 runId = 0;
    int pass = 0;
    QString task;
    std::string text; // decoded with special tokens kept
    std::vector<int64_t> generatedIds;
    bool cancelled = false;
    bool useCache = true;
    int numBeams = 1;
    int generatedTokens = 0; // decoder start token excluded
    int imageWidth = 0, imageHeight = 0;
    Timings timings;
};

struct CompareOutcome {
    quint64 runId = 0;
    RunOutcome cached;
    RunOutcome uncached;
    bool cancelled = false;
    bool identical = false; // the same generated token ids
};

struct ModelInfo {
    QString dir;
    QString name;   // the manifest's name, e.g. "florence2-tiny (random weights, seed 1234)"
    QString source; // the manifest's account of where the weights came from
    Precision precisionMode = Precision::Float32; // how the weights are run
    QString precision;                            // precisionName(precisionMode)
    qint64 parameterCount = 0;
    int maxPositions = 0;
    double loadMs = 0;
    GenerationOptions defaults;
};

// Registers the types above for queued connections.
void registerWorkerTypes();

// "florence2-tiny (random init) · 12.3 M parameters · float32"
QString describeModel(const ModelInfo& info);

// What kind of weights these are and what answers to expect, from the manifest's name and
// source: a demo model trained on synthetic scenes, random weights, or a real checkpoint.
// Plain text, one or two sentences.
QString explainModelWeights(const ModelInfo& info);
// How to get real answers: importing a Hugging Face checkpoint from the app or the CLI.
QString importCheckpointHint();

} // namespace florence::ui

Q_DECLARE_METATYPE(florence::ui::RunRequest)
Q_DECLARE_METATYPE(florence::ui::TokenUpdate)
Q_DECLARE_METATYPE(florence::ui::RunOutcome)
Q_DECLARE_METATYPE(florence::ui::CompareOutcome)
Q_DECLARE_METATYPE(florence::ui::ModelInfo)
