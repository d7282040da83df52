// The comparison's second chart: elapsed decoding time against tokens generated, with the cache
// and without. The cached line stays straight (every step costs the same); the uncached one
// bends upward (every step runs the whole answer so far again), and the gap is the cache's
// worth at that length.
//
//   chart->clear();
//   chart->plot(0, cachedStepMs);     // appends what was not plotted yet
//   chart->plot(1, uncachedStepMs);
#pragma once

#include <QChartView>

#include <array>
#include <vector>

class QChart;
class QLineSeries;
class QValueAxis;

namespace florence::ui {

class CumulativeChart : public QChartView {
    Q_OBJECT

public:
    explicit CumulativeChart(QWidget* parent = nullptr);

    void clear();
    // Plots pass `pass` (0 cached, 1 uncached) from its step times: the points not shown yet
    // are appended; a shorter list than shown replaces the line.
    void plot(int pass, const std::vector<double>& stepMs);
    int pointCount(int pass) const;

protected:
    void changeEvent(QEvent* event) override;

private:
    void applyPalette();
    void updateRange();

    QChart* m_chart = nullptr;
    std::array<QLineSeries*, 2> m_series{};
    std::array<double, 2> m_sumMs{}; // the last point of each line
    QValueAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
};

} // namespace florence::ui
