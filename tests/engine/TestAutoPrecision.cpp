// "Automatic" precision (<florence/auto_precision.h>): which mode the rule picks from a CPU's
// measurements, what it says about the others, the setting's words, and the cache of
// measurements in the user's cache folder, and one process measuring at a time. The measurements
// are given: nothing here measures.
#include <florence/auto_precision.h>
#include <florence/error.h>
#include <florence/generation_settings.h>
#include <florence/machine.h>
#include <florence/paths.h>

#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLockFile>
#include <QProcess>
#include <QTemporaryDir>

#include <atomic>
#include <future>
#include <mutex>

using namespace florence;

Q_DECLARE_METATYPE(florence::PrecisionProbe)
Q_DECLARE_METATYPE(florence::Precision)

namespace {

// The precisions' names as the cache and the reasons write them.
const char* name(Precision p) {
    return p == Precision::Float32 ? "float32" : p == Precision::BFloat16 ? "bfloat16" : "int8";
}

PrecisionTrial trial(Precision p, double firstTokenMs, double stepMs, double cosine = 1,
                     const std::string& error = {}) {
    PrecisionTrial t;
    t.precision = p;
    t.firstTokenMs = firstTokenMs;
    t.stepMs = stepMs;
    t.logitsCosine = cosine;
    t.error = error;
    return t;
}

PrecisionTrial loaded(PrecisionTrial t, double otherCores) {
    t.otherCores = otherCores;
    return t;
}

PrecisionProbe probe(PrecisionTrial f32, PrecisionTrial bf16, PrecisionTrial int8) {
    return {"cpu", "package", {f32, bf16, int8}};
}

const PrecisionOption& option(const PrecisionChoice& c, Precision p) {
    for (const PrecisionOption& o : c.options)
        if (o.precision == p)
            return o;
    throw std::runtime_error("no option");
}

} // namespace

class TestAutoPrecision : public QObject {
    Q_OBJECT
private slots:
    void choice_data();
    void choice();
    void slowerModesShowTheirCost();
    void noFloat32IsRefused();
    void differentLoadsAreSaid();
    void otherProgramsLoadCountsOthers();
    void settingWords();
    void cacheRoundTrip();
    void unreadableCacheIsNone();
    void oneProcessMeasuresAtATime();
};

void TestAutoPrecision::choice_data() {
    QTest::addColumn<PrecisionProbe>("probe");
    QTest::addColumn<Precision>("expected");
    const auto F = Precision::Float32, B = Precision::BFloat16, I = Precision::Int8;
    // Figures of the kind the bench measured (base, 2 threads): first token, step, cosine.
    // AVX-512 with BF16 and VNNI: both reduced precisions faster, int8 the fastest.
    QTest::newRow("AVX-512 BF16+VNNI: int8")
        << probe(trial(F, 2600, 14), trial(B, 1500, 8, 0.99998), trial(I, 1300, 5, 0.9999))
        << I;
    // AVX2 with this project's row kernels, encoders float32: the steps alone are faster.
    QTest::newRow("AVX2 kernels: int8")
        << probe(trial(F, 3700, 24), trial(B, 3600, 15, 0.99998), trial(I, 3700, 10, 0.99988))
        << I;
    // AVX2 through LibTorch only (FLORENCE_KERNELS=torch, or no AVX2): both slower.
    QTest::newRow("LibTorch path: float32")
        << probe(trial(F, 3700, 24), trial(B, 3600, 123, 0.99998), trial(I, 3900, 177, 0.99988))
        << F;
    // int8 the fastest but its answers drift: the next fastest accurate one.
    QTest::newRow("int8 inaccurate: bfloat16")
        << probe(trial(F, 3700, 24), trial(B, 3000, 15, 0.9995), trial(I, 2000, 8, 0.98)) << B;
    // A mode that could not load is never chosen, however its (empty) figures look.
    QTest::newRow("int8 failed: bfloat16")
        << probe(trial(F, 3700, 24), trial(B, 3000, 15, 0.9999),
                 trial(I, 0, 0, 1, "no int8 engine"))
        << B;
    // A few percent is noise, not a speed-up: float32 stays.
    QTest::newRow("within noise: float32")
        << probe(trial(F, 100, 2), trial(B, 98, 1.95, 0.99999), trial(I, 99, 1.97, 0.9999)) << F;
    // Exactly at the bar is taken.
    QTest::newRow("at the bar: bfloat16")
        << probe(trial(F, 1000, 0), trial(B, 950, 0, 0.9999), trial(I, 2000, 0, 0.9999)) << B;
    QTest::newRow("cosine exactly at the rule: int8")
        << probe(trial(F, 1000, 10), trial(B, 2000, 10), trial(I, 500, 5, kMinLogitsCosine)) << I;
    // Only float32 measured (a package whose reduced modes were not tried).
    QTest::newRow("float32 only") << PrecisionProbe{"cpu", "pkg", {trial(F, 10, 1)}} << F;
}

void TestAutoPrecision::choice() {
    QFETCH(PrecisionProbe, probe);
    QFETCH(Precision, expected);
    const PrecisionChoice c = choosePrecision(probe);
    QCOMPARE(name(c.precision), name(expected));
    // The sentence names what was picked, and the options list every mode measured.
    QVERIFY2(c.reason.find(std::string("Automatic precision: ") + name(expected)) == 0,
             c.reason.c_str());
    QCOMPARE(c.options.size(), probe.trials.size());
    QVERIFY(!c.probed);
}

void TestAutoPrecision::slowerModesShowTheirCost() {
    // The LibTorch path's figures: bfloat16 and int8 cost several times float32's answer.
    const PrecisionChoice c = choosePrecision(
        probe(trial(Precision::Float32, 3700, 24), trial(Precision::BFloat16, 3600, 123, 0.99998),
              trial(Precision::Int8, 3900, 177, 0.99988)));
    const PrecisionOption& b = option(c, Precision::BFloat16);
    const PrecisionOption& i = option(c, Precision::Int8);
    // (3600 + 32 * 123) / (3700 + 32 * 24) = 1.66; (3900 + 32 * 177) / 4468 = 2.14
    QVERIFY(std::abs(b.cost - 7536.0 / 4468.0) < 1e-9);
    QVERIFY(std::abs(i.cost - 9564.0 / 4468.0) < 1e-9);
    QCOMPARE(QString::fromStdString(b.note), QString("1.7x slower than float32 on this CPU"));
    QCOMPARE(QString::fromStdString(i.note), QString("2.1x slower than float32 on this CPU"));
    QVERIFY2(c.reason.find("bfloat16 1.69x") != std::string::npos, c.reason.c_str());
    // A faster mode that fails the accuracy rule is named as such, with its cosine.
    const PrecisionChoice d = choosePrecision(
        probe(trial(Precision::Float32, 1000, 10), trial(Precision::BFloat16, 2000, 20),
              trial(Precision::Int8, 500, 5, 0.95)));
    QCOMPARE(name(d.precision), "float32");
    QVERIFY(!option(d, Precision::Int8).accurate);
    QVERIFY2(d.reason.find("int8 would be faster but changes the answers (logits cosine 0.9500)") !=
                 std::string::npos,
             d.reason.c_str());
    // The faster one says how much.
    const PrecisionChoice e = choosePrecision(
        probe(trial(Precision::Float32, 1000, 10), trial(Precision::BFloat16, 1000, 10),
              trial(Precision::Int8, 500, 5, 0.9999)));
    QCOMPARE(QString::fromStdString(option(e, Precision::Int8).note),
             QString("0.50x float32's time on this CPU"));
    QCOMPARE(QString::fromStdString(option(e, Precision::BFloat16).note),
             QString("as fast as float32 on this CPU"));
}

void TestAutoPrecision::noFloat32IsRefused() {
    QVERIFY_THROWS_EXCEPTION(EngineError, choosePrecision(PrecisionProbe{"c", "p", {}}));
    QVERIFY_THROWS_EXCEPTION(
        EngineError, choosePrecision(PrecisionProbe{
                         "c", "p", {trial(Precision::Float32, 0, 0, 1, "out of memory")}}));
}

void TestAutoPrecision::differentLoadsAreSaid() {
    using P = Precision;
    // A steady busy program slows every mode alike: the ratios hold, nothing to say.
    PrecisionProbe steady = probe(loaded(trial(P::Float32, 1000, 10), 0.9),
                                  loaded(trial(P::BFloat16, 900, 6, 0.9999), 1.0),
                                  loaded(trial(P::Int8, 600, 5, 0.9999), 1.1));
    QVERIFY(!measuredUnderDifferentLoads(steady));
    QVERIFY(choosePrecision(steady).reason.find("load") == std::string::npos);
    // One that started while int8 was measured.
    PrecisionProbe changed = probe(loaded(trial(P::Float32, 1000, 10), 0.05),
                                   loaded(trial(P::BFloat16, 900, 6, 0.9999), 0.1),
                                   loaded(trial(P::Int8, 1100, 12, 0.9999), 0.95));
    QVERIFY(measuredUnderDifferentLoads(changed));
    changed.remeasured = true;
    const std::string reason = choosePrecision(changed).reason;
    QVERIFY2(reason.find("other programs' load changed while the precisions were measured (0.1 "
                         "to 0.9 cores busy, measured twice), so the pick may be off: it is "
                         "measured again next time") != std::string::npos,
             reason.c_str());
    QCOMPARE(name(choosePrecision(changed).precision), "bfloat16");
    // The difference is over the bound, not at it.
    changed.trials[2].otherCores = 0.05 + kMaxLoadDifferenceCores;
    QVERIFY(!measuredUnderDifferentLoads(changed));
    // A mode that failed, or whose load was not read (-1, a cache from before), does not count.
    PrecisionProbe partial = probe(loaded(trial(P::Float32, 1000, 10), 0.1),
                                   loaded(trial(P::BFloat16, 0, 0, 1, "cannot run"), 1.5),
                                   loaded(trial(P::Int8, 600, 5, 0.9999), -1));
    QVERIFY(!measuredUnderDifferentLoads(partial));
}

void TestAutoPrecision::otherProgramsLoadCountsOthers() {
    // A program spinning beside this one for half a second is a good part of a core's worth
    // (more if others are busy too); this process only sleeps meanwhile.
    QProcess spinner;
    spinner.start("/bin/sh", {"-c", "while :; do :; done"});
    QVERIFY(spinner.waitForStarted());
    QTest::qWait(100);
    const OtherProgramsLoad load;
    QThread::msleep(600);
    const double cores = load.cores();
    spinner.kill();
    spinner.waitForFinished();
    QVERIFY2(cores >= 0.3, qPrintable(QString::number(cores)));
}

void TestAutoPrecision::settingWords() {
    QVERIFY(!parsePrecisionSetting("auto").has_value());
    QVERIFY(!parsePrecisionSetting("automatic").has_value());
    QCOMPARE(name(*parsePrecisionSetting("fp32")), "float32");
    QCOMPARE(name(*parsePrecisionSetting("bfloat16")), "bfloat16");
    QCOMPARE(name(*parsePrecisionSetting("int8")), "int8");
    try {
        parsePrecisionSetting("int4");
        QFAIL("int4 was accepted");
    } catch (const EngineError& e) {
        QCOMPARE(QString(e.what()),
                 QString("precision 'int4' is not auto, float32, bfloat16 or int8"));
    }
}

void TestAutoPrecision::cacheRoundTrip() {
    QTemporaryDir home;
    QVERIFY(home.isValid());
    qputenv("XDG_CACHE_HOME", home.path().toUtf8());
    QCOMPARE(QString::fromStdString(precisionProbeCachePath()),
             home.path() + "/florence-studio/precision-probes.json");
    QVERIFY(!cachedPrecisionProbe("cpu A", "pkg").has_value());
    PrecisionProbe a{"cpu A", "pkg", {trial(Precision::Float32, 3700, 24),
                                      trial(Precision::BFloat16, 3600, 15, 0.99998),
                                      trial(Precision::Int8, 0, 0, 1, "cannot quantize")}};
    QVERIFY(storePrecisionProbe(a));
    PrecisionProbe b = a;
    b.cpu = "cpu B";
    b.trials[1].stepMs = 123;
    QVERIFY(storePrecisionProbe(b));
    // Keyed by CPU and package: each reads back its own, another package has none.
    const std::optional<PrecisionProbe> gotA = cachedPrecisionProbe("cpu A", "pkg");
    const std::optional<PrecisionProbe> gotB = cachedPrecisionProbe("cpu B", "pkg");
    QVERIFY(gotA && gotB);
    QVERIFY(!cachedPrecisionProbe("cpu A", "other package").has_value());
    QCOMPARE(gotA->trials.size(), size_t(3));
    QCOMPARE(gotA->trials[1].stepMs, 15.0);
    QCOMPARE(gotA->trials[1].logitsCosine, 0.99998);
    QCOMPARE(QString::fromStdString(gotA->trials[2].error), QString("cannot quantize"));
    QCOMPARE(gotB->trials[1].stepMs, 123.0);
    QCOMPARE(name(choosePrecision(*gotA).precision), "bfloat16");
    QCOMPARE(gotA->trials[0].otherCores, 0.0);
    QVERIFY(!gotA->remeasured);
    QCOMPARE(name(choosePrecision(*gotB).precision), "float32");
    // Measuring again replaces the old figures of that key, not the others'.
    b.trials[1].stepMs = 10;
    QVERIFY(storePrecisionProbe(b));
    QCOMPARE(cachedPrecisionProbe("cpu B", "pkg")->trials[1].stepMs, 10.0);
    QCOMPARE(cachedPrecisionProbe("cpu A", "pkg")->trials[1].stepMs, 15.0);
    // The loads the modes were measured under, and whether they were measured twice.
    b.remeasured = true;
    b.trials[0].otherCores = 0.25;
    QVERIFY(storePrecisionProbe(b));
    QVERIFY(cachedPrecisionProbe("cpu B", "pkg")->remeasured);
    QCOMPARE(cachedPrecisionProbe("cpu B", "pkg")->trials[0].otherCores, 0.25);
    qunsetenv("XDG_CACHE_HOME");
}

void TestAutoPrecision::unreadableCacheIsNone() {
    QTemporaryDir home;
    QVERIFY(home.isValid());
    qputenv("XDG_CACHE_HOME", home.path().toUtf8());
    QVERIFY(QDir().mkpath(home.path() + "/florence-studio"));
    QFile f(QString::fromStdString(precisionProbeCachePath()));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"probes\": [{\"cpu\": \"c\", \"package\": \"p\", \"trials\": "
            "[{\"precision\": \"int4\"}]}]} trailing");
    f.close();
    // Not JSON: nothing cached, and storing starts the file again.
    QVERIFY(!cachedPrecisionProbe("c", "p").has_value());
    QVERIFY(storePrecisionProbe(PrecisionProbe{"c", "p", {trial(Precision::Float32, 1, 1)}}));
    QVERIFY(cachedPrecisionProbe("c", "p").has_value());
    // JSON naming a precision this program does not know: measured again.
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write("{\"probes\": [{\"cpu\": \"c\", \"package\": \"p\", \"trials\": "
            "[{\"precision\": \"int4\"}]}]}");
    f.close();
    QVERIFY(!cachedPrecisionProbe("c", "p").has_value());
    // Written before the loads were kept: read, the loads unknown.
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write("{\"probes\": [{\"cpu\": \"c\", \"package\": \"p\", \"trials\": "
            "[{\"precision\": \"float32\", \"first_token_ms\": 5, \"step_ms\": 1}]}]}");
    f.close();
    const std::optional<PrecisionProbe> old = cachedPrecisionProbe("c", "p");
    QVERIFY(old.has_value());
    QCOMPARE(old->trials.at(0).otherCores, -1.0);
    QVERIFY(!measuredUnderDifferentLoads(*old));
    qunsetenv("XDG_CACHE_HOME");
}

// A second window (or a command) whose model is not in the cache while another process measures:
// it waits instead of measuring beside it, then takes what the other kept; closing it while it
// waits ends the wait. Here this test holds the lock as the other process would.
void TestAutoPrecision::oneProcessMeasuresAtATime() {
    QTemporaryDir home;
    QVERIFY(home.isValid());
    qputenv("XDG_CACHE_HOME", home.path().toUtf8());
    const std::string model = bundledModelDir();
    QVERIFY(QDir().mkpath(home.path() + "/florence-studio"));
    QCOMPARE(QString::fromStdString(precisionProbeLockPath()),
             home.path() + "/florence-studio/precision-probes.json.lock");
    QLockFile other(QString::fromStdString(precisionProbeLockPath()));
    QVERIFY(other.tryLock());

    std::mutex m;
    std::vector<std::string> stages;
    const auto said = [&](const std::string& stage) {
        std::lock_guard<std::mutex> lock(m);
        stages.push_back(stage);
    };
    const auto count = [&] {
        std::lock_guard<std::mutex> lock(m);
        return stages.size();
    };
    std::atomic<bool> cancel{false};
    std::future<PrecisionChoice> waiting;
    // A check that fails returns at once: the waiting thread must end, not block the future.
    const auto stop = qScopeGuard([&] {
        cancel = true;
        if (other.isLocked())
            other.unlock();
        if (waiting.valid())
            waiting.wait();
    });
    waiting =
        std::async(std::launch::async, [&] { return automaticPrecision(model, 1, &cancel, said); });
    QTRY_VERIFY_WITH_TIMEOUT(count() > 0, 60000);
    // What the other process keeps when it is done: int8 for this CPU and package.
    QVERIFY(storePrecisionProbe(
        PrecisionProbe{precisionProbeCpuKey(),
                       precisionProbePackageKey(model),
                       {trial(Precision::Float32, 100, 10), trial(Precision::BFloat16, 100, 9),
                        trial(Precision::Int8, 50, 5, 0.9995)}}));
    QCOMPARE(waiting.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout);
    other.unlock();
    const PrecisionChoice got = waiting.get();
    QCOMPARE(name(got.precision), "int8");
    QVERIFY(!got.probed);
    QVERIFY(got.kept);
    QCOMPARE(stages.size(), size_t(1)); // it waited and measured nothing
    QCOMPARE(QString::fromStdString(stages[0]),
             QString("waiting for another window or command that is measuring"));

    // Cancelled while it waits (the window closed): it stops waiting, nothing measured.
    QVERIFY(QFile::remove(QString::fromStdString(precisionProbeCachePath())));
    QVERIFY(other.tryLock());
    stages.clear();
    waiting =
        std::async(std::launch::async, [&] { return automaticPrecision(model, 1, &cancel, said); });
    QTRY_VERIFY_WITH_TIMEOUT(count() > 0, 60000);
    cancel = true;
    try {
        waiting.get();
        QFAIL("a cancelled wait gave a choice");
    } catch (const EngineError& e) {
        QVERIFY2(QString(e.what()).contains("cancelled"), e.what());
    }
    QCOMPARE(stages.size(), size_t(1));
    other.unlock();

    // The other process measured while other programs' load kept changing: it stores that for
    // the one waiting, which takes it (the windows agree, nothing is measured twice) without
    // keeping it; a later start, waiting for nobody, measures again.
    const PrecisionProbe unsteady{precisionProbeCpuKey(),
                                  precisionProbePackageKey(model),
                                  {loaded(trial(Precision::Float32, 100, 10), 0.1),
                                   loaded(trial(Precision::BFloat16, 100, 9), 1.0),
                                   loaded(trial(Precision::Int8, 50, 5, 0.9995), 0.1)},
                                  true};
    QVERIFY(other.tryLock());
    stages.clear();
    cancel = false;
    waiting =
        std::async(std::launch::async, [&] { return automaticPrecision(model, 1, &cancel, said); });
    QTRY_VERIFY_WITH_TIMEOUT(count() > 0, 60000);
    QVERIFY(storePrecisionProbe(unsteady));
    other.unlock();
    const PrecisionChoice borrowed = waiting.get();
    QCOMPARE(name(borrowed.precision), "int8");
    QVERIFY(!borrowed.probed && !borrowed.kept);
    QVERIFY2(borrowed.reason.find("measured again next time") != std::string::npos,
             borrowed.reason.c_str());
    QCOMPARE(stages.size(), size_t(1));
    // Not taken by a process that did not wait for it: this one waits for the lock instead.
    QVERIFY(other.tryLock());
    stages.clear();
    waiting =
        std::async(std::launch::async, [&] { return automaticPrecision(model, 1, &cancel, said); });
    QTRY_VERIFY_WITH_TIMEOUT(count() > 0, 60000);
    QCOMPARE(QString::fromStdString(stages.at(0)),
             QString("waiting for another window or command that is measuring"));
    cancel = true;
    QVERIFY_THROWS_EXCEPTION(EngineError, waiting.get());
    other.unlock();
    // Nor, the lock free, when it was stored before this process looked (a start that measured
    // under changing load, then nobody): this one measures (cancelled as it begins).
    {
        QFile file(QString::fromStdString(precisionProbeCachePath()));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QJsonObject root = QJsonDocument::fromJson(file.readAll()).object();
        file.close();
        QJsonArray probes = root["probes"].toArray();
        QJsonObject old = probes.at(0).toObject();
        old["measured_at_ms"] = 1.0;
        probes.replace(0, old);
        root["probes"] = probes;
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.write(QJsonDocument(root).toJson());
    }
    stages.clear();
    cancel = false;
    const auto cancelWhenMeasuring = [&](const std::string& stage) {
        said(stage);
        if (stage.rfind("measuring", 0) == 0)
            cancel = true;
    };
    QVERIFY_THROWS_EXCEPTION(EngineError,
                             automaticPrecision(model, 1, &cancel, cancelWhenMeasuring));
    QCOMPARE(QString::fromStdString(stages.at(0)), QString("measuring float32"));
    qunsetenv("XDG_CACHE_HOME");
}

QTEST_GUILESS_MAIN(TestAutoPrecision)
#include "TestAutoPrecision.moc"
