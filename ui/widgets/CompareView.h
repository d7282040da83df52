// Cached versus uncached decoding of the same request: both per-token latency curves on one
// chart, each pass's median total over alternating repeats with its spread, the speedup, what
// may be concluded from it, and whether the two outputs are identical.
//
//   view->startComparison();
//   view->addStep(update.pass, update.step, update.stepMs);   // pass 0 cached, 1 uncached
//   view->refresh();
//   view->setOutcome(compareOutcome);
#pragma once

#include "run/WorkerTypes.h"

#include <QWidget>

#include <array>
#include <vector>

class QChart;
class QChartView;
class QLineSeries;
class QValueAxis;
class QLabel;

namespace florence::ui {

class CompareView : public QWidget {
    Q_OBJECT

public:
    explicit CompareView(QWidget* parent = nullptr);

    void startComparison();
    // Empty, not running (a new image was opened).
    void clear();
    void addStep(int pass, int step, double stepMs);
    void refresh();
    void setPassFinished(const RunOutcome& outcome);
    void setOutcome(const CompareOutcome& outcome);
    void setFailed(const QString& message);
    // Passes done of all (a warm-up, then the alternating repeats).
    void setProgress(int done, int total);

    QChart* chart() const { return m_chart; }
    QString verdict() const;

protected:
    void changeEvent(QEvent* event) override;

private:
    void applyPalette();

    QChart* m_chart = nullptr;
    QChartView* m_view = nullptr;
    std::array<QLineSeries*, 2> m_series{};
    QValueAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
    std::array<QLabel*, 2> m_total{};
    QLabel* m_speedup = nullptr;
    QLabel* m_verdict = nullptr;
    QLabel* m_note = nullptr; // the conclusion: why the cache helps, or that the machine was busy
    std::array<std::vector<double>, 2> m_steps;
    std::array<int, 2> m_plotted{};
    double m_maxMs = 0;
};

} // namespace florence::ui
