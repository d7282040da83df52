// The engine against the original Florence-2 code: the fixture checkpoint, imported through the
// exporter from both weight formats, must reproduce the reference image features, encoder
// outputs, logits and every greedily generated token, with and without the key/value cache.
// Also: beam search in both modes, streaming, cancel, feature reuse and every promised error.
#include <florence/engine.h>
#include <florence/image.h>
#include <florence/importer.h>
#include <florence/package.h>
#include "Ops.h"
#include <florence/safetensors.h>
#include <florence/tasks.h>

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <fcntl.h>
#include <sys/stat.h>

using namespace florence;

namespace {

const QString kFixture = QStringLiteral(FLORENCE_TEST_DATA_DIR "/florence2-tiny-random");

std::vector<int64_t> toIds(const QJsonArray& a) {
    std::vector<int64_t> v;
    for (const auto& x : a)
        v.push_back(x.toInteger());
    return v;
}

void copyDir(const QString& from, const QString& to) {
    QDir().mkpath(to);
    for (const QFileInfo& fi : QDir(from).entryInfoList(QDir::Files))
        QVERIFY(QFile::copy(fi.filePath(), to + "/" + fi.fileName()));
}

template <typename F> QString engineErrorOf(F&& f) {
    try {
        f();
    } catch (const EngineError& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return QStringLiteral("wrong exception type: ") + e.what();
    }
    return QStringLiteral("no error");
}

struct TaskRef {
    QString token;
    std::string prompt;
    std::vector<int64_t> inputIds;
    std::vector<int64_t> generated;
    std::string text;
};

} // namespace

class TestEngine : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_tmp;
    std::shared_ptr<const Model> m_models[2]; // 0: pytorch_model.bin, 1: model.safetensors
    std::vector<TaskRef> m_tasks;
    std::vector<float> m_pixels;
    SafetensorsFile m_ref;

    const Model& model(int format) { return *m_models[format]; }

private slots:
    void initTestCase();
    void imageFeatures_data();
    void imageFeatures();
    void encoderAndLogits_data();
    void encoderAndLogits();
    void fullLogits();
    void greedyGeneration_data();
    void greedyGeneration();
    void beamCachedMatchesUncached_data();
    void beamCachedMatchesUncached();
    void streamingTextIsUtf8Safe();
    void cancelMidRun_data();
    void cancelMidRun();
    void callbackStops();
    void cancelBeforeDecoding();
    void featureReuse();
    void encodeImageAheadOfRun();
    void encodePromptAheadOfRun_data();
    void encodePromptAheadOfRun();
    void verifiedRecordKeepsRecentEntries();
    void batchEqualsOneByOne_data();
    void batchEqualsOneByOne();
    void realImageRuns();
    void sharedEmbedding_data();
    void sharedEmbedding();
    void int8FixtureTokens();
    void badPackages_data();
    void badPackages();
    void badRequests_data();
    void badRequests();
    void importErrors_data();
    void importErrors();
};

void TestEngine::initTestCase() {
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    QVERIFY(m_tmp.isValid());

    // The fixture as published (pytorch_model.bin, tied weights under all four names).
    ImportJobParams job;
    job.hfDir = kFixture.toStdString();
    job.outDir = (m_tmp.path() + "/pkg-bin").toStdString();
    runImport(job);

    // The same weights as model.safetensors with the embedding stored once.
    QProcess convert;
    convert.start(FLORENCE_PYTHON,
                  {FLORENCE_SOURCE_DIR "/tests/engine/make_safetensors_checkpoint.py", kFixture,
                   m_tmp.path() + "/hf-st"});
    QVERIFY(convert.waitForFinished(120000));
    QCOMPARE(convert.exitCode(), 0);
    QVERIFY(QFile::exists(m_tmp.path() + "/hf-st/model.safetensors"));
    QVERIFY(!QFile::exists(m_tmp.path() + "/hf-st/pytorch_model.bin"));
    job.hfDir = (m_tmp.path() + "/hf-st").toStdString();
    job.outDir = (m_tmp.path() + "/pkg-st").toStdString();
    runImport(job);

    m_models[0] = Model::load(m_tmp.path().toStdString() + "/pkg-bin");
    m_models[1] = Model::load(m_tmp.path().toStdString() + "/pkg-st");

    m_ref = SafetensorsFile::open((kFixture + "/reference.safetensors").toStdString());
    m_pixels = m_ref.toFloat("pixel_values");

    QFile f(kFixture + "/reference.json");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject tasks = QJsonDocument::fromJson(f.readAll()).object()["tasks"].toObject();
    for (const char* token : {"<CAPTION>", "<OD>", "<OCR_WITH_REGION>",
                              "<CAPTION_TO_PHRASE_GROUNDING>", "<REGION_TO_DESCRIPTION>"}) {
        const QJsonObject t = tasks[token].toObject();
        m_tasks.push_back({token, t["prompt"].toString().toStdString(),
                           toIds(t["input_ids"].toArray()), toIds(t["generated"].toArray()),
                           t["text"].toString().toStdString()});
    }
    QCOMPARE(m_tasks.size(), size_t(5));
}

void TestEngine::imageFeatures_data() {
    QTest::addColumn<int>("format");
    QTest::newRow("pytorch_model.bin") << 0;
    QTest::newRow("model.safetensors") << 1;
}

void TestEngine::imageFeatures() {
    QFETCH(int, format);
    Session s(m_models[format]);
    const FloatArray f = s.imageFeatures(m_pixels);
    const std::vector<float> ref = m_ref.toFloat("image_features");
    QCOMPARE(f.shape, (std::vector<int64_t>{1, 577, 64}));
    QCOMPARE(f.data.size(), ref.size());
    double maxDiff = 0;
    for (size_t i = 0; i < ref.size(); ++i)
        maxDiff = std::max(maxDiff, double(std::abs(f.data[i] - ref[i])));
    qInfo() << "image features max diff" << maxDiff;
    QVERIFY2(maxDiff < 1e-3, qPrintable(QString::number(maxDiff)));
}

void TestEngine::encoderAndLogits_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<int>("task");
    for (int format = 0; format < 2; ++format)
        for (int t = 0; t < 5; ++t)
            QTest::addRow("%s %d", format ? "safetensors" : "bin", t) << format << t;
}

void TestEngine::encoderAndLogits() {
    QFETCH(int, format);
    QFETCH(int, task);
    const TaskRef& t = m_tasks[task];
    QCOMPARE(model(format).tokenizer().encode(t.prompt), t.inputIds);
    Session s(m_models[format]);

    const FloatArray h = s.encoderHidden(m_pixels, t.inputIds);
    const std::string key = "task" + std::to_string(task);
    const std::vector<float> refH = m_ref.toFloat(key + ".encoder_hidden");
    QCOMPARE(h.data.size(), refH.size());
    double maxDiff = 0;
    for (size_t i = 0; i < refH.size(); ++i)
        maxDiff = std::max(maxDiff, double(std::abs(h.data[i] - refH[i])));
    QVERIFY2(maxDiff < 1e-3, qPrintable(QString("encoder max diff %1").arg(maxDiff)));

    // One decoder pass over generated[:-1]; the reference keeps the 16 best logits per step.
    std::vector<int64_t> dec(t.generated.begin(), t.generated.end() - 1);
    const FloatArray logits = s.decoderLogits(m_pixels, t.inputIds, dec);
    const int64_t vocab = logits.shape[1];
    QCOMPARE(logits.shape[0], int64_t(dec.size()));
    const std::vector<int64_t> topIds = m_ref.toInt64(key + ".decoder_top16_ids");
    const std::vector<float> topValues = m_ref.toFloat(key + ".decoder_top16_values");
    double maxLogitDiff = 0;
    for (size_t step = 0; step < dec.size(); ++step)
        for (int k = 0; k < 16; ++k) {
            const float v = logits.data[step * vocab + topIds[step * 16 + k]];
            maxLogitDiff = std::max(maxLogitDiff, double(std::abs(v - topValues[step * 16 + k])));
        }
    QVERIFY2(maxLogitDiff < 1e-3,
             qPrintable(QString("top-16 logits max diff %1").arg(maxLogitDiff)));
}

void TestEngine::fullLogits() {
    // task0's logits are stored whole, as f16: compare within f16's rounding of each value.
    const TaskRef& t = m_tasks[0];
    Session s(m_models[0]);
    std::vector<int64_t> dec(t.generated.begin(), t.generated.end() - 1);
    const FloatArray logits = s.decoderLogits(m_pixels, t.inputIds, dec);
    const std::vector<float> ref = m_ref.toFloat("task0.decoder_logits");
    QCOMPARE(logits.data.size(), ref.size());
    int64_t outside = 0;
    double maxDiff = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double d = std::abs(logits.data[i] - ref[i]);
        maxDiff = std::max(maxDiff, d);
        const double f16Step = std::ldexp(1.0, std::ilogb(std::max(std::abs(ref[i]), 1e-4f)) - 10);
        if (d > 1e-3 + f16Step)
            ++outside;
    }
    qInfo() << "full logits max diff" << maxDiff;
    QCOMPARE(outside, int64_t(0));
}

void TestEngine::greedyGeneration_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<int>("task");
    QTest::addColumn<bool>("cache");
    for (int format = 0; format < 2; ++format)
        for (int t = 0; t < 5; ++t)
            for (bool cache : {true, false})
                QTest::addRow("%s task%d %s", format ? "safetensors" : "bin", t,
                              cache ? "cache" : "no-cache")
                    << format << t << cache;
}

void TestEngine::greedyGeneration() {
    QFETCH(int, format);
    QFETCH(int, task);
    QFETCH(bool, cache);
    const TaskRef& t = m_tasks[task];
    Session s(m_models[format]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = t.prompt;
    GenerationOptions o = model(format).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    o.useCache = cache;
    int events = 0;
    double visionMs = -1;
    const Result r = s.generate(req, o, [&](const TokenEvent& e) {
        ++events;
        visionMs = e.visionMs;
        return true;
    });
    QCOMPARE(visionMs, r.timings.visionMs); // stage timings arrive with the tokens
    QCOMPARE(r.promptIds, t.inputIds);
    QCOMPARE(r.generatedIds, t.generated);
    QCOMPARE(r.text, t.text);
    QCOMPARE(events, int(t.generated.size()) - 1);
    QCOMPARE(r.timings.stepMs.size(), t.generated.size() - 1);
    QVERIFY(!r.cancelled);

    // One log-probability per generated token: forced tokens (<s> first, </s> at the limit) are
    // certain, and every other is at least its raw log-softmax (the logits processors only take
    // probability away from other tokens).
    QCOMPARE(r.tokenLogprobs.size(), t.generated.size() - 1);
    QCOMPARE(r.tokenLogprobs.front(), 0.0f);
    if (int(t.generated.size()) - 1 == o.maxNewTokens)
        QCOMPARE(r.tokenLogprobs.back(), 0.0f);
    const std::vector<int64_t> decoderIds(t.generated.begin(), t.generated.end() - 1);
    const FloatArray logits = s.decoderLogits(m_pixels, t.inputIds, decoderIds);
    const int64_t vocab = logits.shape.back();
    for (size_t i = 0; i < r.tokenLogprobs.size(); ++i) {
        const float lp = r.tokenLogprobs[i];
        QVERIFY2(std::isfinite(lp) && lp <= 1e-6f, qPrintable(QString::number(lp)));
        const float* row = logits.data.data() + i * vocab;
        const float top = *std::max_element(row, row + vocab);
        double sum = 0;
        for (int64_t v = 0; v < vocab; ++v)
            sum += std::exp(double(row[v]) - top);
        const double raw = double(row[t.generated[i + 1]]) - top - std::log(sum);
        QVERIFY2(lp >= raw - 1e-3, qPrintable(QStringLiteral("step %1: %2 < raw %3")
                                                   .arg(i)
                                                   .arg(double(lp))
                                                   .arg(raw)));
    }
}

void TestEngine::beamCachedMatchesUncached_data() {
    QTest::addColumn<int>("task");
    QTest::addColumn<int>("beams");
    QTest::addColumn<int>("maxNew");
    QTest::newRow("caption 3 beams") << 0 << 3 << 40;
    QTest::newRow("od 3 beams") << 1 << 3 << 40;
    QTest::newRow("grounding 4 beams") << 3 << 4 << 30;
    QTest::newRow("region 2 beams") << 4 << 2 << 30;
}

void TestEngine::beamCachedMatchesUncached() {
    QFETCH(int, task);
    QFETCH(int, beams);
    QFETCH(int, maxNew);
    Session s(m_models[0]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = m_tasks[task].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = beams;
    o.maxNewTokens = maxNew;
    o.useCache = true;
    std::vector<int64_t> lastShown;
    const Result cached = s.generate(req, o, [&](const TokenEvent& e) {
        lastShown = e.sequence;
        return true;
    });
    o.useCache = false;
    const Result full = s.generate(req, o);
    QCOMPARE(cached.generatedIds, full.generatedIds);
    QVERIFY(std::abs(cached.score - full.score) < 1e-3);
    // The returned beam's token log-probabilities: the same with and without the cache, and
    // they add up to its beam score (the sum over its tokens divided by its length to the power
    // of the length penalty, as Hugging Face scores a finished hypothesis).
    QCOMPARE(cached.tokenLogprobs.size(), cached.generatedIds.size() - 1);
    QCOMPARE(full.tokenLogprobs.size(), cached.tokenLogprobs.size());
    double sum = 0;
    for (size_t i = 0; i < cached.tokenLogprobs.size(); ++i) {
        QVERIFY(std::isfinite(cached.tokenLogprobs[i]) && cached.tokenLogprobs[i] <= 1e-6f);
        QVERIFY(std::abs(cached.tokenLogprobs[i] - full.tokenLogprobs[i]) < 1e-4);
        sum += cached.tokenLogprobs[i];
    }
    const double length = double(cached.generatedIds.size()) - 1;
    QVERIFY2(std::abs(sum - cached.score * std::pow(length, o.lengthPenalty)) < 1e-3,
             qPrintable(QStringLiteral("sum %1, score %2").arg(sum).arg(cached.score)));
    QCOMPARE(cached.generatedIds.front(), int64_t(2));
    QCOMPARE(cached.generatedIds[1], int64_t(0)); // forced <s>
    QCOMPARE(cached.generatedIds.back(), int64_t(2));
    QVERIFY(int(cached.generatedIds.size()) <= maxNew + 1);
    // What was streamed last is what was returned.
    QCOMPARE(lastShown, cached.generatedIds);
}

void TestEngine::streamingTextIsUtf8Safe() {
    // Task 4's answer has a character split across tokens ("の�").
    Session s(m_models[0]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = m_tasks[4].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    std::string streamed;
    const Result r = s.generate(req, o, [&](const TokenEvent& e) {
        if (e.rewound)
            streamed.clear();
        streamed += e.textDelta;
        // Every delta is whole UTF-8: a QString round trip keeps it byte for byte.
        const QString q = QString::fromUtf8(e.textDelta.data(), int(e.textDelta.size()));
        if (q.toUtf8().toStdString() != e.textDelta)
            return false;
        return true;
    });
    QVERIFY(!r.cancelled);
    QCOMPARE(streamed, r.text);
}

void TestEngine::cancelMidRun_data() {
    QTest::addColumn<bool>("cache");
    QTest::addColumn<int>("beams");
    QTest::newRow("greedy cached") << true << 1;
    QTest::newRow("greedy uncached") << false << 1;
    QTest::newRow("beams cached") << true << 3;
    QTest::newRow("beams uncached") << false << 3;
}

void TestEngine::cancelMidRun() {
    QFETCH(bool, cache);
    QFETCH(int, beams);
    Session s(m_models[0]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = m_tasks[0].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = beams;
    o.maxNewTokens = 1024;
    o.ignoreEos = true; // would run 1024 steps if the cancel were ignored
    o.useCache = cache;
    std::atomic<bool> cancel{false};
    const Result r = s.generate(
        req, o,
        [&](const TokenEvent& e) {
            if (e.step == 4)
                cancel = true;
            return true;
        },
        &cancel);
    QVERIFY(r.cancelled);
    QCOMPARE(r.timings.stepMs.size(), size_t(5));
    // Promptly: the step after the cancel is not run (the count, not wall time, which depends on
    // the machine's load).
    QCOMPARE(r.generatedIds.size(), size_t(6)); // start token + the 5 generated before cancel
}

void TestEngine::callbackStops() {
    Session s(m_models[0]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = m_tasks[1].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    const Result r = s.generate(req, o, [](const TokenEvent& e) { return e.step < 2; });
    QVERIFY(r.cancelled);
    QCOMPARE(r.generatedIds.size(), size_t(4));
    QCOMPARE(r.generatedIds,
             std::vector<int64_t>(m_tasks[1].generated.begin(), m_tasks[1].generated.begin() + 4));
}

void TestEngine::cancelBeforeDecoding() {
    // A cancel that arrives while the image is being prepared skips the encoders.
    Session s(m_models[0]);
    Request req;
    req.image = std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/pier.png"));
    req.prompt = m_tasks[0].prompt;
    std::atomic<bool> cancel{true};
    int events = 0;
    const Result r = s.generate(
        req, model(0).defaultOptions(),
        [&](const TokenEvent&) {
            ++events;
            return true;
        },
        &cancel);
    QVERIFY(r.cancelled);
    QVERIFY(r.generatedIds.empty());
    QCOMPARE(r.timings.visionMs, 0.0);
    QCOMPARE(events, 0);
}

void TestEngine::verifiedRecordKeepsRecentEntries() {
    // The record of verified files (so a load does not rehash a 1 GB package) is capped at 200
    // entries; the cap must drop the oldest, never the one just added, or a package in use is
    // hashed again on every load once the record is full.
    QTemporaryDir cache;
    QVERIFY(cache.isValid());
    const QByteArray oldCache = qgetenv("XDG_CACHE_HOME");
    qputenv("XDG_CACHE_HOME", cache.path().toUtf8());
    const QString dir = m_tmp.path() + "/record-pkg";
    QVERIFY(QDir().mkpath(dir));
    const QString file = dir + "/weights.bin";
    {
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("hello");
    }
    Manifest m;
    m.dir = dir.toStdString();
    PackageFile pf;
    pf.name = "weights.bin";
    pf.size = 5;
    pf.sha256 = sha256File(file.toStdString());
    m.files["vision"] = pf;
    // 250 older entries that sort after any hex digest.
    const QString record = cache.path() + "/florence-studio/verified-files.txt";
    QVERIFY(QDir().mkpath(cache.path() + "/florence-studio"));
    {
        QFile f(record);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Text));
        for (int i = 0; i < 250; ++i)
            f.write(QStringLiteral("~old %1\n").arg(i, 3, 10, QLatin1Char('0')).toUtf8());
    }
    verifyPackageFiles(m);
    QFile f(record);
    QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    f.close();
    QCOMPARE(lines.size(), 200);
    QCOMPARE(lines.first(), QStringLiteral("~old 051"));
    QVERIFY2(lines.last().endsWith(QFileInfo(file).absoluteFilePath()), qPrintable(lines.last()));
    // Verified again unchanged: the record stays as it was (nothing rehashed or added).
    verifyPackageFiles(m);
    {
        QFile again(record);
        QVERIFY(again.open(QIODevice::ReadOnly | QIODevice::Text));
        QCOMPARE(QString::fromUtf8(again.readAll()).split('\n', Qt::SkipEmptyParts), lines);
    }
    // Changed in place, same size, and its modification time set back to the nanosecond (after
    // the bytes are on disk: the write is closed first): the status-change time moved, so the
    // record no longer matches, the file is hashed again and refused.
    struct stat before {};
    QCOMPARE(::stat(QFile::encodeName(file).constData(), &before), 0);
    {
        QFile w(file);
        QVERIFY(w.open(QIODevice::ReadWrite));
        QCOMPARE(w.write("HELLO"), qint64(5));
    }
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    QCOMPARE(::utimensat(AT_FDCWD, QFile::encodeName(file).constData(), times, 0), 0);
    struct stat after {};
    QCOMPARE(::stat(QFile::encodeName(file).constData(), &after), 0);
    QCOMPARE(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    QCOMPARE(after.st_size, before.st_size);
    QVERIFY_THROWS_EXCEPTION(PackageError, verifyPackageFiles(m));
    QVERIFY_THROWS_EXCEPTION(PackageError, verifyPackageFiles(m, false));
    if (oldCache.isNull())
        qunsetenv("XDG_CACHE_HOME");
    else
        qputenv("XDG_CACHE_HOME", oldCache);
}

void TestEngine::featureReuse() {
    Session s(m_models[0]);
    Request req;
    req.image = std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/pier.png"));
    req.prompt = m_tasks[0].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    const Result first = s.generate(req, o);
    QVERIFY(!first.timings.featuresReused);
    QVERIFY(first.timings.visionMs > 0);
    req.prompt = m_tasks[1].prompt;
    const Result second = s.generate(req, o);
    QVERIFY(second.timings.featuresReused);
    QCOMPARE(second.timings.visionMs, 0.0);
    QCOMPARE(second.generatedIds, m_tasks[1].generated);
    // Without reuse the same answer comes out of a fresh vision pass.
    o.reuseFeatures = false;
    const Result third = s.generate(req, o);
    QVERIFY(!third.timings.featuresReused);
    QCOMPARE(third.generatedIds, second.generatedIds);
}

void TestEngine::encodeImageAheadOfRun() {
    // The app's encode on open: features computed before the request are what the run uses,
    // and its answer is the one a run that encodes itself gives.
    Session s(m_models[0]);
    const RgbImage pier = loadImage(FLORENCE_SAMPLES_DIR "/pier.png");
    std::atomic<bool> cancel{true};
    const ImageEncoding skipped = s.encodeImage(pier, &cancel);
    QVERIFY(skipped.cancelled);
    const ImageEncoding done = s.encodeImage(pier);
    QVERIFY(!done.cancelled && !done.alreadyEncoded);
    QVERIFY(done.visionMs > 0);
    QVERIFY(s.encodeImage(pier).alreadyEncoded);
    Request req;
    req.image = std::make_shared<const RgbImage>(pier);
    req.prompt = m_tasks[1].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    const Result ahead = s.generate(req, o);
    QVERIFY(ahead.timings.featuresReused);
    QCOMPARE(ahead.timings.visionMs, 0.0);
    QCOMPARE(ahead.generatedIds, m_tasks[1].generated);
}

void TestEngine::encodePromptAheadOfRun_data() {
    QTest::addColumn<bool>("cache");
    QTest::addColumn<int>("beams");
    QTest::newRow("cache, greedy") << true << 1;
    QTest::newRow("no cache, greedy") << false << 1;
    QTest::newRow("cache, 3 beams") << true << 3;
}

void TestEngine::encodePromptAheadOfRun() {
    // The app's encode on open with the chosen task's prompt: the text encoder's output (and
    // the cross-attention keys and values) made before Run is what a run of that prompt on that
    // image uses, with the answer of a run that encodes everything itself; any other prompt or
    // image runs the text encoder as before.
    QFETCH(bool, cache);
    QFETCH(int, beams);
    const RgbImage pier = loadImage(FLORENCE_SAMPLES_DIR "/pier.png");
    Request req;
    req.image = std::make_shared<const RgbImage>(pier);
    req.prompt = m_tasks[1].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = beams;
    o.maxNewTokens = 24;
    o.useCache = cache;
    const Result fresh = Session(m_models[0]).generate(req, o);
    if (beams == 1)
        QCOMPARE(fresh.generatedIds, m_tasks[1].generated);

    Session s(m_models[0]);
    std::atomic<bool> cancel{true};
    QVERIFY(s.encodeImage(pier, &cancel, req.prompt).cancelled);
    const ImageEncoding done = s.encodeImage(pier, nullptr, req.prompt);
    QVERIFY(done.promptEncoded && !done.promptAlreadyEncoded && !done.alreadyEncoded);
    QVERIFY(done.visionMs > 0 && done.textEncoderMs > 0);
    const ImageEncoding again = s.encodeImage(pier, nullptr, req.prompt);
    QVERIFY(again.alreadyEncoded && again.promptAlreadyEncoded);
    QCOMPARE(again.textEncoderMs, 0.0);

    const Result ahead = s.generate(req, o);
    QVERIFY(ahead.timings.promptReused && ahead.timings.featuresReused);
    QCOMPARE(ahead.timings.textEncoderMs, 0.0);
    QCOMPARE(ahead.timings.visionMs, 0.0);
    QCOMPARE(ahead.promptIds, fresh.promptIds);
    QCOMPARE(ahead.generatedIds, fresh.generatedIds);
    QCOMPARE(s.generate(req, o).generatedIds, fresh.generatedIds); // kept for the next run

    // Another prompt on the same image: the features are reused, the text encoder runs.
    Request other = req;
    other.prompt = m_tasks[2].prompt;
    const Result second = s.generate(other, o);
    QVERIFY(second.timings.featuresReused && !second.timings.promptReused);
    QVERIFY(second.timings.textEncoderMs > 0);
    if (beams == 1)
        QCOMPARE(second.generatedIds, m_tasks[2].generated);
    // Another image with the same prompt, and a run that asks for no reuse: nothing reused.
    Request flipped = req;
    flipped.image = std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/coffee.png"));
    QVERIFY(!s.generate(flipped, o).timings.promptReused);
    o.reuseFeatures = false;
    const Result without = s.generate(req, o);
    QVERIFY(!without.timings.promptReused && !without.timings.featuresReused);
    QCOMPARE(without.generatedIds, fresh.generatedIds);
}

void TestEngine::batchEqualsOneByOne_data() {
    QTest::addColumn<bool>("cache");
    QTest::newRow("cache") << true;
    QTest::newRow("no cache") << false;
}

void TestEngine::batchEqualsOneByOne() {
    QFETCH(bool, cache);
    // The five reference tasks as one batch: prompts of 8 to 18 tokens, padded to the longest.
    // Padding that leaked into attention would change the tokens.
    Session s(m_models[0]);
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    o.useCache = cache;
    std::vector<Request> reqs;
    for (const TaskRef& t : m_tasks) {
        Request r;
        r.pixelValues = m_pixels;
        r.prompt = t.prompt;
        reqs.push_back(r);
    }
    std::vector<int> events(reqs.size(), 0);
    const std::vector<Result> results = s.generateBatch(reqs, o, [&](size_t i, const TokenEvent&) {
        ++events[i];
        return true;
    });
    QCOMPARE(results.size(), m_tasks.size());
    for (size_t i = 0; i < results.size(); ++i) {
        QCOMPARE(results[i].generatedIds, m_tasks[i].generated);
        QCOMPARE(results[i].text, m_tasks[i].text);
        QCOMPARE(events[i], int(m_tasks[i].generated.size()) - 1);
    }

    // Different images, tasks of different lengths, ending at different steps.
    std::vector<Request> mixed;
    for (const char* name : {"pier.png", "chelsea.png", "coffee.png"}) {
        Request r;
        r.image = std::make_shared<const RgbImage>(
            loadImage(std::string(FLORENCE_SAMPLES_DIR "/") + name));
        mixed.push_back(r);
    }
    mixed[0].prompt = m_tasks[3].prompt;
    mixed[1].prompt = m_tasks[0].prompt;
    mixed[2].prompt = m_tasks[1].prompt;
    o.maxNewTokens = 40;
    o.reuseFeatures = false;
    const std::vector<Result> batched = s.generateBatch(mixed, o);
    for (size_t i = 0; i < mixed.size(); ++i) {
        const Result alone = s.generate(mixed[i], o);
        QCOMPARE(batched[i].generatedIds, alone.generatedIds);
    }
}

void TestEngine::realImageRuns() {
    // pier.png preprocessed in C++ gives the same tokens as the reference pixel values (the
    // resize matches PIL's to the bit), through the public request path.
    Session s(m_models[1]);
    Request req;
    req.image = std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/pier.png"));
    req.prompt =
        buildPrompt({"<OCR_WITH_REGION>", "", std::nullopt}, req.image->width, req.image->height);
    GenerationOptions o = model(1).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    const Result r = s.generate(req, o);
    QCOMPARE(r.generatedIds, m_tasks[2].generated);
    QVERIFY(r.timings.preprocessMs > 0);
    QVERIFY(r.timings.totalMs >= r.timings.decodeMs);
}

void TestEngine::int8FixtureTokens() {
    // The reference fixture's greedy tokens in int8 mode (decoder int8, encoders bfloat16: its
    // layers are all below the 512 that int8 encoders need): the cached step (the VNNI kernel,
    // four rows at most) and the uncached path (every row of the prefix at once) give the same
    // tokens, and every token that differs from the reference is listed (the README lists them
    // too).
    LoadOptions lo;
    lo.precision = Precision::Int8;
    const auto int8 = Model::load((m_tmp.path() + "/pkg-st").toStdString(), lo);
    Session s(int8);
    GenerationOptions o = int8->defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    int same = 0, total = 0;
    for (const TaskRef& t : m_tasks) {
        Request req;
        req.pixelValues = m_pixels;
        req.prompt = t.prompt;
        o.useCache = true;
        const Result cached = s.generate(req, o);
        o.useCache = false;
        QCOMPARE(s.generate(req, o).generatedIds, cached.generatedIds);
        const size_t n = std::min(cached.generatedIds.size(), t.generated.size());
        size_t first = n;
        for (size_t i = 0; i < n && first == n; ++i)
            if (cached.generatedIds[i] != t.generated[i])
                first = i;
        total += int(t.generated.size());
        same += int(first);
        if (first < n || cached.generatedIds.size() != t.generated.size())
            qInfo("int8 %s: first difference at token %d of %d: '%s' (float32 '%s')",
                  qPrintable(t.token), int(first), int(t.generated.size()), cached.text.c_str(),
                  t.text.c_str());
    }
    qInfo("int8: %d of %d reference tokens before the first difference", same, total);
}

void TestEngine::sharedEmbedding_data() {
    QTest::addColumn<int>("precision");
    QTest::newRow("float32") << int(Precision::Float32);
    QTest::newRow("bfloat16") << int(Precision::BFloat16);
    // The LM head gets an int8 copy of the shared embedding; the embedding stays float32.
    QTest::newRow("int8") << int(Precision::Int8);
}

void TestEngine::sharedEmbedding() {
    // The fixture's token embedding is one matrix (encoder, decoder, LM head): the package stores
    // it once, in decoder.pt, and the engine gives the text encoder the decoder's tensor. The
    // same package written the old way (format 1, an embedding in each file) must still load
    // and give the same tokens, from one more copy of the embedding in memory.
    QFETCH(int, precision);
    const QString shared = m_tmp.path() + "/pkg-st";
    const QString separate = m_tmp.path() + "/pkg-st-separate";
    if (!QFile::exists(separate + "/manifest.json")) {
        QProcess p;
        // The operators the package's modules call, from this build (not another build/).
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("FLORENCE_OPS_LIBRARY", QString::fromUtf8(florence_ops_library_path()));
        p.setProcessEnvironment(env);
        p.start(FLORENCE_PYTHON,
                {FLORENCE_SOURCE_DIR "/tests/engine/unshare_package.py", shared, separate});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    }
    LoadOptions options;
    options.precision = static_cast<Precision>(precision);
    const auto one = Model::load(shared.toStdString(), options);
    const auto two = Model::load(separate.toStdString(), options);
    QCOMPARE(one->manifest().formatVersion, 2);
    QCOMPARE(one->manifest().sharedParameters.size(), size_t(1));
    QCOMPARE(one->manifest().sharedParameters[0].name, std::string("encoder.embed_tokens.weight"));
    QCOMPARE(two->manifest().formatVersion, 1);
    QVERIFY(two->manifest().sharedParameters.empty());

    const Manifest& m = one->manifest();
    const int64_t embeddingBytes = int64_t(m.vocabSize) * m.dModel * 4; // float32 in memory
    QCOMPARE(two->weightBytes() - one->weightBytes(), embeddingBytes);
    const qint64 fileSaving = QFileInfo(separate + "/text_encoder.pt").size() -
                              QFileInfo(shared + "/text_encoder.pt").size();
    // The embedding's bytes, give or take the archive's per-record headers and 64-byte
    // alignment padding (which depend on where the files were written: 64 bytes short in one
    // checkout, over in another).
    QVERIFY2(fileSaving >= embeddingBytes - 4096,
             qPrintable(QStringLiteral("%1 of %2").arg(fileSaving).arg(embeddingBytes)));

    Session a(one), b(two);
    GenerationOptions o = one->defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    for (const TaskRef& t : m_tasks) {
        Request req;
        req.pixelValues = m_pixels;
        req.prompt = t.prompt;
        const Result ra = a.generate(req, o);
        QCOMPARE(ra.generatedIds, b.generate(req, o).generatedIds);
        if (options.precision == Precision::Float32)
            QCOMPARE(ra.generatedIds, t.generated);
    }
}

void TestEngine::badPackages_data() {
    QTest::addColumn<QString>("damage");
    QTest::addColumn<QString>("expected");
    QTest::newRow("missing folder") << "missing"
                                    << "does not exist";
    QTest::newRow("a file") << "file"
                            << "not a model folder";
    QTest::newRow("hugging face folder") << "hf"
                                         << "import it first";
    QTest::newRow("missing decoder") << "rm-decoder"
                                     << "lacks decoder.pt";
    QTest::newRow("truncated decoder") << "truncate-decoder"
                                       << "decoder.pt has";
    QTest::newRow("changed vision bytes") << "flip-vision"
                                          << "vision.pt does not match its checksum";
    QTest::newRow("other format version") << "version"
                                          << "format version 99";
    QTest::newRow("shared tensor missing") << "shared-missing"
                                           << "decoder.pt has no submodule decoder.nothing";
    QTest::newRow("shared tensor of another shape") << "shared-shape"
                                                    << "of another shape";
    QTest::newRow("manifest not json") << "garbage-manifest"
                                       << "manifest.json: is not valid JSON";
    QTest::newRow("empty folder") << "empty"
                                  << "lacks manifest.json";
}

void TestEngine::badPackages() {
    QFETCH(QString, damage);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString pkg = dir.path() + "/pkg";
    const QString good = m_tmp.path() + "/pkg-bin";
    QString path = pkg;
    if (damage == "missing") {
        path = dir.path() + "/nothing-here";
    } else if (damage == "file") {
        path = good + "/manifest.json";
    } else if (damage == "hf") {
        path = kFixture;
    } else if (damage == "empty") {
        QDir().mkpath(pkg);
    } else {
        copyDir(good, pkg);
        if (damage == "rm-decoder") {
            QVERIFY(QFile::remove(pkg + "/decoder.pt"));
        } else if (damage == "truncate-decoder") {
            QFile f(pkg + "/decoder.pt");
            QVERIFY(f.resize(f.size() / 2));
        } else if (damage == "flip-vision") {
            QFile f(pkg + "/vision.pt");
            QVERIFY(f.open(QIODevice::ReadWrite));
            f.seek(f.size() / 2);
            char c;
            f.getChar(&c);
            f.seek(f.size() / 2);
            f.putChar(char(c ^ 0x55));
        } else {
            QFile f(pkg + "/manifest.json");
            QVERIFY(f.open(QIODevice::ReadOnly));
            QByteArray text = f.readAll();
            f.close();
            if (damage == "version")
                text = QString::fromUtf8(text)
                           .replace(QRegularExpression("\"format_version\": \\d+"),
                                    "\"format_version\": 99")
                           .toUtf8();
            else if (damage == "shared-missing")
                text.replace("\"decoder.embed_tokens.weight\"", "\"decoder.nothing.weight\"");
            else if (damage == "shared-shape")
                text.replace("\"decoder.embed_tokens.weight\"",
                             "\"decoder.layernorm_embedding.weight\"");
            else
                text = "{ not json";
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(text);
        }
    }
    const QString err = engineErrorOf([&] { Model::load(path.toStdString()); });
    QVERIFY2(err.contains(expected), qPrintable(err));
}

void TestEngine::badRequests_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("pixel values of the wrong size") << "pixels"
                                                    << "pixel values hold";
    QTest::newRow("prompt too long") << "long"
                                     << "Shorten the text";
    QTest::newRow("zero new tokens") << "zero"
                                     << "at least 1";
    QTest::newRow("too many new tokens") << "many"
                                         << "holds at most";
    QTest::newRow("zero beams") << "beams"
                                << "beams must be";
    QTest::newRow("no image") << "noimage"
                              << "no image";
    QTest::newRow("empty image") << "emptyimage"
                                 << "no image";
}

void TestEngine::badRequests() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    Session s(m_models[0]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = m_tasks[0].prompt;
    GenerationOptions o = model(0).defaultOptions();
    if (kind == "pixels")
        req.pixelValues.resize(100);
    if (kind == "long") {
        req.prompt.clear();
        for (int i = 0; i < 600; ++i)
            req.prompt += " word";
    }
    if (kind == "zero")
        o.maxNewTokens = 0;
    if (kind == "many")
        o.maxNewTokens = 5000;
    if (kind == "beams")
        o.numBeams = 0;
    if (kind == "noimage")
        req.pixelValues.clear();
    if (kind == "emptyimage") {
        req.pixelValues.clear();
        req.image = std::make_shared<const RgbImage>();
    }
    const QString err = engineErrorOf([&] { s.generate(req, o); });
    QVERIFY2(err.contains(expected), qPrintable(err));
}

void TestEngine::importErrors_data() {
    QTest::addColumn<QString>("layout");
    QTest::addColumn<QString>("expected");
    QTest::newRow("not a folder") << "missing"
                                  << "is not a folder";
    QTest::newRow("no config") << "noconfig"
                               << "config.json is missing";
    QTest::newRow("no weights") << "noweights"
                                << "no weights found";
    QTest::newRow("truncated weights") << "truncated"
                                       << "pytorch_model.bin";
    QTest::newRow("not florence") << "wrongconfig"
                                  << "not a Florence-2 config";
}

void TestEngine::importErrors() {
    QFETCH(QString, layout);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString hf = dir.path() + "/hf";
    if (layout != "missing")
        QDir().mkpath(hf);
    if (layout == "noweights" || layout == "truncated")
        QVERIFY(QFile::copy(kFixture + "/config.json", hf + "/config.json"));
    if (layout == "truncated") {
        QVERIFY(QFile::copy(kFixture + "/pytorch_model.bin", hf + "/pytorch_model.bin"));
        QFile f(hf + "/pytorch_model.bin");
        QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner));
        QVERIFY(f.resize(1000));
    }
    if (layout == "wrongconfig") {
        QFile f(hf + "/config.json");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"model_type\": \"bert\"}");
    }
    ImportJobParams job;
    job.hfDir = hf.toStdString();
    job.outDir = (dir.path() + "/out").toStdString();
    QString err = "no error";
    try {
        runImport(job);
    } catch (const ImportError& e) {
        err = e.what();
    }
    QVERIFY2(err.contains(expected), qPrintable(err));
    QVERIFY(!QFile::exists(dir.path() + "/out/manifest.json"));
}

QTEST_GUILESS_MAIN(TestEngine)
#include "TestEngine.moc"
