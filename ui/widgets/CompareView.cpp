#include "widgets/CompareView.h"

#include "presentation/CompareMarks.h"
#include "presentation/CompareVerdict.h"
#include "presentation/StepStats.h"
#include "widgets/ChartStyle.h"
#include "widgets/CumulativeChart.h"

#include <florence/stats.h>

#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QProgressBar>
#include <QScrollArea>
#include <QValueAxis>

#include <algorithm>

namespace florence::ui {

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("compareView"));
    m_chart = new QChart();
    m_chart->setTitle(tr("Run Compare (Ctrl+Shift+R)"));
    setUpLatencyChart(m_chart, m_axisX, m_axisY);
    addCacheSeries(m_chart, m_axisX, m_axisY, m_series);

    auto* stats = new QWidget(this);
    // A grid, not a QFormLayout: in a narrow panel (2x on a 1080p screen) a form gave its
    // wrapped figures one line's height and drew them over each other.
    auto* form = new QGridLayout(stats);
    form->setContentsMargins(0, 0, 0, 0);
    form->setColumnStretch(1, 1);
    const auto addRow = [form, stats](const QString& name, QWidget* field) {
        const int row = form->rowCount();
        if (name.isEmpty()) {
            form->addWidget(field, row, 0, 1, 2);
            return;
        }
        auto* label = new QLabel(name, stats);
        label->setBuddy(field);
        form->addWidget(label, row, 0, Qt::AlignLeft | Qt::AlignTop);
        form->addWidget(field, row, 1);
    };
    // The verdict in one sentence, first and largest; the figures behind it follow.
    m_headline = new QLabel(stats);
    m_headline->setObjectName(QStringLiteral("compareHeadline"));
    m_headline->setWordWrap(true);
    m_headline->setTextFormat(Qt::PlainText);
    m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont headlineFont = m_headline->font();
    headlineFont.setBold(true);
    headlineFont.setPointSizeF(headlineFont.pointSizeF() * 1.15);
    m_headline->setFont(headlineFont);
    for (int i = 0; i < 2; ++i) {
        m_total[i] = new QLabel(QStringLiteral("–"), stats);
        m_total[i]->setObjectName(i == 0 ? QStringLiteral("cachedTotalLabel")
                                         : QStringLiteral("uncachedTotalLabel"));
        m_total[i]->setWordWrap(true);
    }
    m_speedup = new QLabel(QStringLiteral("–"), stats);
    m_speedup->setObjectName(QStringLiteral("speedupLabel"));
    m_verdict = new QLabel(QStringLiteral("–"), stats);
    m_verdict->setObjectName(QStringLiteral("verdictLabel"));
    m_verdict->setWordWrap(true);
    m_verdict->setTextFormat(Qt::PlainText); // engine messages may quote task tokens
    m_speedup->setWordWrap(true);
    m_note = new QLabel(stats);
    m_note->setObjectName(QStringLiteral("compareNoteLabel"));
    m_note->setWordWrap(true);
    m_note->setTextFormat(Qt::PlainText);
    m_marks = new QLabel(QStringLiteral("–"), stats);
    m_marks->setObjectName(QStringLiteral("speedupMarksLabel"));
    m_marks->setWordWrap(true);
    m_firstToken = new QLabel(QStringLiteral("–"), stats);
    m_firstToken->setObjectName(QStringLiteral("compareFirstTokenLabel"));
    m_firstToken->setWordWrap(true);
    m_firstToken->setToolTip(tr("From the start of the run to the first token: the image, the "
                                "prompt and the first decoding step. The cache saves nothing "
                                "before the second token."));
    m_progress = new QProgressBar(stats);
    m_progress->setObjectName(QStringLiteral("compareProgressBar"));
    m_progress->setTextVisible(false);
    m_progress->setMaximumHeight(m_progress->fontMetrics().height() / 2 + 4);
    m_progress->hide();
    // What a reader looks for first comes first: the panel may have to scroll.
    addRow(QString(), m_headline);
    addRow(tr("Speedup:"), m_speedup);
    addRow(tr("Decoding at:"), m_marks);
    addRow(tr("First token:"), m_firstToken);
    addRow(tr("Outputs:"), m_verdict);
    addRow(QString(), m_progress);
    addRow(QString(), m_note);
    addRow(tr("Cache on:"), m_total[0]);
    addRow(tr("Cache off:"), m_total[1]);
    form->setRowStretch(form->rowCount(), 1); // short texts stay at the top
    // The numbers scroll when the panel is short (two charts leave it little room).
    auto* statsScroll = new QScrollArea(this);
    statsScroll->setObjectName(QStringLiteral("compareStatsScroll"));
    statsScroll->setWidget(stats);
    statsScroll->setWidgetResizable(true);
    statsScroll->setFrameShape(QFrame::NoFrame);
    statsScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_view = layOutChartWithStats(this, m_chart, statsScroll, QStringLiteral("compareChartView"));
    // Beside the per-token curves: the time those tokens add up to.
    m_cumulative = new CumulativeChart(this);
    if (auto* row = qobject_cast<QBoxLayout*>(layout())) {
        row->insertWidget(1, m_cumulative, 1);
        // The numbers as wide as a chart when there is room (up to their maximum width).
        row->setStretchFactor(statsScroll, 1);
    }
    applyPalette();
}

void CompareView::startComparison(int expectedTokens) {
    m_cumulative->clear();
    m_passesDone = m_passesTotal = m_passTokens = 0;
    m_runningPass = -1;
    m_expectedTokens = expectedTokens;
    m_progress->setRange(0, 0); // busy until the number of passes is known
    m_progress->show();
    m_marks->setText(QStringLiteral("–"));
    m_firstToken->setText(QStringLiteral("–"));
    for (int i = 0; i < 2; ++i) {
        m_series[i]->clear();
        m_steps[i].clear();
        m_plotted[i] = 0;
        m_finished[i] = false;
        m_total[i]->setText(i == 0 ? tr("running…") : tr("waiting"));
    }
    m_maxMs = 0;
    setNiceRange(m_axisX, 10, true);
    setNiceRange(m_axisY, 10, false);
    m_speedup->setText(QStringLiteral("–"));
    m_verdict->setText(QStringLiteral("–"));
    m_headline->clear();
    m_note->setText(tr("Warming up, then running each pass several times, alternating…"));
    m_chart->setTitle(tr("Step time (running…)"));
}

void CompareView::clear() {
    startComparison();
    for (QLabel* l : {m_total[0], m_total[1], m_speedup, m_verdict})
        l->setText(QStringLiteral("–"));
    m_note->clear();
    m_progress->hide();
    m_chart->setTitle(tr("Run Compare (Ctrl+Shift+R)"));
}

void CompareView::addStep(int pass, int step, double stepMs) {
    if (pass < 0 || pass > 1 || step != static_cast<int>(m_steps[pass].size()))
        return;
    if (pass == 1 && step == 0)
        m_total[1]->setText(tr("running…"));
    m_steps[pass].push_back(stepMs);
    m_maxMs = std::max(m_maxMs, stepMs);
    m_runningPass = pass;
    m_passTokens = step + 1;
}

void CompareView::refresh() {
    int longest = 10;
    for (int i = 0; i < 2; ++i) {
        QList<QPointF> points;
        for (int s = m_plotted[i]; s < static_cast<int>(m_steps[i].size()); ++s)
            points.append(QPointF(s, m_steps[i][static_cast<size_t>(s)]));
        if (!points.isEmpty())
            m_series[i]->append(points);
        m_plotted[i] = static_cast<int>(m_steps[i].size());
        longest = std::max(longest, m_plotted[i]);
        m_cumulative->plot(i, m_steps[i]);
    }
    setNiceRange(m_axisX, longest, true);
    setNiceRange(m_axisY, std::max(1.0, m_maxMs * 1.15), false);
    if (!m_progress->isHidden()) // a comparison is running
        showProgress();
}

void CompareView::setPassFinished(const RunOutcome& outcome) {
    const int pass = outcome.pass;
    if (pass < 0 || pass > 1)
        return;
    // The engine's complete step list replaces what streamed in.
    m_steps[pass] = outcome.result.timings.stepMs;
    // A cancelled pass (a comparison cancelled while queued) has no totals: setOutcome says so.
    m_finished[pass] = !outcome.cancelled();
    m_series[pass]->clear();
    m_plotted[pass] = 0;
    m_cumulative->plot(pass, {});
    for (double v : m_steps[pass])
        m_maxMs = std::max(m_maxMs, v);
    // Without "ignore the end token" the cached pass tells how long the others will be.
    if (m_expectedTokens == 0 && pass == 0 && !outcome.cancelled())
        m_expectedTokens = static_cast<int>(m_steps[pass].size());
    refresh();
    if (!m_finished[pass])
        return;
    const StepStats s = summarizeSteps(outcome.result.timings.stepMs);
    m_total[pass]->setText(tr("%1 total, %2 tokens, median step %3")
                               .arg(formatMs(outcome.result.timings.totalMs))
                               .arg(s.count)
                               .arg(formatMs(s.medianMs)));
}

void CompareView::setOutcome(const CompareOutcome& outcome) {
    m_progress->hide();
    if (outcome.measured.cancelled) {
        m_chart->setTitle(tr("Step time (cancelled)"));
        m_speedup->setText(QStringLiteral("–"));
        m_note->clear();
        const int repeats = outcome.measured.repeats;
        m_verdict->setText(repeats == 0 ? tr("cancelled before both passes finished")
                           : repeats == 1
                               ? tr("cancelled after one run of each pass")
                               : tr("cancelled after %1 runs of each pass").arg(repeats));
        for (int i = 0; i < 2; ++i) {
            const size_t streamed = m_steps[i].size();
            if (m_finished[i]) // the first run's figures: the repeats for a median did not end
                m_total[i]->setText(m_total[i]->text() + tr(" (first run; no median)"));
            else if (streamed > 0) // cancelled in its first run: its curve so far
                m_total[i]->setText(streamed == 1 ? tr("cancelled after 1 token")
                                                  : tr("cancelled after %1 tokens").arg(streamed));
            else
                m_total[i]->setText(i == 0 ? tr("cancelled before its first token")
                                           : tr("not run"));
        }
        return;
    }
    // Short enough for a 1280x720 window; the legend says which curve is which.
    m_chart->setTitle(tr("Step time (medians)"));
    plotMedianSteps(outcome);
    const CompareVerdict v = judgeComparison(outcome);
    m_headline->setText(v.headline);
    const auto totals = [this](const Spread& sp, const RunOutcome& o) {
        const StepStats s = summarizeSteps(o.result.timings.stepMs);
        return tr("median %1 total (%2–%3 over %4 runs), %5 tokens, median step %6")
            .arg(formatMs(sp.medianMs), formatMs(sp.minMs), formatMs(sp.maxMs))
            .arg(sp.count)
            .arg(s.count)
            .arg(formatMs(s.medianMs));
    };
    m_total[0]->setText(totals(v.cached, outcome.cached));
    m_total[1]->setText(totals(v.uncached, outcome.uncached));
    m_speedup->setText(v.speedupText);
    const CompareMarks marks = compareMarks(outcome);
    // Ratios only with a verdict: beside "No verdict" they would read as a result.
    m_marks->setText(!v.conclusive                 ? tr("– (no verdict)")
                     : marks.speedupText.isEmpty() ? QStringLiteral("–")
                                                   : marks.speedupText);
    m_firstToken->setText(marks.firstTokenText.isEmpty() ? QStringLiteral("–")
                                                         : marks.firstTokenText);
    // Fair only when both kinds of pass did the same work before decoding.
    const Timings& ct = outcome.cached.result.timings;
    const Timings& ut = outcome.uncached.result.timings;
    const bool cachedReused = ct.featuresReused, uncachedReused = ut.featuresReused;
    m_note->setText(
        v.conclusion + QLatin1Char('\n') +
        (cachedReused != uncachedReused || ct.promptReused != ut.promptReused
             ? tr("Only one pass used precomputed image features or prompt encoding: the totals "
                  "are not comparable.")
         : ct.promptReused
             ? tr("Both passes used the image features and the prompt's encoding computed "
                  "before Run.")
         : cachedReused ? tr("Both passes used the image features computed before Run.")
                        : tr("Both passes ran the vision encoder (no precomputed features).")));
    m_verdict->setText(outcome.measured.identical
                           ? tr("identical ✔")
                           : tr("different ✘ %1").arg(answerSplitText(outcome.measured)));
}

void CompareView::plotMedianSteps(const CompareOutcome& outcome) {
    // The same basis as the first-token and speedup texts: each step's median over the
    // repeats, not one repeat that a busy spell may have slowed.
    const std::array<const std::vector<std::vector<double>>*, 2> repeats = {
        &outcome.measured.cached.stepMs, &outcome.measured.uncached.stepMs};
    for (size_t pass = 0; pass < 2; ++pass) {
        if (repeats[pass]->empty())
            continue;
        std::vector<double> medians;
        for (size_t s = 0;; ++s) {
            std::vector<double> at;
            for (const std::vector<double>& steps : *repeats[pass])
                if (s < steps.size())
                    at.push_back(steps[s]);
            if (at.size() * 2 <= repeats[pass]->size())
                break; // most repeats ended here
            medians.push_back(median(at));
        }
        m_steps[pass] = medians;
        m_series[pass]->clear();
        m_plotted[pass] = 0;
        m_cumulative->plot(static_cast<int>(pass), {});
    }
    m_maxMs = 0;
    for (const auto& steps : m_steps)
        for (double v : steps)
            m_maxMs = std::max(m_maxMs, v);
    refresh();
}

void CompareView::setProgress(int done, int total) {
    m_passesDone = done;
    m_passesTotal = total;
    m_runningPass = -1;
    m_passTokens = 0;
    showProgress();
}

void CompareView::setPassTokens(int pass, int tokens) {
    m_runningPass = pass;
    m_passTokens = tokens;
    showProgress();
}

void CompareView::showProgress() {
    if (m_passesTotal <= 0)
        return; // still warming up
    constexpr int kPerPass = 100;
    const int tokenShare = m_runningPass >= 0 && m_expectedTokens > 0
                               ? std::min(kPerPass, kPerPass * m_passTokens / m_expectedTokens)
                               : 0;
    m_progress->setRange(0, m_passesTotal * kPerPass);
    m_progress->setValue(std::min(m_passesTotal * kPerPass, m_passesDone * kPerPass + tokenShare));
    const int current = std::min(m_passesDone + 1, m_passesTotal);
    if (m_runningPass < 0) {
        m_note->setText(tr("Pass %1 of %2 (a warm-up, then cache on and off alternating)…")
                            .arg(current)
                            .arg(m_passesTotal));
        return;
    }
    const QString kind = m_runningPass == 0 ? tr("cache on") : tr("cache off");
    const QString tokens = m_expectedTokens > 0 ? tr("%1 of %2 tokens")
                                                      .arg(std::min(m_passTokens, m_expectedTokens))
                                                      .arg(m_expectedTokens)
                                                : tr("%1 tokens").arg(m_passTokens);
    m_note->setText(
        tr("Pass %1 of %2 (%3): %4…").arg(current).arg(m_passesTotal).arg(kind, tokens));
}

void CompareView::setFailed(const QString& message) {
    m_progress->hide();
    m_headline->clear();
    m_chart->setTitle(tr("Step time (failed)"));
    m_verdict->setText(message);
}

QString CompareView::verdict() const {
    return m_verdict->text();
}

QString CompareView::headline() const {
    return m_headline->text();
}

void CompareView::applyPalette() {
    applyChartPalette(m_chart, palette());
    styleCacheSeries(m_series);
}

void CompareView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange)
        applyPalette();
    QWidget::changeEvent(event);
}

} // namespace florence::ui
