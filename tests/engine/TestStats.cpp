// <florence/stats.h>: the median, p95 and millisecond text that the latency panels and the
// bench both show, so the two agree on the same steps.
#include <florence/stats.h>

#include <QtTest>

#include <cmath>
#include <limits>

using namespace florence;

Q_DECLARE_METATYPE(std::vector<double>)

class TestStats : public QObject {
    Q_OBJECT
private slots:
    void percentiles_data();
    void percentiles();
    void stepSummary();
    void milliseconds_data();
    void milliseconds();
    void percents_data();
    void percents();
};

void TestStats::percentiles_data() {
    QTest::addColumn<std::vector<double>>("values");
    QTest::addColumn<double>("q");
    QTest::addColumn<double>("expected");
    // numpy.percentile's default (linear interpolation between closest ranks).
    QTest::newRow("none") << std::vector<double>{} << 0.5 << 0.0;
    QTest::newRow("one") << std::vector<double>{7} << 0.95 << 7.0;
    QTest::newRow("odd median") << std::vector<double>{3, 1, 2} << 0.5 << 2.0;
    QTest::newRow("even median") << std::vector<double>{4, 1, 3, 2} << 0.5 << 2.5;
    QTest::newRow("p95 of 1..20") << std::vector<double>{20, 19, 18, 17, 16, 15, 14, 13, 12, 11,
                                                         10, 9,  8,  7,  6,  5,  4,  3,  2,  1}
                                  << 0.95 << 19.05;
    QTest::newRow("min") << std::vector<double>{5, 2, 9} << 0.0 << 2.0;
    QTest::newRow("max") << std::vector<double>{5, 2, 9} << 1.0 << 9.0;
}

void TestStats::percentiles() {
    QFETCH(std::vector<double>, values);
    QFETCH(double, q);
    QFETCH(double, expected);
    QVERIFY2(std::abs(percentile(values, q) - expected) < 1e-9,
             qPrintable(QString::number(percentile(values, q), 'g', 17)));
    if (q == 0.5)
        QCOMPARE(median(values), percentile(values, q));
}

void TestStats::stepSummary() {
    const StepStats none = summarizeSteps({});
    QCOMPARE(none.count, 0);
    QCOMPARE(none.tokensPerSecond, 0.0);
    // Out of order, as a busy machine delivers them: the summary does not depend on order.
    const StepStats s = summarizeSteps({12, 10, 50, 11, 10});
    QCOMPARE(s.count, 5);
    QCOMPARE(s.medianMs, 11.0);
    QVERIFY(std::abs(s.p95Ms - 42.4) < 1e-9);
    QCOMPARE(s.sumMs, 93.0);
    QVERIFY(std::abs(s.tokensPerSecond - 5000.0 / 93.0) < 1e-9);
}

void TestStats::milliseconds_data() {
    QTest::addColumn<double>("ms");
    QTest::addColumn<QString>("text");
    QTest::newRow("sub-ms") << 0.574 << "0.57 ms";
    QTest::newRow("below 10") << 9.994 << "9.99 ms";
    QTest::newRow("step") << 12.06 << "12.1 ms";
    QTest::newRow("first token") << 1661.0 << "1661.0 ms";
    QTest::newRow("seconds") << 30712.0 << "30.71 s";
    QTest::newRow("zero") << 0.0 << "0.00 ms";
}

void TestStats::milliseconds() {
    QFETCH(double, ms);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(formatMs(ms)), text);
}

void TestStats::percents_data() {
    QTest::addColumn<double>("p");
    QTest::addColumn<QString>("text");
    QTest::newRow("likely") << 0.412 << "41%";
    QTest::newRow("at 10%") << 0.1 << "10%";
    QTest::newRow("below 10%") << 0.0523 << "5.2%";
    QTest::newRow("random weights") << 0.000142 << "0.014%";
    QTest::newRow("certain") << 1.0 << "100%";
    QTest::newRow("none") << 0.0 << "0%";
}

// The Compare split's probabilities, as the window and the CLI both print them.
void TestStats::percents() {
    QFETCH(double, p);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(formatPercent(p)), text);
}

QTEST_GUILESS_MAIN(TestStats)
#include "TestStats.moc"
