// florence::runBenchJob on the bundled model with the cheapest measurements: the progress it
// reports, the figures it returns, the cancel flag that ends it with nothing returned, and the
// package or image it cannot measure.
#include <florence/bench_job.h>

#include <florence/error.h>
#include <florence/paths.h>

#include <QTest>

#include <atomic>
#include <string>
#include <vector>

namespace {

// No Python, no uncached decoding, no batching, no reduced precisions, one short length.
florence::BenchParams cheapParams() {
    florence::BenchParams p;
    p.package = florence::bundledModelDir();
    p.lengths = {4};
    p.threads = 1;
    p.python = false;
    p.uncached = false;
    p.bf16 = false;
    p.int8 = false;
    p.batching = false;
    return p;
}

struct ProgressEvent {
    int done, total;
    std::string what;
};

} // namespace

class TestBenchJob : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void measuresTheBundledModel();
    void cancelFromProgressEndsTheJob();
    void refusesWhatItCannotMeasure_data();
    void refusesWhatItCannotMeasure();
};

void TestBenchJob::initTestCase() {
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    QVERIFY2(!florence::bundledModelDir().empty(), "build the florence_data target first");
    QVERIFY2(!florence::samplesDir().empty(), "the bundled sample images are missing");
}

void TestBenchJob::measuresTheBundledModel() {
    const florence::BenchParams params = cheapParams();
    std::vector<ProgressEvent> events;
    florence::BenchHooks hooks;
    hooks.onProgress = [&](int done, int total, const std::string& what) {
        events.push_back({done, total, what});
    };
    const florence::BenchResult r = florence::runBenchJob(params, hooks);

    QVERIFY(!events.empty());
    for (size_t i = 0; i < events.size(); ++i) {
        QCOMPARE(events[i].done, int(i) + 1); // one measurement at a time, none skipped
        QCOMPARE(events[i].total, params.progressSteps());
        QVERIFY(!events[i].what.empty());
    }
    QCOMPARE(events.back().done, events.back().total);

    QVERIFY(!r.model.empty());
    QVERIFY(r.package.find("models/default") != std::string::npos);
    QVERIFY(r.loadMs > 0);
    QCOMPARE(r.visionMs.size(), size_t(1));
    QVERIFY(r.visionMs[0] > 0);
    QVERIFY(r.textEncoderMs[0] > 0);
    QCOMPARE(r.lengths.size(), size_t(1));
    QCOMPARE(r.lengths[0].length, 4);
    QCOMPARE(r.lengths[0].stepMs.size(), size_t(4)); // exactly its length: the end is ignored
    for (double ms : r.lengths[0].stepMs)
        QVERIFY(ms > 0);
    QVERIFY(r.cachedMedianMs() > 0);
    QVERIFY(!r.lengths[0].hasUncached);
    QVERIFY(r.reuse.reused);
    QVERIFY(r.bandwidth > 0);
    QVERIFY(r.stepBytes > 0);
    QVERIFY(r.floorMs() > 0);
    QVERIFY(r.peakBytes > 0);
    // What was not asked for was not measured.
    QVERIFY(!r.batching);
    QVERIFY(!r.python);
    QVERIFY(r.pythonRuns.empty());
    QVERIFY(r.pythonError.empty());
    QVERIFY(!r.bf16);
    QVERIFY(!r.int8);
}

void TestBenchJob::cancelFromProgressEndsTheJob() {
    std::atomic<bool> cancel{false};
    std::vector<std::string> reported;
    florence::BenchHooks hooks;
    hooks.cancel = &cancel;
    hooks.onProgress = [&](int, int, const std::string& what) {
        reported.push_back(what);
        cancel.store(true); // as a Cancel button would, during the first measurement
    };
    try {
        florence::runBenchJob(cheapParams(), hooks);
        QFAIL("a cancelled benchmark returned a result");
    } catch (const florence::EngineError& e) {
        QVERIFY2(std::string(e.what()).find("cancelled") != std::string::npos, e.what());
    }
    // Stopped before the next measurement: none after the one that set the flag.
    QCOMPARE(reported, std::vector<std::string>{"load"});
}

void TestBenchJob::refusesWhatItCannotMeasure_data() {
    QTest::addColumn<QString>("package");
    QTest::addColumn<QString>("image");
    QTest::addColumn<QString>("named"); // what the message names
    QTest::newRow("missing package") << "/nonexistent/package"
                                     << ""
                                     << "/nonexistent/package";
    QTest::newRow("image that is not one") << "" << FLORENCE_SOURCE_DIR "/README.md"
                                           << "README.md";
}

void TestBenchJob::refusesWhatItCannotMeasure() {
    QFETCH(QString, package);
    QFETCH(QString, image);
    QFETCH(QString, named);
    florence::BenchParams params = cheapParams();
    if (!package.isEmpty())
        params.package = package.toStdString();
    params.image = image.toStdString();
    int progressed = 0;
    florence::BenchHooks hooks;
    hooks.onProgress = [&](int, int, const std::string&) { ++progressed; };
    try {
        florence::runBenchJob(params, hooks);
        QFAIL("measured what it cannot");
    } catch (const florence::Error& e) {
        QVERIFY2(std::string(e.what()).find(named.toStdString()) != std::string::npos, e.what());
    }
    QCOMPARE(progressed, 0); // refused before anything was measured
}

QTEST_GUILESS_MAIN(TestBenchJob)
#include "TestBenchJob.moc"
