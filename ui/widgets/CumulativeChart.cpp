#include "widgets/CumulativeChart.h"

#include "widgets/ChartStyle.h"

#include <QChart>
#include <QEvent>
#include <QLegend>
#include <QLineSeries>
#include <QValueAxis>

#include <algorithm>

namespace florence::ui {

CumulativeChart::CumulativeChart(QWidget* parent) : QChartView(parent) {
    setObjectName(QStringLiteral("cumulativeChartView"));
    m_chart = new QChart();
    m_chart->setTitle(tr("Decoding time so far"));
    setUpLatencyChart(m_chart, m_axisX, m_axisY);
    m_axisX->setTitleText(tr("tokens"));
    m_axisY->setTitleText(tr("s"));
    addCacheSeries(m_chart, m_axisX, m_axisY, m_series);
    setChart(m_chart); // the view owns the chart
    setRenderHint(QPainter::Antialiasing);
    setMinimumSize(180, 140);
    keepLegibleWhenShort(this);
    applyPalette();
    clear();
}

void CumulativeChart::clear() {
    for (int i = 0; i < 2; ++i) {
        m_series[i]->clear();
        m_sumMs[i] = 0;
    }
    updateRange();
}

void CumulativeChart::plot(int pass, const std::vector<double>& stepMs) {
    if (pass < 0 || pass > 1)
        return;
    QLineSeries* series = m_series[static_cast<size_t>(pass)];
    if (static_cast<int>(stepMs.size()) < series->count()) {
        series->clear();
        m_sumMs[pass] = 0;
    }
    QList<QPointF> points;
    for (size_t s = static_cast<size_t>(series->count()); s < stepMs.size(); ++s) {
        m_sumMs[pass] += stepMs[s];
        // Token n is on the chart after n steps: the first step makes the first token.
        points.append(QPointF(static_cast<double>(s + 1), m_sumMs[pass] / 1000.0));
    }
    if (!points.isEmpty())
        series->append(points);
    updateRange();
}

int CumulativeChart::pointCount(int pass) const {
    return pass < 0 || pass > 1 ? 0 : m_series[static_cast<size_t>(pass)]->count();
}

void CumulativeChart::updateRange() {
    const int tokens = std::max({10, m_series[0]->count(), m_series[1]->count()});
    setNiceRange(m_axisX, tokens, true);
    setNiceRange(m_axisY, std::max({0.01, m_sumMs[0], m_sumMs[1]}) / 1000.0 * 1.05, false);
}

void CumulativeChart::applyPalette() {
    applyChartPalette(m_chart, palette());
    styleCacheSeries(m_series);
}

void CumulativeChart::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange)
        applyPalette();
    QChartView::changeEvent(event);
}

} // namespace florence::ui
