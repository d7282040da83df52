// The comparison's charts on their own (no model): whatever the decoding times, an axis never
// lays out more than a handful of ticks, and the GUI thread is never held up for long by a
// pass ending or a refresh.
#include "presentation/CompareVerdict.h"
#include "widgets/ChartStyle.h"
#include "widgets/CompareView.h"
#include "widgets/CumulativeChart.h"

#include <QAbstractAxis>
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QLineSeries>
#include <QValueAxis>
#include <QtTest>

#include <algorithm>
#include <ctime>

using namespace florence::ui;

namespace {

// CPU time of the calling thread: what the GUI thread itself spent, which another program
// busy on the same cores does not inflate (a wall-clock watchdog would).
double threadCpuMs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

QList<QValueAxis*> valueAxes(const QList<QChart*>& charts) {
    QList<QValueAxis*> axes;
    for (QChart* chart : charts)
        for (QAbstractAxis* a : chart->axes())
            if (auto* v = qobject_cast<QValueAxis*>(a))
                axes.append(v);
    return axes;
}

} // namespace

class TestCharts : public QObject {
    Q_OBJECT

private slots:
    void niceScaleIsBounded_data();
    void niceScaleIsBounded();
    void compareNeverLaysOutManyTicks();
    void cancelledPassSaysHowFarItGot();
    void noVerdictShowsNoRatio();
    void shortChartsKeepTheirTickLabels();
    void narrowChartsKeepTheirTickLabelsWhole();
};

void TestCharts::niceScaleIsBounded_data() {
    QTest::addColumn<double>("maxValue");
    QTest::addColumn<bool>("integer");
    for (double v : {1e-4, 0.001, 0.0105, 0.2, 1.0, 7.3, 99.0, 1234.5, 6e4, 3.6e6})
        for (bool integer : {false, true})
            QTest::addRow("%g%s", v, integer ? " integer" : "") << v << integer;
}

void TestCharts::niceScaleIsBounded() {
    QFETCH(double, maxValue);
    QFETCH(bool, integer);
    const NiceScale n = niceScale(maxValue, integer);
    QVERIFY(n.step > 0);
    QVERIFY(n.max >= maxValue - 1e-12);
    QVERIFY2(n.max / n.step <= 10.0 + 1e-9, qPrintable(QString::number(n.max / n.step)));
}

void TestCharts::compareNeverLaysOutManyTicks() {
    CompareView view;
    view.resize(900, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));

    // Every state any axis passes through, including between Qt calls inside setNiceRange.
    double mostTicks = 0;
    QString where;
    const auto axes = valueAxes({view.chart(), view.cumulativeChart()->chart()});
    QCOMPARE(axes.size(), 4);
    for (QValueAxis* axis : axes) {
        const auto record = [&, axis] {
            const double ticks = axisTickCount(axis);
            if (ticks > mostTicks) {
                mostTicks = ticks;
                where = QString("%1: range %2..%3, step %4")
                            .arg(axis->titleText())
                            .arg(axis->min())
                            .arg(axis->max())
                            .arg(axis->tickInterval());
            }
        };
        connect(axis, &QValueAxis::rangeChanged, this, record);
        connect(axis, &QValueAxis::tickIntervalChanged, this, record);
    }

    // Passes whose decoding takes 1 ms up to 60 s in all, then back down, as a comparison on a
    // fast machine, then a slow one, then the bundled model again would give.
    constexpr int kTokens = 256;
    double longestCallMs = 0;
    const auto timed = [&](const auto& call) {
        const double start = threadCpuMs();
        call();
        QCoreApplication::processEvents(); // the layout and painting it caused
        longestCallMs = std::max(longestCallMs, threadCpuMs() - start);
    };
    const std::vector<double> passTotalsMs = {1, 12, 150, 1'000, 12'000, 60'000, 3, 40'000, 1};
    view.startComparison(kTokens);
    for (size_t p = 0; p < passTotalsMs.size(); ++p) {
        const int pass = static_cast<int>(p % 2);
        if (pass == 0)
            timed([&] { view.startComparison(kTokens); });
        RunOutcome outcome;
        outcome.pass = pass;
        outcome.useCache = pass == 0;
        const double stepMs = passTotalsMs[p] / kTokens;
        for (int s = 0; s < kTokens; ++s) {
            view.addStep(pass, s, stepMs * (s == 0 ? 3 : 1));
            outcome.result.timings.stepMs.push_back(stepMs * (s == 0 ? 3 : 1));
            if (s % 16 == 15)
                timed([&] { view.refresh(); });
        }
        outcome.result.timings.totalMs = passTotalsMs[p];
        timed([&] { view.setPassFinished(outcome); });
    }
    qInfo("most ticks on an axis: %.0f (%s); longest GUI-thread call %.1f ms of CPU", mostTicks,
          qPrintable(where), longestCallMs);
    QVERIFY2(mostTicks <= 12, qPrintable(where));
    // A freeze was minutes of CPU; a chart update is a few milliseconds.
    QVERIFY2(longestCallMs < 100, qPrintable(QString::number(longestCallMs)));
}

void TestCharts::cancelledPassSaysHowFarItGot() {
    // Cancelled while the uncached pass streamed its first run: its curve shows the tokens so
    // far, and the line beside it says so instead of "not run"; the cached pass's line gives
    // its first run's figures and says that no median came.
    CompareView view;
    const auto text = [&](const char* name) {
        auto* label = view.findChild<QLabel*>(name);
        return label ? label->text() : QString("(no %1)").arg(name);
    };
    for (int uncachedTokens : {0, 1, 7}) {
        view.startComparison(12);
        RunOutcome cached;
        cached.pass = 0;
        cached.useCache = true;
        for (int s = 0; s < 12; ++s) {
            view.addStep(0, s, 2.0);
            cached.result.timings.stepMs.push_back(2.0);
        }
        cached.result.timings.totalMs = 24;
        view.setPassFinished(cached);
        for (int s = 0; s < uncachedTokens; ++s)
            view.addStep(1, s, 5.0);
        view.refresh();
        CompareOutcome outcome;
        outcome.cached = cached;
        outcome.measured.cancelled = true;
        view.setOutcome(outcome);
        QVERIFY2(text("cachedTotalLabel").contains("12 tokens") &&
                     text("cachedTotalLabel").endsWith("(first run; no median)"),
                 qPrintable(text("cachedTotalLabel")));
        const QString expected = uncachedTokens == 0   ? QString("not run")
                                 : uncachedTokens == 1 ? QString("cancelled after 1 token")
                                                       : QString("cancelled after 7 tokens");
        QCOMPARE(text("uncachedTotalLabel"), expected);
        QCOMPARE(static_cast<QLineSeries*>(view.chart()->series().at(1))->count(), uncachedTokens);
        QCOMPARE(text("verdictLabel"), QString("cancelled before both passes finished"));
    }
    // Cancelled in the first cached run: neither line claims a total.
    view.startComparison(12);
    for (int s = 0; s < 3; ++s)
        view.addStep(0, s, 2.0);
    CompareOutcome outcome;
    outcome.measured.cancelled = true;
    view.setOutcome(outcome);
    QCOMPARE(text("cachedTotalLabel"), QString("cancelled after 3 tokens"));
    QCOMPARE(text("uncachedTotalLabel"), QString("not run"));
    // Cancelled while queued: the worker ends the first pass as cancelled, without a token.
    view.startComparison(12);
    RunOutcome queued;
    queued.pass = 0;
    queued.result.cancelled = true;
    view.setPassFinished(queued);
    view.setOutcome(outcome);
    QCOMPARE(text("cachedTotalLabel"), QString("cancelled before its first token"));
    QCOMPARE(text("uncachedTotalLabel"), QString("not run"));
    // Cancelled during the repeats, after one run of each: the verdict says how far it got.
    outcome.measured.repeats = 1;
    view.setOutcome(outcome);
    QCOMPARE(text("verdictLabel"), QString("cancelled after one run of each pass"));
}

void TestCharts::noVerdictShowsNoRatio() {
    // Repeats that disagree in both wall and processor time: no verdict, and no speed-up at
    // the marks either (an outside tester saw "10 tokens (end): 2.06×" beside "No verdict").
    CompareView view;
    CompareOutcome o;
    florence::CompareResult& m = o.measured;
    m.cached.totalsMs = m.cached.decodeMs = {3100, 98000, 3150};
    m.uncached.totalsMs = m.uncached.decodeMs = {31000, 30500, 72000};
    m.cached.processorMs = {6000, 66000, 6050};
    m.uncached.processorMs = {60000, 59500, 61000};
    for (int r = 0; r < 3; ++r) {
        m.cached.stepMs.push_back(std::vector<double>(10, 1.0));
        m.uncached.stepMs.push_back(std::vector<double>(10, 2.0));
        m.cached.firstTokenMs.push_back(50);
        m.uncached.firstTokenMs.push_back(51);
    }
    m.repeats = 3;
    m.identical = true;
    QVERIFY(!judgeComparison(o).conclusive);
    view.startComparison(10);
    view.setOutcome(o);
    QCOMPARE(view.findChild<QLabel*>("speedupMarksLabel")->text(), QString("– (no verdict)"));
    // With a verdict, the ratios.
    m.cached.processorMs = {6000, 6100, 6050};
    m.cached.totalsMs = m.cached.decodeMs = {3100, 3200, 3150};
    QVERIFY(judgeComparison(o).conclusive);
    view.setOutcome(o);
    QVERIFY(view.findChild<QLabel*>("speedupMarksLabel")->text().contains("×"));
}

void TestCharts::shortChartsKeepTheirTickLabels() {
    // At 1280x720 or 2x on a 1080p screen the charts are short: Qt Charts cut the token axis's
    // labels and title to "..." until the title made room for the labels.
    CompareView view;
    view.resize(900, 170);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QList<QChartView*> charts = view.findChildren<QChartView*>();
    QCOMPARE(charts.size(), 2);
    const auto titlesShown = [&charts] {
        int shown = 0;
        for (QChartView* c : charts)
            for (QAbstractAxis* axis : c->chart()->axes(Qt::Horizontal))
                shown += axis->isTitleVisible() ? 1 : 0;
        return shown;
    };
    QTRY_COMPARE(titlesShown(), 0);
    view.resize(900, 420);
    QTRY_COMPARE(titlesShown(), 2);
}

void TestCharts::narrowChartsKeepTheirTickLabelsWhole() {
    // A narrow chart (a small window, 2x scaling) with 1000 tokens: Qt Charts cut "1000" to
    // "1…" and two-digit labels to "…" where seven labels did not fit between their ticks. It
    // shows fewer ticks instead, each label whole, and the six intervals again when wide.
    QChartView view;
    auto* chart = new QChart();
    QValueAxis* x = nullptr;
    QValueAxis* y = nullptr;
    setUpLatencyChart(chart, x, y);
    view.setChart(chart);
    keepLegibleWhenShort(&view);
    view.resize(240, 300);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    setNiceRange(x, 1000, true);
    const QFontMetrics metrics(x->labelsFont());
    const auto labelsFit = [&] {
        const double labels = axisTickCount(x);
        const int widest = metrics.horizontalAdvance(QString::number(x->max(), 'f', 0));
        return labels * widest <= chart->plotArea().width();
    };
    QTRY_VERIFY2(labelsFit(), qPrintable(QString("%1 labels of %2 px in %3 px")
                                             .arg(axisTickCount(x))
                                             .arg(metrics.horizontalAdvance("1000"))
                                             .arg(chart->plotArea().width())));
    QVERIFY(axisTickCount(x) >= 2);
    QVERIFY(axisTickCount(x) < 6); // fewer than the six labels of a wide chart
    QCOMPARE(x->max(), 1000.0); // the range still holds every token
    // A range that grows as tokens stream in keeps to the width: from 10 to 1000 again.
    setNiceRange(x, 10, true);
    QCoreApplication::processEvents();
    setNiceRange(x, 1000, true);
    QVERIFY2(labelsFit(), qPrintable(QString::number(axisTickCount(x))));
    // The legend ("cached", "uncached") shrinks its font rather than being cut.
    std::array<QLineSeries*, 2> series{};
    addCacheSeries(chart, x, y, series);
    // Narrower than the names alone at the window's font.
    const QFontMetrics viewFont(view.font());
    view.resize(viewFont.horizontalAdvance(QStringLiteral("cacheduncached")), 300);
    QTRY_VERIFY(chart->legend()->font().pointSizeF() < view.font().pointSizeF());
    view.resize(900, 300);
    QTRY_COMPARE(axisTickCount(x), 6.0); // 0, 200, ... 1000
    QTRY_COMPARE(chart->legend()->font().pointSizeF(), view.font().pointSizeF());
}

QTEST_MAIN(TestCharts)
#include "TestCharts.moc"
