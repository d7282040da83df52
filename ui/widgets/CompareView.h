// Cached versus uncached decoding of the same request: both per-token latency curves on one
// chart and the decoding time so far on another (CumulativeChart), each pass's median total
// over alternating repeats with its spread, the speedup overall and at 32/128/256 tokens, the
// time to first token, what may be concluded, and whether the two outputs are identical. While
// it runs, a progress bar and line say which pass is at which token.
//
//   view->startComparison(ignoreEos ? maxNewTokens : 0);      // tokens a pass will make, if known
//   view->addStep(update.pass, update.step, update.stepMs);   // pass 0 cached, 1 uncached
//   view->refresh();
//   view->setOutcome(compareOutcome);
#pragma once

#include "controllers/WorkerTypes.h"

#include <QWidget>

#include <array>
#include <vector>

class QChart;
class QChartView;
class QLineSeries;
class QValueAxis;
class QLabel;
class QProgressBar;

namespace florence::ui {

class CumulativeChart;

class CompareView : public QWidget {
    Q_OBJECT

public:
    explicit CompareView(QWidget* parent = nullptr);

    // `expectedTokens`: how many tokens each pass will generate (0: not known before the first
    // pass ends).
    void startComparison(int expectedTokens = 0);
    // Empty, not running (a new image was opened).
    void clear();
    void addStep(int pass, int step, double stepMs);
    void refresh();
    void setPassFinished(const RunOutcome& outcome);
    void setOutcome(const CompareOutcome& outcome);
    void setFailed(const QString& message);
    // Passes done of all (a warm-up, then the alternating repeats).
    void setProgress(int done, int total);
    // Tokens so far of the pass running (0 cached, 1 uncached).
    void setPassTokens(int pass, int tokens);

    QChart* chart() const { return m_chart; }
    CumulativeChart* cumulativeChart() const { return m_cumulative; }
    QString verdict() const;
    QString headline() const;

protected:
    void changeEvent(QEvent* event) override;

private:
    void applyPalette();
    void showProgress();
    void plotMedianSteps(const CompareOutcome& outcome);

    QChart* m_chart = nullptr;
    QChartView* m_view = nullptr;
    std::array<QLineSeries*, 2> m_series{};
    QValueAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
    std::array<QLabel*, 2> m_total{};
    QLabel* m_headline = nullptr; // the verdict in one sentence
    QLabel* m_speedup = nullptr;
    QLabel* m_verdict = nullptr;
    QLabel* m_note = nullptr;  // the conclusion: why the cache helps, or that the machine was busy
    QLabel* m_marks = nullptr; // the speedup at 32/128/256 tokens and at the end
    QLabel* m_firstToken = nullptr; // time to first token of each pass
    QProgressBar* m_progress = nullptr;
    CumulativeChart* m_cumulative = nullptr;
    int m_passesDone = 0, m_passesTotal = 0;
    int m_runningPass = -1, m_passTokens = 0; // the pass in progress and its tokens so far
    int m_expectedTokens = 0;
    std::array<std::vector<double>, 2> m_steps;
    std::array<int, 2> m_plotted{};
    std::array<bool, 2> m_finished{}; // the pass's first repeat ended (its totals are shown)
    double m_maxMs = 0;
};

} // namespace florence::ui
