// Live per-token latency of the current run: a line chart of every decoding step's wall time,
// and beside it the time to first token split into its stages (known from the first token on),
// tokens per second, median and p95 step time and the total.
//
//   chart->startRun();
//   chart->addStep(update.step, update.stepMs, update.elapsedMs);   // per token
//   chart->setStages(update.preprocessMs, update.visionMs, update.textEncoderMs);
//   chart->refresh();                                               // at most ~30 times a second
//   chart->finishRun(outcome.timings, outcome.cancelled);
#pragma once

#include <florence/engine.h>

#include <QWidget>

#include <vector>

class QChart;
class QChartView;
class QLineSeries;
class QValueAxis;
class QLabel;

namespace florence::ui {

class LatencyChart : public QWidget {
    Q_OBJECT

public:
    explicit LatencyChart(QWidget* parent = nullptr);

    void startRun();
    // Empty, not running (a new image was opened).
    void clear();
    void addStep(int step, double stepMs, double elapsedMs);
    // The stages before the first token; a vision time of 0 means the features were reused.
    void setStages(double preprocessMs, double visionMs, double textEncoderMs);
    // Pushes the steps added since the last refresh into the chart and the numbers.
    void refresh();
    void finishRun(const Timings& timings, bool cancelled);
    // The vision encoder's and the text encoder's times when they ran ahead of Run on the image
    // shown and the chosen task's prompt (< 0: it did not); a run that reused their output shows
    // them as run before Run.
    void setEncodedBeforeRun(double visionMs, double textEncoderMs) {
        m_encodedBeforeRunMs = visionMs;
        m_promptBeforeRunMs = textEncoderMs;
    }
    double encodedBeforeRunMs() const { return m_encodedBeforeRunMs; }
    double promptBeforeRunMs() const { return m_promptBeforeRunMs; }
    // Run was pressed while those encoders still ran: the run waited `ms` for them before the
    // engine started it. The first token counts from Run, and they show as ended after it.
    void setWaitedForEncoders(double ms) { m_waitedMs = ms; }
    double waitedForEncodersMs() const { return m_waitedMs; }

    int pointCount() const;
    QChart* chart() const { return m_chart; }

protected:
    void changeEvent(QEvent* event) override;

private:
    void updateStats();
    void showFirstToken(double engineMs);
    void showStages(double preprocessMs, double visionMs, double textEncoderMs, bool reused,
                    bool promptReused);
    void applyPalette();

    QChart* m_chart = nullptr; // owned by m_view
    QChartView* m_view = nullptr;
    QLineSeries* m_series = nullptr; // owned by m_chart
    QValueAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
    QLabel* m_ttft = nullptr;
    QLabel* m_preprocess = nullptr;
    QLabel* m_vision = nullptr;
    QLabel* m_textEncoder = nullptr;
    QLabel* m_tps = nullptr;
    QLabel* m_median = nullptr;
    QLabel* m_p95 = nullptr;
    QLabel* m_total = nullptr;
    QLabel* m_tokens = nullptr;

    std::vector<double> m_steps;
    int m_plotted = 0; // steps already in m_series
    double m_firstTokenMs = -1;
    double m_lastElapsedMs = 0;
    double m_maxMs = 0;
    bool m_finished = false;
    bool m_stagesKnown = false;
    double m_preprocessMs = 0, m_visionMs = 0, m_textEncoderMs = 0;
    double m_encodedBeforeRunMs = -1;
    double m_promptBeforeRunMs = -1;
    double m_waitedMs = 0; // setWaitedForEncoders
};

} // namespace florence::ui
