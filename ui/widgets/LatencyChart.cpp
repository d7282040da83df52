#include "widgets/LatencyChart.h"

#include "presentation/StepStats.h"
#include "widgets/ChartStyle.h"

#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QValueAxis>

#include <algorithm>

namespace florence::ui {

namespace {

QLabel* valueLabel(const QString& name, QWidget* parent) {
    auto* l = new QLabel(QStringLiteral("–"), parent);
    l->setObjectName(name);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return l;
}

} // namespace

LatencyChart::LatencyChart(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("latencyChart"));
    m_chart = new QChart();
    m_chart->legend()->hide();
    setUpLatencyChart(m_chart, m_axisX, m_axisY);
    m_series = new QLineSeries();
    m_series->setName(tr("Step latency"));
    m_chart->addSeries(m_series);
    m_series->attachAxis(m_axisX);
    m_series->attachAxis(m_axisY);

    auto* stats = new QWidget(this);
    auto* form = new QFormLayout(stats);
    form->setContentsMargins(0, 0, 0, 0);
    m_ttft = valueLabel(QStringLiteral("ttftLabel"), stats);
    m_preprocess = valueLabel(QStringLiteral("preprocessLabel"), stats);
    m_vision = valueLabel(QStringLiteral("visionLabel"), stats);
    m_textEncoder = valueLabel(QStringLiteral("textEncoderLabel"), stats);
    m_tps = valueLabel(QStringLiteral("tpsLabel"), stats);
    m_median = valueLabel(QStringLiteral("medianLabel"), stats);
    m_p95 = valueLabel(QStringLiteral("p95Label"), stats);
    m_total = valueLabel(QStringLiteral("totalLabel"), stats);
    m_tokens = valueLabel(QStringLiteral("tokensLabel"), stats);
    form->addRow(tr("First token:"), m_ttft);
    // The stages are known from the first token on (the engine reports them with every token).
    form->addRow(tr("  preprocessing:"), m_preprocess);
    form->addRow(tr("  vision encoder:"), m_vision);
    form->addRow(tr("  text encoder:"), m_textEncoder);
    form->addRow(tr("Tokens/s:"), m_tps);
    form->addRow(tr("Median step:"), m_median);
    form->addRow(tr("p95 step:"), m_p95);
    // Beam search takes one step per generated position; the answer's length can differ (the
    // header counts the answer's tokens), so the label says which one this is.
    form->addRow(tr("Decoding steps:"), m_tokens);
    form->addRow(tr("Total:"), m_total);
    m_view = layOutChartWithStats(this, m_chart, stats, QStringLiteral("latencyChartView"));
    applyPalette();
}

void LatencyChart::startRun() {
    m_steps.clear();
    m_plotted = 0;
    m_firstTokenMs = -1;
    m_lastElapsedMs = 0;
    m_maxMs = 0;
    m_finished = false;
    m_stagesKnown = false;
    m_waitedMs = 0;
    m_series->clear();
    setNiceRange(m_axisX, 10, true);
    setNiceRange(m_axisY, 10, false);
    for (QLabel* l :
         {m_ttft, m_preprocess, m_vision, m_textEncoder, m_tps, m_median, m_p95, m_total, m_tokens})
        l->setText(QStringLiteral("–"));
    m_chart->setTitle(tr("Per-token latency (running…)"));
}

void LatencyChart::clear() {
    startRun();
    m_chart->setTitle(tr("Per-token latency"));
}

void LatencyChart::addStep(int step, double stepMs, double elapsedMs) {
    // Beam search reports one event per step; steps arrive in order and exactly once.
    if (step != static_cast<int>(m_steps.size()))
        return;
    if (m_steps.empty())
        m_firstTokenMs = elapsedMs;
    m_steps.push_back(stepMs);
    m_lastElapsedMs = elapsedMs;
    m_maxMs = std::max(m_maxMs, stepMs);
}

void LatencyChart::setStages(double preprocessMs, double visionMs, double textEncoderMs) {
    m_stagesKnown = true;
    m_preprocessMs = preprocessMs;
    m_visionMs = visionMs;
    m_textEncoderMs = textEncoderMs;
}

void LatencyChart::refresh() {
    if (m_plotted == static_cast<int>(m_steps.size()) && !m_finished)
        return;
    QList<QPointF> points;
    for (int i = m_plotted; i < static_cast<int>(m_steps.size()); ++i)
        points.append(QPointF(i, m_steps[static_cast<size_t>(i)]));
    if (!points.isEmpty())
        m_series->append(points); // one repaint for the whole batch
    m_plotted = static_cast<int>(m_steps.size());
    setNiceRange(m_axisX, std::max(10, m_plotted), true);
    setNiceRange(m_axisY, std::max(1.0, m_maxMs * 1.15), false);
    updateStats();
}

void LatencyChart::updateStats() {
    const StepStats s = summarizeSteps(m_steps);
    if (m_firstTokenMs >= 0)
        showFirstToken(m_firstTokenMs);
    m_tps->setText(s.count ? QString::number(s.tokensPerSecond, 'f', 1) : QStringLiteral("–"));
    m_median->setText(s.count ? formatMs(s.medianMs) : QStringLiteral("–"));
    m_p95->setText(s.count ? formatMs(s.p95Ms) : QStringLiteral("–"));
    m_tokens->setText(QString::number(s.count));
    if (!m_finished && s.count)
        m_total->setText(formatMs(m_lastElapsedMs + m_waitedMs));
    // The engine skips the vision encoder (and so preprocessing) exactly when it reuses the
    // image features; that is the only way its time is 0.
    // Likewise the text encoder, when the prompt's encoding made before Run is reused.
    if (!m_finished && m_stagesKnown)
        showStages(m_preprocessMs, m_visionMs, m_textEncoderMs, m_visionMs <= 0,
                   m_textEncoderMs <= 0);
}

void LatencyChart::showStages(double preprocessMs, double visionMs, double textEncoderMs,
                              bool reused, bool promptReused) {
    m_preprocess->setText(reused ? tr("– (features reused)") : formatMs(preprocessMs));
    const bool before = reused && m_encodedBeforeRunMs > 0;
    // Run pressed while they still ran: they started before Run but ended within its wait.
    const bool waited = m_waitedMs > 0;
    m_vision->setText(!reused   ? formatMs(visionMs)
                      : !before ? tr("– (features reused)")
                      : waited  ? tr("%1, started on open").arg(formatMs(m_encodedBeforeRunMs))
                                : tr("%1 on open").arg(formatMs(m_encodedBeforeRunMs)));
    // Short enough for the narrow column; the tooltip says what it means.
    m_vision->setToolTip(
        !before  ? QString()
        : waited ? tr("The vision encoder started when the image was opened and ended after Run "
                      "was pressed, which waited for it: the first token counts that wait.")
                 : tr("The vision encoder ran when the image was opened, before Run, and took "
                      "this long; the run reused its features."));
    const bool promptBefore = promptReused && m_promptBeforeRunMs >= 0;
    m_textEncoder->setText(!promptReused   ? formatMs(textEncoderMs)
                           : !promptBefore ? tr("– (reused)")
                           : waited
                               ? tr("%1, started before Run").arg(formatMs(m_promptBeforeRunMs))
                               : tr("%1 before Run").arg(formatMs(m_promptBeforeRunMs)));
    m_textEncoder->setToolTip(
        !promptBefore ? QString()
        : waited      ? tr("The text encoder started on this task's prompt before Run and ended "
                                "within the run's wait: the first token counts that wait.")
                      : tr("The text encoder ran on this task's prompt before Run (when the image "
                                "or the task was chosen) and took this long; the run reused it."));
}

void LatencyChart::finishRun(const Timings& timings, bool cancelled) {
    // The engine's own numbers replace the live estimates: its step list is complete even when
    // the GUI skipped an event, and its first-token time starts inside generate().
    m_steps = timings.stepMs;
    m_maxMs = m_steps.empty() ? 0 : *std::max_element(m_steps.begin(), m_steps.end());
    m_series->clear();
    m_plotted = 0;
    m_finished = true;
    m_firstTokenMs = timings.firstTokenMs;
    refresh();
    showFirstToken(timings.firstTokenMs);
    showStages(timings.preprocessMs, timings.visionMs, timings.textEncoderMs,
               timings.featuresReused, timings.promptReused);
    m_total->setText(formatMs(timings.totalMs + m_waitedMs)); // from Run, as the first token
    m_chart->setTitle(cancelled ? tr("Per-token latency (cancelled)") : tr("Per-token latency"));
}

void LatencyChart::showFirstToken(double engineMs) {
    // From Run where the run waited for encoders started before it (the wait is the user's).
    m_ttft->setText(formatMs(engineMs + m_waitedMs));
    m_ttft->setToolTip(m_waitedMs > 0
                           ? tr("From Run: %1 waiting for the encoders started when the image "
                                "was opened, then %2 in the engine.")
                                 .arg(formatMs(m_waitedMs), formatMs(engineMs))
                           : QString());
}

int LatencyChart::pointCount() const {
    return static_cast<int>(m_series->count());
}

void LatencyChart::applyPalette() {
    applyChartPalette(m_chart, palette());
    QPen pen(palette().color(QPalette::Highlight), 2);
    m_series->setPen(pen);
}

void LatencyChart::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange)
        applyPalette();
    QWidget::changeEvent(event);
}

} // namespace florence::ui
