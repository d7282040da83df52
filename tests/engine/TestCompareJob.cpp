// florence::CompareJob on the bundled model, as the app's Compare and the CLI's `compare` run
// it: every planned pass reported, the same tokens with and without the cache, the repeats
// asked for (and no more than two extra), only the first repeat streamed, and a cancel that
// ends the job at once with what it measured.
#include <florence/compare_job.h>
#include <florence/engine.h>
#include <florence/image.h>
#include <florence/paths.h>
#include <florence/tasks.h>

#include <QTest>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

class TestCompareJob : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void repeatsAndProgress_data();
    void repeatsAndProgress();
    void cachedAndUncachedAgree();
    void cancelMidJob();
    void cancelledBeforeItStarts();

private:
    florence::CompareParams params() const;

    std::shared_ptr<const florence::Model> m_model;
};

void TestCompareJob::initTestCase() {
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    const std::string dir = florence::bundledModelDir();
    QVERIFY2(!dir.empty(), "build the florence_data target first");
    m_model = florence::Model::load(dir);
}

// Few tokens, exactly as many in every pass, two repeats of each.
florence::CompareParams TestCompareJob::params() const {
    florence::CompareParams p;
    p.request.image = std::make_shared<const florence::RgbImage>(
        florence::loadImage(std::string(FLORENCE_SAMPLES_DIR) + "/scenes/scene_01.png"));
    p.request.prompt = florence::buildPrompt({"<OD>", "", std::nullopt}, p.request.image->width,
                                             p.request.image->height);
    p.options = m_model->defaultOptions();
    p.options.numBeams = 1;
    p.options.maxNewTokens = 12;
    p.options.ignoreEos = true;
    p.repeats = 2;
    p.warmup = false;
    return p;
}

void TestCompareJob::repeatsAndProgress_data() {
    QTest::addColumn<bool>("warmup");
    QTest::newRow("no warm-up") << false;
    QTest::newRow("warm-up") << true;
}

void TestCompareJob::repeatsAndProgress() {
    QFETCH(bool, warmup);
    florence::CompareParams p = params();
    p.warmup = warmup;
    florence::Session session(m_model);
    std::vector<std::pair<int, int>> progress;
    std::map<florence::ComparePass, int> finished, streamed, laterReports;
    double clock = 0;
    int clockReads = 0;
    florence::CompareHooks hooks;
    hooks.onProgress = [&](int done, int total) { progress.emplace_back(done, total); };
    hooks.onPassFinished = [&](florence::ComparePass pass, const florence::Result& r) {
        ++finished[pass];
        QCOMPARE(r.generatedIds.size(), size_t(13)); // the decoder start and 12 tokens
    };
    hooks.onToken = [&](florence::ComparePass pass, const florence::TokenEvent&, double ms) {
        ++streamed[pass];
        QVERIFY(ms >= 0);
    };
    hooks.onRepeatTokens = [&](florence::ComparePass pass, int tokens) {
        ++laterReports[pass];
        QVERIFY(tokens >= 1 && tokens <= 12);
    };
    // The caller's processor clock, read once before and once after every measured pass.
    hooks.processorMs = [&] {
        ++clockReads;
        return clock += 5;
    };
    const florence::CompareResult r = florence::CompareJob(p).run(session, hooks);
    QVERIFY(!r.cancelled);
    // Two of each as asked; up to two more while a busy machine keeps them from agreeing.
    QVERIFY2(r.repeats >= 2 && r.repeats <= 4, qPrintable(QString::number(r.repeats)));
    for (const florence::ComparePassTimes* t : {&r.cached, &r.uncached}) {
        QCOMPARE(t->totalsMs.size(), size_t(r.repeats));
        QCOMPARE(t->decodeMs.size(), size_t(r.repeats));
        QCOMPARE(t->stepMs.size(), size_t(r.repeats));
        QCOMPARE(t->firstTokenMs.size(), size_t(r.repeats));
        QCOMPARE(t->processorMs, std::vector<double>(size_t(r.repeats), 5.0));
        for (const std::vector<double>& steps : t->stepMs)
            QCOMPARE(steps.size(), size_t(12));
    }
    QCOMPARE(clockReads, 4 * r.repeats);
    // The plan, then every pass counted up to it.
    QVERIFY(!progress.empty());
    QCOMPARE(progress.front(), std::make_pair(1, warmup ? 5 : 4));
    const int passes = 2 * r.repeats + (warmup ? 1 : 0);
    QCOMPARE(progress.back(), std::make_pair(passes, passes));
    QCOMPARE(int(progress.size()), passes);
    // Only the first repeat of each kind streams and is reported whole.
    for (const auto pass : {florence::ComparePass::Cached, florence::ComparePass::Uncached}) {
        QCOMPARE(finished[pass], 1);
        QCOMPARE(streamed[pass], 12);
        QVERIFY(laterReports[pass] >= r.repeats - 1);
    }
}

void TestCompareJob::cachedAndUncachedAgree() {
    florence::Session session(m_model);
    const florence::CompareResult r = florence::CompareJob(params()).run(session);
    QVERIFY(!r.cancelled);
    QVERIFY(r.identical);
    QCOMPARE(r.cached.first.generatedIds.size(), size_t(13));
    QCOMPARE(r.cached.first.generatedIds, r.uncached.first.generatedIds);
    QCOMPARE(r.cached.first.text, r.uncached.first.text);
    QVERIFY(!r.cached.first.cancelled);
    QVERIFY(!florence::answersPart(r));              // nowhere to part
    QCOMPARE(r.numBeams, params().options.numBeams); // what the wording of a split rests on
    // Enough to judge by: every repeat of both kinds has a time.
    const florence::CompareFigures f = florence::compareFigures(r);
    QVERIFY(f.enoughRuns);
    QCOMPARE(f.cached.count, r.repeats);
    QVERIFY(f.cached.medianMs > 0 && f.uncached.medianMs > 0);
}

void TestCompareJob::cancelMidJob() {
    // Cancelled at the third step of the first uncached pass: that pass stops there, nothing
    // after it runs, and the job says it was cancelled with the cached pass it measured.
    florence::CompareParams p = params();
    std::atomic<bool> cancel{false};
    p.cancel = &cancel;
    florence::Session session(m_model);
    std::vector<florence::ComparePass> finished;
    florence::CompareHooks hooks;
    hooks.onToken = [&](florence::ComparePass pass, const florence::TokenEvent& e, double) {
        if (pass == florence::ComparePass::Uncached && e.step == 2)
            cancel = true;
    };
    hooks.onPassFinished = [&](florence::ComparePass pass, const florence::Result&) {
        finished.push_back(pass);
    };
    const florence::CompareResult r = florence::CompareJob(p).run(session, hooks);
    QVERIFY(r.cancelled);
    QVERIFY(!r.identical);
    QCOMPARE(r.repeats, 0);
    QCOMPARE(finished, std::vector<florence::ComparePass>{florence::ComparePass::Cached});
    QCOMPARE(r.cached.totalsMs.size(), size_t(1));
    QVERIFY(r.uncached.totalsMs.empty());
    QVERIFY(r.cached.first.cancelled); // the shown answers say the comparison did not finish
    QVERIFY(!florence::compareFigures(r).enoughRuns);
}

void TestCompareJob::cancelledBeforeItStarts() {
    florence::CompareParams p = params();
    p.warmup = true;
    std::atomic<bool> cancel{true};
    p.cancel = &cancel;
    florence::Session session(m_model);
    int passesReported = 0;
    florence::CompareHooks hooks;
    hooks.onPassFinished = [&](florence::ComparePass, const florence::Result&) {
        ++passesReported;
    };
    const florence::CompareResult r = florence::CompareJob(p).run(session, hooks);
    QVERIFY(r.cancelled);
    QCOMPARE(passesReported, 0);
    QVERIFY(r.cached.totalsMs.empty() && r.uncached.totalsMs.empty());
}

QTEST_GUILESS_MAIN(TestCompareJob)
#include "TestCompareJob.moc"
