#include "RunView.h"

#include "controllers/EngineWorker.h"
#include "controllers/RunController.h"
#include "presentation/AnswerDisplay.h"
#include "presentation/Scores.h"
#include "presentation/StepStats.h"
#include "widgets/ChartStyle.h"
#include "widgets/CompareView.h"
#include "widgets/ImageView.h"
#include "widgets/LatencyChart.h"
#include "widgets/ResultsPanel.h"
#include "widgets/ScoreControls.h"

#include <QLabel>
#include <QTabWidget>
#include <QTimer>

namespace florence::ui {

namespace {

// Streamed tokens are parsed as they arrive, but the widgets are redrawn at most this often:
// a tiny model produces hundreds of tokens a second and repainting for each would make the
// window sluggish while it generates.
constexpr int kRefreshMs = 40;

} // namespace

RunView::RunView(RunController* run, const Widgets& widgets, QObject* parent)
    : QObject(parent), m_run(run), m_w(widgets) {
    m_status = m_w.status->text(); // "Idle"
    m_refreshTimer = new QTimer(this);
    m_refreshTimer->setInterval(kRefreshMs);
    connect(m_refreshTimer, &QTimer::timeout, this, &RunView::refresh);
    ScoreControls* scores = m_w.results->scoreControls();
    connect(scores, &ScoreControls::minScoreChanged, this, &RunView::setMinScore);
    connect(scores, &ScoreControls::showScoresChanged, m_w.image, &ImageView::setShowScores);
    m_w.image->setShowScores(scores->showScores());
    m_minScore = scores->minScore();
}

ParsedAnswer RunView::visibleAnswer() const {
    return withMinScore(m_run->shownAnswer(), m_minScore);
}

void RunView::setMinScore(double score) {
    if (score == m_minScore)
        return;
    m_minScore = score;
    if (m_run->isRunning()) {
        m_dirty = true; // the next refresh applies it
        return;
    }
    if (m_run->hasAnswer()) {
        const ParsedAnswer shown = visibleAnswer();
        m_w.results->setAnswer(shown);
        m_w.image->setAnswer(shown);
    }
}

void RunView::showRecorded(const Timings& timings, double waitedMs, const QString& status) {
    m_refreshTimer->stop();
    m_w.compare->clear();
    m_w.tabs->setCurrentWidget(m_w.latency);
    m_w.latency->startRun();
    m_w.latency->setWaitedForEncoders(waitedMs);
    m_w.latency->finishRun(timings, false);
    showFinalAnswer();
    m_w.results->setSummary(tr("%1 · %2 · %3 · from the history")
                                .arg(taskDisplayName(m_run->answerTask()),
                                     itemCountText(m_run->shownAnswer()),
                                     formatMs(timings.totalMs + waitedMs)));
    setStatus(status);
}

void RunView::follow(EngineWorker* w) {
    connect(w, &EngineWorker::runStarted, this, &RunView::onRunStarted);
    connect(w, &EngineWorker::tokenReady, this, &RunView::onToken);
    connect(w, &EngineWorker::runFinished, this, &RunView::onRunFinished);
    connect(w, &EngineWorker::compareFinished, this, &RunView::onCompareFinished);
    connect(w, &EngineWorker::compareProgress, this, &RunView::onCompareProgress);
    connect(w, &EngineWorker::compareTokens, this, &RunView::onCompareTokens);
    connect(w, &EngineWorker::runFailed, this, &RunView::onRunFailed);
}

void RunView::started(RunKind kind, const QString& task, const QString& phase, bool encoding) {
    m_sinceStart.start();
    m_waitsForEncoders = encoding && kind == RunKind::Single;
    m_waitedMs = 0;
    if (kind == RunKind::Compare) {
        const GenerationOptions& o = m_run->lastOptions();
        m_w.compare->startComparison(o.ignoreEos ? o.maxNewTokens : 0);
        m_w.tabs->setCurrentWidget(m_w.compare);
    } else {
        m_w.tabs->setCurrentWidget(m_w.latency);
    }
    m_task = task;
    m_w.results->showPending(phase);
    setStatus(kind == RunKind::Compare ? tr("Comparing: %1").arg(phase)
                                       : tr("%1: %2").arg(taskDisplayName(task), phase));
    m_refreshTimer->start();
}

bool RunView::awaitingFirstToken() const {
    return m_run->isRunning() && !m_run->resultsStarted();
}

void RunView::setPhase(const QString& phase) {
    if (!awaitingFirstToken())
        return;
    m_w.results->showPending(phase);
    if (m_run->kind() == RunKind::Single)
        setStatus(tr("%1: %2").arg(taskDisplayName(m_task), phase));
}

void RunView::cancelling() {
    if (!m_run->hasStarted()) {
        // Still queued behind a model's loading (Automatic precision measuring can take a
        // minute): ended now, as the engine will report it when it gets there (stale by then).
        const CancelledBeforeStart c =
            cancelledBeforeStart(m_run->activeRunId(), m_run->kind(), m_run->task());
        onRunFinished(c.run);
        if (c.compare)
            onCompareFinished(*c.compare);
        return;
    }
    setStatus(tr("Cancelling…"));
}

void RunView::clear() {
    m_w.results->clear();
    m_w.latency->clear();
    m_w.compare->clear();
    setStatus(tr("Idle"));
}

void RunView::showModelLoading(bool loading) {
    m_modelLoading = loading;
    showStatus();
}

void RunView::setStatus(const QString& text) {
    m_status = text;
    showStatus();
}

void RunView::showStatus() {
    // A run queued behind the load says what it waits for itself.
    m_w.status->setText(m_modelLoading && !m_run->isRunning() ? tr("Waiting for the model")
                                                              : m_status);
}

void RunView::finish(const QString& status) {
    m_refreshTimer->stop();
    // Ended before its first token: the previous answer stands, saying so.
    m_w.results->endPending(status);
    m_run->finish();
    setStatus(status);
    emit runEnded();
}

void RunView::end(const QString& status, bool cancelled) {
    const RunKind kind = m_run->kind();
    finish(status);
    // A comparison reports its end with comparisonCompleted (whether the outputs matched).
    if (kind == RunKind::Single)
        emit runCompleted(cancelled);
}

void RunView::onRunStarted(quint64 runId) {
    if (!m_run->isActive(runId))
        return;
    m_run->markStarted();
    if (m_waitsForEncoders) // the engine ran the encoders' rest first: part of this run's wait
        m_waitedMs = double(m_sinceStart.nsecsElapsed()) / 1e6;
    // A single run keeps the phase started() or setPhase() gave.
    if (m_run->kind() == RunKind::Compare)
        setStatus(tr("Comparing: warming up…"));
}

void RunView::clearResultViews() {
    m_w.results->clear();
    m_w.image->clearAnswer();
    if (m_run->kind() == RunKind::Single)
        m_w.latency->startRun();
}

void RunView::onToken(const TokenUpdate& u) {
    const RunController::Accepted accepted = m_run->acceptToken(u);
    if (accepted == RunController::Accepted::Stale)
        return;
    if (accepted == RunController::Accepted::FirstOfRun) {
        clearResultViews();
        if (m_run->kind() == RunKind::Single)
            m_w.latency->setWaitedForEncoders(m_waitedMs);
    }
    const TokenEvent& e = u.event;
    if (m_run->kind() == RunKind::Single) {
        m_w.latency->addStep(e.step, e.stepMs, u.elapsedMs);
        m_w.latency->setStages(e.preprocessMs, e.visionMs, e.textEncoderMs);
    } else {
        m_w.compare->addStep(u.pass, e.step, e.stepMs);
        setStatus(u.pass == 0 ? tr("Comparing: KV cache on… %1 tokens").arg(e.step + 1)
                              : tr("Comparing: KV cache off… %1 tokens").arg(e.step + 1));
    }
    m_dirty = true;
    emit tokenArrived(u.runId, e.step);
}

void RunView::refresh() {
    if (!m_dirty)
        return;
    m_dirty = false;
    const ParsedAnswer shown = visibleAnswer();
    m_w.results->setRawText(m_run->answerText());
    m_w.results->setAnswer(shown);
    if (m_w.image->overlayItemCount() != static_cast<int>(shown.items.size()) ||
        shown.type == AnswerType::Polygons ||
        shown.type == AnswerType::DescriptionWithBboxesOrPolygons)
        m_w.image->setAnswer(shown); // polygons grow point by point, boxes only in whole
    m_w.latency->refresh();
    m_w.compare->refresh();
    if (m_run->isRunning() && m_run->kind() == RunKind::Single)
        setStatus(tr("Generating… %1 decoding steps").arg(m_run->tokensReceived()));
    // A label streams in before its box: "no items, text only" would flicker until it comes.
    const ParsedAnswer& sofar = m_run->shownAnswer();
    const QString count = sofar.type != AnswerType::PureText && sofar.items.empty()
                              ? tr("no items yet")
                              : itemCountText(sofar);
    m_w.results->setSummary(
        tr("%1 · generating… · %2").arg(taskDisplayName(m_run->answerTask()), count));
}

void RunView::showFinalAnswer() {
    m_w.results->setRawText(m_run->answerText());
    const ParsedAnswer shown = visibleAnswer();
    m_w.results->setAnswer(shown);
    m_w.image->setAnswer(shown);
    m_dirty = false;
}

void RunView::onRunFinished(const RunOutcome& o) {
    const RunController::Accepted accepted = m_run->acceptOutcome(o);
    if (accepted == RunController::Accepted::Stale)
        return;
    if (accepted == RunController::Accepted::FirstOfRun)
        clearResultViews();
    if (m_run->resultsStarted() && o.pass == 0)
        showFinalAnswer();
    if (m_run->kind() == RunKind::Compare) {
        m_w.compare->setPassFinished(o);
        return; // compareFinished ends the run
    }
    if (!m_run->resultsStarted()) {
        // Cancelled before the first token (still queued, or between the engine's stages):
        // what was shown before stays.
        end(tr("Cancelled before the first token"), true);
        return;
    }
    const Timings& t = o.result.timings;
    const double totalMs = t.totalMs + m_waitedMs; // from Run, as the chart's first token
    m_w.latency->finishRun(t, o.cancelled());
    const StepStats s = summarizeSteps(t.stepMs);
    // "answer tokens" (the returned sequence) against the chart's "decoding steps".
    // An answer cut at the token limit says so next to its length, which a narrow panel keeps
    // in view where it cuts the end of the line.
    const QString tokens = o.result.reachedTokenLimit
                               ? tr("%1 answer tokens, cut at the limit").arg(o.generatedTokens())
                               : tr("%1 answer tokens").arg(o.generatedTokens());
    const QString summary = tr("%1 · %2 · %3 · %4")
                                .arg(taskDisplayName(o.task), tokens,
                                     itemCountText(m_run->shownAnswer()), formatMs(totalMs));
    m_w.results->setSummary(o.cancelled() ? summary + tr(" · cancelled") : summary);
    if (!o.cancelled())
        emit runAnswered(o);
    end(o.cancelled()
            ? tr("Cancelled after %1 decoding steps").arg(s.count)
            : tr("Done: %1 answer tokens in %2").arg(o.generatedTokens()).arg(formatMs(totalMs)),
        o.cancelled());
}

void RunView::onCompareProgress(quint64 runId, int done, int total) {
    if (m_run->isActive(runId))
        m_w.compare->setProgress(done, total);
}

void RunView::onCompareTokens(quint64 runId, int pass, int tokens) {
    if (m_run->isActive(runId))
        m_w.compare->setPassTokens(pass, tokens);
}

void RunView::onCompareFinished(const CompareOutcome& o) {
    if (!m_run->isActive(o.runId))
        return;
    m_w.compare->setOutcome(o);
    if (m_run->resultsStarted())
        m_w.results->setSummary(
            o.measured.cancelled
                ? tr("%1 · comparison cancelled").arg(taskDisplayName(o.cached.task))
                : tr("%1 · compared cached vs uncached").arg(taskDisplayName(o.cached.task)));
    finish(o.measured.cancelled
               ? tr("Comparison cancelled")
               : tr("Compared: outputs %1; see Cached vs uncached")
                     .arg(o.measured.identical ? tr("identical") : tr("different")));
    emit comparisonCompleted(o.measured.identical);
}

void RunView::onRunFailed(quint64 runId, const QString& message) {
    if (!m_run->isActive(runId))
        return;
    if (m_run->kind() == RunKind::Compare)
        m_w.compare->setFailed(message);
    finish(tr("Failed"));
    emit runErrored(message);
}

} // namespace florence::ui
