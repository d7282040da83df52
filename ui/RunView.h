// How a run shows in the window: the streamed answer in the results panel and on the image,
// the live latency or the comparison chart, and the run's line in the status bar. It takes the
// worker's reports, lets RunController drop stale ones, and redraws at most every 40 ms.
//
//   RunView view(&runController, {results, imageView, latency, compare, tabs, statusLabel});
//   connect(worker, &EngineWorker::tokenReady, &view, &RunView::onToken);
//   runController.start(...); view.started(RunKind::Single, "<OD>", tr("Reading the image…"));
//   connect(&view, &RunView::runCompleted, ...);
#pragma once

#include "controllers/WorkerTypes.h"

#include <QElapsedTimer>
#include <QObject>

class QLabel;
class QTabWidget;
class QTimer;

namespace florence::ui {

class CompareView;
class EngineWorker;
class ImageView;
class LatencyChart;
class ResultsPanel;
class RunController;

class RunView : public QObject {
    Q_OBJECT

public:
    struct Widgets {
        ResultsPanel* results = nullptr;
        ImageView* image = nullptr;
        LatencyChart* latency = nullptr;
        CompareView* compare = nullptr;
        QTabWidget* tabs = nullptr; // holds latency and compare
        QLabel* status = nullptr;
    };

    RunView(RunController* run, const Widgets& widgets, QObject* parent = nullptr);

    // Takes `worker`'s reports (queued: the worker lives on the engine thread).
    void follow(EngineWorker* worker);

    // A run was just started with RunController::start. Until its first token the answer on
    // screen is the previous one and `phase` says what the model does ("Reading the image…").
    // `encoding`: the encoders started on opening the image were still running, so the run
    // waits for them and its first token counts from now, not from the engine's start.
    void started(RunKind kind, const QString& task, const QString& phase, bool encoding = false);
    // What the model does now, while the run has no token yet (nothing once it has).
    void setPhase(const QString& phase);
    bool awaitingFirstToken() const;
    // Cancel pressed: a run the engine has not taken up yet (queued behind a model's loading)
    // ends at once; one it runs ends at its next step, when the engine reports it.
    void cancelling();
    // Ends the run in flight from the window's side (e.g. another image was opened).
    void end(const QString& status, bool cancelled);
    // Nothing of the previous image's answer, charts or status stays.
    void clear();
    // A model is loading (true) or ended its load (false). With no run in flight the run's line
    // says so rather than "Idle" or the last run's end; after the load it shows that again.
    void showModelLoading(bool loading);

    void onRunStarted(quint64 runId);
    void onToken(const florence::ui::TokenUpdate& update);
    void onRunFinished(const florence::ui::RunOutcome& outcome);
    void onCompareProgress(quint64 runId, int done, int total);
    void onCompareTokens(quint64 runId, int pass, int tokens);
    void onCompareFinished(const florence::ui::CompareOutcome& outcome);
    void onRunFailed(quint64 runId, const QString& message);
    // Pushes what arrived since the last redraw into the widgets.
    void refresh();
    // Items scored below `score` leave the table and the overlay (the exports ask minScore()).
    void setMinScore(double score);
    double minScore() const { return m_minScore; }
    // Shows the answer RunController::showRecorded holds, with its run's latency, as a
    // finished run; `status` replaces the run's line.
    // `waitedMs`: how long Run waited for encoders started before it (LatencyChart).
    void showRecorded(const Timings& timings, double waitedMs, const QString& status);

signals:
    void tokenArrived(quint64 runId, int step);
    // A single run ended (finished or cancelled).
    void runCompleted(bool cancelled);
    void comparisonCompleted(bool identical);
    void runErrored(const QString& message);
    // Any run ended, whichever way: the window updates its actions.
    void runEnded();
    // A single run finished (not cancelled) with an answer: the history records it.
    void runAnswered(const florence::ui::RunOutcome& outcome);

private:
    void clearResultViews();
    void showFinalAnswer();
    // The answer as the widgets show it: clean labels, items below the minimum score hidden.
    ParsedAnswer visibleAnswer() const;
    void finish(const QString& status);
    // The run's line: `text`, or "Waiting for the model" while one loads and nothing runs.
    void setStatus(const QString& text);
    void showStatus();

    RunController* m_run;
    Widgets m_w;
    QTimer* m_refreshTimer = nullptr;
    bool m_dirty = false; // the answer changed since the widgets last showed it
    double m_minScore = 0;
    QString m_task; // the task token of the run in flight
    QElapsedTimer m_sinceStart; // since started()
    bool m_waitsForEncoders = false;
    double m_waitedMs = 0; // from started() to the engine's start, when it waited for encoders
    bool m_modelLoading = false; // a model is loading
    QString m_status;            // the run's line, shown unless a model loads with no run
};

} // namespace florence::ui
