// What the window shows, without a window: answers without model tokens, chart ticks, the
// comparison's verdict and its marks along the answer.
#include "presentation/AnswerDisplay.h"
#include "presentation/CompareMarks.h"
#include "presentation/CompareVerdict.h"
#include "widgets/ChartStyle.h"

#include <QTest>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

class TestPresentation : public QObject {
    Q_OBJECT

private slots:
    void cleanAnswerTextDropsModelTokens_data();
    void cleanAnswerTextDropsModelTokens();
    void itemCountSaysWhatTheTableHolds();
    void niceTicks_data();
    void niceTicks();
    void compareVerdictWording_data();
    void compareVerdictWording();
    void compareConcludesOnProcessorTime();
    void compareSaysWhereTheAnswersPart();
    void compareMarksAlongTheAnswer_data();
    void compareMarksAlongTheAnswer();
};

void TestPresentation::cleanAnswerTextDropsModelTokens_data() {
    QTest::addColumn<QString>("raw");
    QTest::addColumn<QString>("clean");
    QTest::newRow("caption") << "</s><s>A yellow star.</s>"
                             << "A yellow star.";
    QTest::newRow("ocr box label") << "</s>PARK"
                                   << "PARK";
    QTest::newRow("region category") << "green star<loc_146><loc_10><loc_300><loc_400>"
                                     << "green star";
    QTest::newRow("pad") << "<pad><pad>red circle</s><pad>"
                         << "red circle";
    QTest::newRow("tokens between words") << "red circle<loc_1>blue square"
                                          << "red circle blue square";
    QTest::newRow("text with brackets") << "a < b and c > d"
                                        << "a < b and c > d";
    QTest::newRow("empty") << "</s><s></s>"
                           << "";
}

void TestPresentation::cleanAnswerTextDropsModelTokens() {
    QFETCH(QString, raw);
    QFETCH(QString, clean);
    QCOMPARE(QString::fromStdString(florence::ui::cleanAnswerText(raw.toStdString())), clean);
}

void TestPresentation::itemCountSaysWhatTheTableHolds() {
    using florence::ui::itemCountText;
    QCOMPARE(itemCountText(florence::parseAnswer("<CAPTION>", "</s><s>A dog.</s>", 10, 10)),
             QString("text answer"));
    QCOMPARE(itemCountText(florence::parseAnswer(
                 "<OD>", "</s><s>dog<loc_1><loc_1><loc_9><loc_9></s>", 10, 10)),
             QString("1 item"));
    // Detection that found nothing but wrote words (a random model): "0 items" sat above the
    // table's row of that text.
    QCOMPARE(itemCountText(florence::parseAnswer("<OD>", "</s><s>recycling canoe</s>", 10, 10)),
             QString("no items, text only"));
    QCOMPARE(itemCountText(florence::parseAnswer("<OD>", "</s><s></s>", 10, 10)),
             QString("no items"));
}

void TestPresentation::niceTicks_data() {
    QTest::addColumn<double>("max");
    QTest::addColumn<bool>("integer");
    QTest::addColumn<double>("step");
    QTest::addColumn<double>("top");
    QTest::addColumn<int>("decimals");
    QTest::newRow("10 tokens") << 10.0 << true << 2.0 << 10.0 << 0;
    QTest::newRow("7 tokens") << 7.0 << true << 2.0 << 8.0 << 0;
    QTest::newRow("3 tokens: no half steps") << 3.0 << true << 1.0 << 3.0 << 0;
    QTest::newRow("137 tokens") << 137.0 << true << 50.0 << 150.0 << 0;
    QTest::newRow("24.5 ms") << 24.5 << false << 5.0 << 25.0 << 0;
    QTest::newRow("18.4 ms") << 18.4 << false << 5.0 << 20.0 << 0;
    QTest::newRow("3665 ms") << 3665.0 << false << 1000.0 << 4000.0 << 0;
    QTest::newRow("0.84 ms") << 0.84 << false << 0.2 << 1.0 << 1;
}

void TestPresentation::niceTicks() {
    QFETCH(double, max);
    QFETCH(bool, integer);
    QFETCH(double, step);
    QFETCH(double, top);
    QFETCH(int, decimals);
    const florence::ui::NiceScale n = florence::ui::niceScale(max, integer);
    QCOMPARE(n.step, step);
    QCOMPARE(n.max, top);
    QCOMPARE(n.decimals, decimals);
}

void TestPresentation::compareVerdictWording_data() {
    QTest::addColumn<std::vector<double>>("cached");
    QTest::addColumn<std::vector<double>>("uncached");
    QTest::addColumn<bool>("conclusive");
    QTest::addColumn<QString>("says");
    QTest::newRow("steady") << std::vector<double>{400, 410, 405}
                            << std::vector<double>{1200, 1190, 1230} << true << "faster";
    QTest::newRow("steady, explains length")
        << std::vector<double>{400, 410, 405} << std::vector<double>{1200, 1190, 1230} << true
        << "the longer the answer";
    QTest::newRow("one cached pass hit by a busy spell")
        << std::vector<double>{43, 3665, 45} << std::vector<double>{120, 118, 125} << false
        << "the machine was busy; run again";
    // Noisy, but every uncached repeat was slower than every cached one.
    QTest::newRow("uncached noisy, still ordered")
        << std::vector<double>{40, 41, 42} << std::vector<double>{120, 300, 125} << true
        << "faster";
    QTest::newRow("short answer, no gain")
        << std::vector<double>{100, 101, 102} << std::vector<double>{95, 96, 97} << true
        << "too short for the cache to pay off";
}

void TestPresentation::compareConcludesOnProcessorTime() {
    // Another program took the cores during two passes: the wall-clock totals disagree, the
    // processor time each pass used does not, and the verdict rests on it and says so.
    florence::ui::CompareOutcome o;
    florence::CompareResult& m = o.measured;
    m.cached.totalsMs = m.cached.decodeMs = {3100, 9800, 3150};
    m.uncached.totalsMs = m.uncached.decodeMs = {31000, 30500, 72000};
    m.cached.processorMs = {5950, 6000, 6100};
    m.uncached.processorMs = {60000, 59500, 61000};
    o.cached.result.generatedIds.assign(257, 0);
    m.identical = true;
    QVERIFY(florence::comparisonConcludes(m));
    const florence::ui::CompareVerdict v = florence::ui::judgeComparison(o);
    QVERIFY(v.conclusive);
    QCOMPARE(v.basis, florence::ui::CompareVerdict::Basis::ProcessorTime);
    QCOMPARE(v.speedup, 10.0);
    QCOMPARE(v.headline, QString("With the cache, 256 tokens took 6.0 s instead of 60 s: 10× "
                                 "faster. Same answer."));
    QVERIFY2(v.conclusion.contains("processor time"), qPrintable(v.conclusion));
    // Both disagree and overlap: no verdict, and the worker measures again.
    m.cached.processorMs = {6000, 66000, 6050};
    m.cached.totalsMs = {3100, 98000, 3150};
    QVERIFY(!florence::comparisonConcludes(m));
    const florence::ui::CompareVerdict none = florence::ui::judgeComparison(o);
    QVERIFY(!none.conclusive);
    QVERIFY2(none.headline.startsWith("No verdict"), qPrintable(none.headline));
    QVERIFY2(!none.speedupText.contains("×") && none.speedupText.contains("no verdict"),
             qPrintable(none.speedupText));
}

void TestPresentation::compareSaysWhereTheAnswersPart() {
    // Not "the cache changed the answer": the token where the answers part and the probability
    // each pass gave its choice there, so that a near tie reads as one.
    florence::ui::CompareOutcome o;
    florence::CompareResult& m = o.measured;
    m.cached.totalsMs = m.cached.decodeMs = {100, 101, 102};
    m.uncached.totalsMs = m.uncached.decodeMs = {1000, 1010, 1020};
    m.cached.first.generatedIds = {2, 10, 11, 12, 13, 2};
    m.cached.first.tokenLogprobs = {0, -0.1f, std::log(0.41f), -0.2f, 0};
    m.uncached.first.generatedIds = {2, 10, 11, 14, 15, 2};
    m.uncached.first.tokenLogprobs = {0, -0.1f, std::log(0.40f), -0.3f, 0};
    o.cached.result = m.cached.first;
    m.identical = false;
    const std::optional<florence::AnswerSplit> split = florence::answersPart(m);
    QVERIFY(split.has_value());
    QCOMPARE(split->token, 2);
    QVERIFY(split->nearTie());
    QCOMPARE(florence::ui::answerSplitText(m),
             QString("from token 3: 41% with the cache, 40% without (a near tie, which the two "
                     "ways' rounding can tip)"));
    const QString headline = florence::ui::judgeComparison(o).headline;
    QVERIFY2(headline.endsWith("The answers differ from token 3: 41% with the cache, 40% without "
                               "(a near tie, which the two ways' rounding can tip)."),
             qPrintable(headline));
    // Far apart: no tie claimed.
    m.uncached.first.tokenLogprobs[2] = std::log(0.9f);
    QVERIFY(!florence::answersPart(m)->nearTie());
    QCOMPARE(florence::ui::answerSplitText(m),
             QString("from token 3: 41% with the cache, 90% without (more than a near tie "
                     "apart: the two ways computed differently)"));
    // A beam search returns its best-scoring hypothesis: the tie is between the scores.
    m.numBeams = 3;
    m.cached.first.score = -3.412;
    m.uncached.first.score = -3.409;
    QVERIFY(florence::answersPart(m)->nearTie());
    QCOMPARE(florence::ui::answerSplitText(m),
             QString("from token 3: 41% with the cache, 90% without; beam scores -3.412 and "
                     "-3.409 (hypotheses nearly tied, which the two ways' rounding can swap)"));
    m.uncached.first.score = -4.5;
    QVERIFY(!florence::answersPart(m)->nearTie());
    QVERIFY(florence::ui::answerSplitText(m).endsWith("beam scores -3.412 and -4.500"));
    m.numBeams = 1;
    // Random weights spread a token's probability over the whole vocabulary: digits enough to
    // tell two such probabilities apart.
    m.cached.first.tokenLogprobs[2] = std::log(0.000144f);
    m.uncached.first.tokenLogprobs[2] = std::log(0.000152f);
    QVERIFY(florence::answersPart(m)->nearTie());
    QVERIFY2(florence::ui::answerSplitText(m).startsWith(
                 "from token 3: 0.014% with the cache, 0.015% without (a near tie"),
             qPrintable(florence::ui::answerSplitText(m)));
    // One answer is the start of the other.
    m.uncached.first.generatedIds = {2, 10, 11};
    m.uncached.first.tokenLogprobs = {0, -0.1f};
    QCOMPARE(florence::ui::answerSplitText(m), QString("from token 3 (one answer ends there)"));
    // The first answers agree, a repeat's did not.
    m.uncached.first = m.cached.first;
    QVERIFY(!florence::answersPart(m));
    QCOMPARE(florence::ui::answerSplitText(m), QString("in a repeat of one pass"));
}

void TestPresentation::compareVerdictWording() {
    QFETCH(std::vector<double>, cached);
    QFETCH(std::vector<double>, uncached);
    QFETCH(bool, conclusive);
    QFETCH(QString, says);
    florence::ui::CompareOutcome o;
    o.measured.cached.totalsMs = o.measured.cached.decodeMs = cached;
    o.measured.uncached.totalsMs = o.measured.uncached.decodeMs = uncached;
    o.cached.result.generatedIds.assign(9, 0);
    const florence::ui::CompareVerdict v = florence::ui::judgeComparison(o);
    QCOMPARE(v.conclusive, conclusive);
    QVERIFY2(v.conclusion.contains(says), qPrintable(v.conclusion));
    // A ratio only with a verdict: without one it would contradict the headline.
    QCOMPARE(v.speedupText.contains("×"), conclusive);
    // Medians, not means or single passes.
    QCOMPARE(v.cached.medianMs, florence::spreadOf(cached).medianMs);
    QCOMPARE(v.cached.count, 3);
}

void TestPresentation::compareMarksAlongTheAnswer_data() {
    QTest::addColumn<int>("tokens");
    QTest::addColumn<QString>("expected");
    // Cached steps of 1 ms; uncached step n takes n ms (it runs the n tokens so far), so after
    // n tokens the uncached pass took n(n+1)/2 ms: (n+1)/2 times the cached one.
    QTest::newRow("short") << 20 << "20 tokens (end): 10.5×";
    QTest::newRow("to a mark") << 256 << "32 tokens: 16.5× · 128: 64.5× · 256 (end): 128.5×";
    QTest::newRow("past the marks") << 300
                                    << "32 tokens: 16.5× · 128: 64.5× · 256: 128.5× · "
                                       "300 (end): 150.5×";
    QTest::newRow("one token") << 1 << "1 token (end): 1.00×";
}

void TestPresentation::compareMarksAlongTheAnswer() {
    QFETCH(int, tokens);
    QFETCH(QString, expected);
    florence::ui::CompareOutcome o;
    // Three repeats each; one uncached repeat was slowed by a busy machine, and the median
    // leaves it out.
    for (const double slowdown : {1.0, 5.0, 1.0}) {
        std::vector<double> cached(static_cast<size_t>(tokens), 1.0), uncached;
        for (int n = 1; n <= tokens; ++n)
            uncached.push_back(n * slowdown);
        o.measured.cached.stepMs.push_back(cached);
        o.measured.uncached.stepMs.push_back(uncached);
        o.measured.cached.firstTokenMs.push_back(50);
        o.measured.uncached.firstTokenMs.push_back(51 * slowdown);
    }
    const florence::ui::CompareMarks m = florence::ui::compareMarks(o);
    QCOMPARE(m.speedupText, expected);
    QCOMPARE(m.marks.back().tokens, tokens);
    QVERIFY(m.marks.back().end);
    QCOMPARE(m.cachedFirstTokenMs, 50.0);
    QCOMPARE(m.uncachedFirstTokenMs, 51.0);
    QCOMPARE(m.firstTokenText, QString("cache on 50.0 ms, cache off 51.0 ms"));
    // Nothing to say without a repeat of each.
    QVERIFY(florence::ui::compareMarks(florence::ui::CompareOutcome()).speedupText.isEmpty());
}

QTEST_MAIN(TestPresentation)
#include "TestPresentation.moc"
