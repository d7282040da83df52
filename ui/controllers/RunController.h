// The run in flight and the answer it produces, without widgets: each run gets an id and its
// own cancel flag, tokens and results of a replaced run are dropped by id, the previous answer
// stays until the new run has produced something, and the answer is parsed as tokens arrive
// (a box exists as soon as its fourth location token has).
//
//   RunController runs;
//   RunRequest r = runs.start(RunKind::Single, "<OD>", prompt, image, "pier.png", options);
//   QMetaObject::invokeMethod(worker, [=] { worker->run(r); }, Qt::QueuedConnection);
//   // for each TokenUpdate u the worker emits:
//   if (runs.acceptToken(u) == RunController::Accepted::Stale) return;
//   show(runs.answer());
//   // when the worker reports the end: runs.acceptOutcome(o); ...; runs.finish();
#pragma once

#include "controllers/WorkerTypes.h"

#include <florence/answer.h>

#include <QString>

#include <atomic>
#include <memory>
#include <optional>
#include <string>

namespace florence::ui {

class RunController {
public:
    enum class Accepted {
        Stale,      // from a run that was replaced, cancelled or finished: ignore it
        FirstOfRun, // the run's first result: the previous answer was just dropped
        Next,       // more of the run in flight
    };

    // Starts a run, stopping the one in flight (it ends at its next step; what it still sends is
    // stale). Returns the request for the worker.
    RunRequest start(RunKind kind, const QString& task, std::string prompt,
                     std::shared_ptr<const RgbImage> image, const QString& imageName,
                     GenerationOptions options, std::optional<Box> askedRegion = std::nullopt);
    // Asks the run in flight to stop at its next step; it still reports its end.
    void cancel();
    // The run in flight has ended (finished, cancelled or failed); later reports are stale.
    void finish();

    bool isRunning() const { return m_activeRunId != 0; }
    // The engine has taken the run in flight up (runStarted); before that it waits in the
    // engine's queue, behind a model's loading or measuring.
    void markStarted() { m_started = true; }
    bool hasStarted() const { return m_started; }
    quint64 activeRunId() const { return m_activeRunId; }
    bool isActive(quint64 runId) const { return runId != 0 && runId == m_activeRunId; }
    RunKind kind() const { return m_kind; }
    QString task() const { return m_task; }
    int tokensReceived() const { return m_tokensReceived; }

    Accepted acceptToken(const TokenUpdate& update);
    // A finished pass. The final text of pass 0 replaces the streamed one; a run cancelled
    // before its first token leaves the previous answer in place (resultsStarted() stays false).
    Accepted acceptOutcome(const RunOutcome& outcome);
    // Whether the run in flight has replaced the previous answer yet.
    bool resultsStarted() const { return m_resultsStarted; }

    // Drops the answer (a new image was opened).
    void clearAnswer();
    // Shows an answer recorded earlier (History) as if its run had just finished on `image`.
    void showRecorded(const QString& task, const std::string& text, const ParsedAnswer& answer,
                      std::shared_ptr<const RgbImage> image, const QString& imageName,
                      const std::optional<Box>& askedRegion);
    // The parser's answer (exports) and what a person reads (table, overlay, copied text).
    const ParsedAnswer& answer() const { return m_answer; }
    const ParsedAnswer& shownAnswer() const { return m_shown; }
    const std::string& answerText() const { return m_answerText; }
    bool hasAnswer() const { return !m_answerText.empty(); }
    QString answerTask() const { return m_answerTask; }
    // The image the shown answer belongs to (not necessarily the one on screen).
    const std::shared_ptr<const RgbImage>& answerImage() const { return m_answerImage; }
    QString answerImageName() const { return m_answerImageName; }
    // The engine's result of the shown answer's pass (ids, scores, timings) once it has ended;
    // until then its text alone. The prompt and options of the run that produced it.
    const Result& answerResult() const { return m_answerResult; }
    const std::string& answerPrompt() const { return m_answerPrompt; }
    const GenerationOptions& answerOptions() const { return m_answerOptions; }
    // The region the shown answer's run asked about (region tasks).
    const std::optional<Box>& answerAskedRegion() const { return m_answerAskedRegion; }

    // The prompt and options of the last request started.
    const std::string& lastPrompt() const { return m_lastPrompt; }
    const GenerationOptions& lastOptions() const { return m_lastOptions; }

private:
    void beginResults();
    // `scored`: the worker's answer with confidence scores (a finished pass), else parsed here.
    void setAnswerText(const std::string& text, const ParsedAnswer* scored = nullptr);

    quint64 m_lastRunId = 0;
    quint64 m_activeRunId = 0;
    RunKind m_kind = RunKind::Single;
    QString m_task;
    std::shared_ptr<const RgbImage> m_image; // of the run in flight
    QString m_imageName;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    bool m_resultsStarted = false;
    bool m_started = false; // markStarted()
    int m_tokensReceived = 0;
    std::string m_lastPrompt;
    GenerationOptions m_lastOptions;

    std::shared_ptr<const RgbImage> m_answerImage;
    QString m_answerImageName;
    QString m_answerTask;
    std::string m_answerText;
    Result m_answerResult;
    std::string m_answerPrompt;
    GenerationOptions m_answerOptions;
    ParsedAnswer m_answer;
    ParsedAnswer m_shown;
    std::optional<Box> m_askedRegion;       // of the run in flight
    std::optional<Box> m_answerAskedRegion; // of the answer shown
};

} // namespace florence::ui
