// How many repeats a comparison needs (no model): two of each settle a difference far larger
// than any busy spell makes, and nothing less does.
#include "presentation/CompareVerdict.h"

#include <QtTest>

#include <vector>

using namespace florence::ui;

class TestCompareRepeats : public QObject {
    Q_OBJECT
private slots:
    void settledEarly_data();
    void settledEarly();
    void settledImpliesAVerdict();
};

namespace {

CompareOutcome outcome(std::vector<double> cachedCpu, std::vector<double> uncachedCpu,
                       std::vector<double> cachedWall, std::vector<double> uncachedWall) {
    CompareOutcome o;
    o.measured.cached.processorMs = std::move(cachedCpu);
    o.measured.uncached.processorMs = std::move(uncachedCpu);
    o.measured.cached.totalsMs = o.measured.cached.decodeMs = std::move(cachedWall);
    o.measured.uncached.totalsMs = o.measured.uncached.decodeMs = std::move(uncachedWall);
    o.cached.result.generatedIds.assign(257, 0);
    o.measured.identical = true;
    return o;
}

} // namespace

void TestCompareRepeats::settledEarly_data() {
    QTest::addColumn<std::vector<double>>("cachedCpu");
    QTest::addColumn<std::vector<double>>("uncachedCpu");
    QTest::addColumn<std::vector<double>>("cachedWall");
    QTest::addColumn<std::vector<double>>("uncachedWall");
    QTest::addColumn<bool>("settled");
    using V = std::vector<double>;
    // Florence-2-base at 256 tokens on a busy 2-core machine: the wall clock wanders, the
    // processor time agrees, and the two passes are ten times apart.
    QTest::newRow("base size, tenfold") << V{19000, 20500} << V{230000, 241000}
                                        << V{30000, 52000} << V{380000, 238000} << true;
    QTest::newRow("quiet machine, tenfold on the wall clock")
        << V{} << V{} << V{3100, 3150} << V{31000, 30500} << true;
    QTest::newRow("one of each is no measurement")
        << V{19000} << V{230000} << V{19500} << V{231000} << false;
    QTest::newRow("1.5x apart: the third repeat decides")
        << V{10000, 10200} << V{15000, 15300} << V{10000, 10200} << V{15000, 15300} << false;
    QTest::newRow("far apart but the repeats disagree")
        << V{6000, 66000} << V{60000, 61000} << V{3100, 98000} << V{31000, 72000} << false;
}

void TestCompareRepeats::settledEarly() {
    QFETCH(std::vector<double>, cachedCpu);
    QFETCH(std::vector<double>, uncachedCpu);
    QFETCH(std::vector<double>, cachedWall);
    QFETCH(std::vector<double>, uncachedWall);
    QFETCH(bool, settled);
    QCOMPARE(florence::comparisonSettled(
                 outcome(cachedCpu, uncachedCpu, cachedWall, uncachedWall).measured),
             settled);
}

void TestCompareRepeats::settledImpliesAVerdict() {
    // The worker stops early only where the window will conclude: a settled comparison is
    // conclusive, and its headline names the tenfold difference.
    const CompareOutcome o = outcome({19000, 20500}, {230000, 241000}, {30000, 52000},
                                     {380000, 238000});
    QVERIFY(florence::comparisonSettled(o.measured));
    QVERIFY(florence::comparisonConcludes(o.measured));
    const CompareVerdict v = judgeComparison(o);
    QVERIFY(v.conclusive);
    QCOMPARE(v.basis, CompareVerdict::Basis::ProcessorTime);
    QVERIFY2(v.headline.startsWith("With the cache, 256 tokens took"), qPrintable(v.headline));
    QVERIFY2(v.headline.contains("12× faster"), qPrintable(v.headline));
}

QTEST_APPLESS_MAIN(TestCompareRepeats)
#include "TestCompareRepeats.moc"
