// Architecture packages (format version 3): the exporter's --architecture writes Florence-2's
// modules without weight data, and the engine generates seeded random weights when it loads
// them. Checked at the tiny size against a full random package of the same size (the build also
// exports the base and large ones, which the app lists as speed demos).
#include <florence/engine.h>
#include <florence/image.h>
#include <florence/importer.h>
#include <florence/machine.h>
#include <florence/package.h>
#include <florence/paths.h>

#include "KernelPaths.h"
#include "Ops.h"
#include "PackCache.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QJsonArray>
#include <QTest>

#include <algorithm>
#include <cmath>

using namespace florence;
using florence::ops::KernelPath;
using florence::ops::kernelPathName;

class TestArchitecturePackage : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    QString m_arch, m_full;
    std::shared_ptr<const RgbImage> m_image;

    // Runs the exporter as the build does (same interpreter, this build's operators).
    bool exportArchitecture(const QString& size, const QString& out, int seed) {
        QProcess p;
        p.start(FLORENCE_PYTHON, {QString::fromStdString(exporterScript()), "--architecture", size,
                                  "--seed", QString::number(seed), "--threads", "1", "--out", out,
                                  "--ops-library",
                                  QString::fromUtf8(florence_ops_library_path())});
        if (!p.waitForFinished(300000) || p.exitCode() != 0) {
            qWarning("%s", p.readAllStandardError().constData());
            return false;
        }
        return true;
    }

    Result generate(const std::shared_ptr<const Model>& model, bool cache, int tokens) {
        Session s(model);
        Request req;
        req.image = m_image;
        req.prompt = "What does the image describe?";
        GenerationOptions o = model->defaultOptions();
        o.numBeams = 1;
        o.maxNewTokens = tokens;
        o.useCache = cache;
        return s.generate(req, o);
    }

private slots:
    void initTestCase() {
        if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
            qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
        QVERIFY(m_tmp.isValid());
        m_arch = m_tmp.path() + "/arch-tiny";
        QVERIFY(exportArchitecture("tiny", m_arch, 1234));
        ImportJobParams job;
        job.randomInit = "tiny";
        job.outDir = (m_tmp.path() + "/random-tiny").toStdString();
        runImport(job);
        m_full = QString::fromStdString(job.outDir);
        m_image = std::make_shared<const RgbImage>(
            loadImage(FLORENCE_SAMPLES_DIR "/scenes/scene_00.png"));
    }

    void smallOnDisk() {
        // No weight data: the three modules together are smaller than the tokenizer's vocab.
        qint64 modules = 0;
        for (const char* f : {"vision.pt", "text_encoder.pt", "decoder.pt"})
            modules += QFileInfo(m_arch + "/" + f).size();
        qint64 weights = 0;
        for (const char* f : {"vision.pt", "text_encoder.pt", "decoder.pt"})
            weights += QFileInfo(m_full + "/" + f).size();
        QVERIFY2(modules < weights / 4, qPrintable(QString("%1 vs %2").arg(modules).arg(weights)));
        const Manifest m = readManifest(m_arch.toStdString());
        QCOMPARE(m.formatVersion, 3);
        QCOMPARE(m.storage, std::string("none"));
        QVERIFY(m.generatesWeights());
        QVERIFY(m.ignoreEos); // speed demos generate exactly the tokens asked for
    }

    void sameParametersAsAFullPackage() {
        const auto arch = Model::load(m_arch.toStdString());
        const auto full = Model::load(m_full.toStdString());
        const auto a = arch->parameterShapes(), f = full->parameterShapes();
        QCOMPARE(a.size(), f.size());
        for (size_t i = 0; i < a.size(); ++i) {
            QCOMPARE(a[i].first, f[i].first);
            QCOMPARE(a[i].second, f[i].second);
        }
        QCOMPARE(arch->manifest().parameterCount, full->manifest().parameterCount);
        // The tied embedding is one tensor in memory here too.
        QCOMPARE(arch->weightBytes(), full->weightBytes());
    }

    void seededAndDeterministic() {
        const auto one = Model::load(m_arch.toStdString());
        const auto two = Model::load(m_arch.toStdString());
        const Result a = generate(one, true, 12);
        const Result b = generate(two, true, 12);
        QCOMPARE(a.generatedIds, b.generatedIds);
        QCOMPARE(int(a.generatedIds.size()), 13); // exactly the tokens asked for: no early end

        // Another seed, other weights: the answer changes.
        const QString other = m_tmp.path() + "/arch-tiny-seed2";
        QVERIFY(exportArchitecture("tiny", other, 2));
        const Result c = generate(Model::load(other.toStdString()), true, 12);
        QVERIFY(c.generatedIds != a.generatedIds);
    }

    void cachedMatchesUncached() {
        const auto model = Model::load(m_arch.toStdString());
        const Result cached = generate(model, true, 20);
        const Result full = generate(model, false, 20);
        QCOMPARE(cached.generatedIds, full.generatedIds);
        QCOMPARE(int(cached.generatedIds.size()), 21);
    }

    void bfloat16Loads() {
        LoadOptions o;
        o.precision = Precision::BFloat16;
        const auto model = Model::load(m_arch.toStdString(), o);
        QCOMPARE(int(generate(model, true, 4).generatedIds.size()), 5);
    }

    void int8Loads() {
        // Generated weights are filled before the decoder is quantized; cached and uncached
        // decoding (the kernels' few rows, and the many rows of the uncached path) agree.
        LoadOptions o;
        o.precision = Precision::Int8;
        const auto model = Model::load(m_arch.toStdString(), o);
        const Result cached = generate(model, true, 8);
        QCOMPARE(int(cached.generatedIds.size()), 9);
        QCOMPARE(generate(model, false, 8).generatedIds, cached.generatedIds);
    }

    void releasedModelTakesItsPackedWeights_data() {
        QTest::addColumn<int>("path");
        QTest::addRow("own kernels") << int(florence::ops::kernelPath());
        // LibTorch's class: oneDNN's int8 products, whose packed form holds its weight.
        QTest::addRow("LibTorch kernels") << int(KernelPath::Torch);
    }

    void releasedModelTakesItsPackedWeights() {
        // The operators keep a weight's packed form while it lives; a released model's go with
        // it, not at the next int8 product, which a float32 model loaded next never makes.
        QFETCH(int, path);
        const florence::test::OnPath onPath{KernelPath(path)};
        const size_t heldBefore = florence::ops::dropPacks();
        size_t heldWhileLoaded = 0;
        {
            LoadOptions o;
            o.precision = Precision::Int8;
            const auto model = Model::load(FLORENCE_BUILD_DATA_DIR "/models/speed-demo-base", o);
            QCOMPARE(int(generate(model, true, 1).generatedIds.size()), 2);
            heldWhileLoaded = florence::ops::packedFormsHeld();
        }
        if (heldWhileLoaded == heldBefore)
            QSKIP("no int8 product on this kernel path packs its weights");
        QCOMPARE(florence::ops::packedFormsHeld(), heldBefore);
    }

    void int8ModulesFollowTheWidth_data() {
        QTest::addColumn<QString>("package");
        QTest::addColumn<QStringList>("modules");
        QTest::addColumn<bool>("inaccurateProducts");
        QTest::addColumn<int>("path");
        // On the CPU's own kernel class; then base on the AVX2 and LibTorch classes.
        const int own = int(florence::ops::kernelPath());
        // tiny: no encoder product is large enough for oneDNN's int8 (both sides >= 512); on the
        // own int8 GEMM (both sides >= 128) its vision encoder's last stage, 128 wide, is
        const QStringList tiny = florence::ops::ownInt8Gemm() ? QStringList{"vision", "decoder"}
                                                              : QStringList{"decoder"};
        QTest::newRow("tiny") << QString() << tiny << false << own;
        QTest::newRow("base") << "speed-demo-base"
                              << QStringList{"vision", "text_encoder", "decoder"} << false << own;
        // large: its encoders are wider than base's and keep their precision (int8 cost them
        // too much accuracy there)
        QTest::newRow("large") << "speed-demo-large" << QStringList{"decoder"} << false << own;
        // base where bfloat16 products sum in bfloat16: the encoders stay float32, with int8
        // products on the own int8 GEMM only
        QTest::newRow("base, inaccurate bfloat16 products")
            << "speed-demo-base" << QStringList{"vision", "text_encoder", "decoder"} << true
            << own;
        for (const KernelPath path : {KernelPath::Avx2, KernelPath::Torch})
            QTest::addRow("base, %s kernels", kernelPathName(path))
                << "speed-demo-base" << QStringList{"vision", "text_encoder", "decoder"} << false
                << int(path);
    }

    void int8ModulesFollowTheWidth() {
        // Which modules the int8 mode quantizes, on the speed demos the build exports (the
        // engine's rule: README, int8), per kernel class: AVX2, and AVX-512 with VNNI (float32
        // encoders with int8 products on the own int8 GEMM), AVX-512 without VNNI (bfloat16
        // encoders with int8 products on oneDNN's where bfloat16 products are accurate),
        // LibTorch (as AVX-512 without VNNI where bfloat16 products are accurate, else float32
        // encoders). Weights are generated and quantized, nothing is run.
        QFETCH(QString, package);
        QFETCH(QStringList, modules);
        QFETCH(bool, inaccurateProducts);
        QFETCH(int, path);
        SKIP_UNLESS_SUPPORTED(KernelPath(path));
        const florence::test::OnPath onPath{KernelPath(path)};
        const QString dir = package.isEmpty()
                                ? m_arch
                                : QString::fromUtf8(FLORENCE_BUILD_DATA_DIR) + "/models/" + package;
        // Encoders wider than base's (the large speed demo) take no int8 products: they load as
        // the bfloat16 mode's, as with oneDNN.
        const bool own = florence::ops::ownInt8Gemm() && package != "speed-demo-large";
        const bool lowEncoders = !inaccurateProducts && bfloat16ProductsAccurate() && !own;
        const bool floatInt8 = own && florence::ops::int8GemmAvailable();
        if (!lowEncoders && !floatInt8)
            modules = QStringList{"decoder"};
        LoadOptions o;
        o.precision = Precision::Int8;
        if (inaccurateProducts)
            qputenv("FLORENCE_BFLOAT16_PRODUCTS", "inaccurate");
        const auto model = Model::load(dir.toStdString(), o);
        qunsetenv("FLORENCE_BFLOAT16_PRODUCTS");
        QStringList got;
        for (const std::string& m : model->int8Modules())
            got << QString::fromStdString(m);
        QCOMPARE(got, modules);
        const bool int8Encoders = modules.contains("vision") || modules.contains("text_encoder");
        QCOMPARE(int(model->encoderPrecision()),
                 int(lowEncoders || int8Encoders ? Precision::Int8 : Precision::Float32));
        // The note says what runs: nothing when the encoders take the precision as chosen.
        const QString note = QString::fromStdString(model->precisionNote());
        QCOMPARE(note.isEmpty(), lowEncoders);
        if (!lowEncoders)
            QVERIFY2(note.startsWith(int8Encoders
                                         ? "the encoders run in float32 except the large products"
                                         : "the encoders run in float32 and only the decoder"),
                     qPrintable(note));
        QVERIFY(Model::load(dir.toStdString())->int8Modules().empty()); // float32: none
    }

    void int8EncodersMatchFloat32_data() {
        QTest::addColumn<int>("path");
        for (const KernelPath path : {KernelPath::Avx2, KernelPath::Avx512})
            QTest::addRow("%s kernels", kernelPathName(path)) << int(path);
    }

    void int8EncodersMatchFloat32() {
        // int8 on the own int8 GEMM (encoders with float32 activations, their products of both
        // sides >= 128 on it: AVX-VNNI or AVX2 on the AVX2 class, 512-bit VNNI on AVX-512; the
        // decoder int8) against float32 on the base speed demo: the image features, the text
        // encoder's output and the decoder's logits keep a cosine >= 0.999. FLORENCE_AVX_VNNI=0
        // checks the AVX2 GEMM on a CPU with AVX-VNNI.
        QFETCH(int, path);
        SKIP_UNLESS_SUPPORTED(KernelPath(path));
        const florence::test::OnPath onPath{KernelPath(path)};
        if (!florence::ops::ownInt8Gemm())
            QSKIP("the AVX-512 class runs oneDNN's int8 GEMM on this CPU (no AVX-512 VNNI)");
        const std::string dir = FLORENCE_BUILD_DATA_DIR "/models/speed-demo-base";
        LoadOptions o;
        o.precision = Precision::Int8;
        const auto int8 = Model::load(dir, o);
        const auto f32 = Model::load(dir);
        QVERIFY(int8->int8Modules().size() == 3);
        const Manifest& m = f32->manifest();
        const std::vector<float> pixels =
            preprocess(*m_image, m.imageWidth, m.imageHeight, m.imageMean, m.imageStd);
        Session s32(f32), s8(int8);
        const std::vector<int64_t> prompt = f32->tokenizer().encode("What does the image describe?");
        const auto cosine = [](const FloatArray& a, const FloatArray& b) {
            double dot = 0, na = 0, nb = 0;
            for (size_t i = 0; i < a.data.size(); ++i) {
                dot += double(a.data[i]) * b.data[i];
                na += double(a.data[i]) * a.data[i];
                nb += double(b.data[i]) * b.data[i];
            }
            return dot / std::sqrt(na * nb);
        };
        const FloatArray f32Features = s32.imageFeatures(pixels);
        const FloatArray int8Features = s8.imageFeatures(pixels);
        QCOMPARE(int8Features.shape, f32Features.shape);
        const double features = cosine(f32Features, int8Features);
        const FloatArray f32Hidden = s32.encoderHidden(pixels, prompt);
        const FloatArray int8Hidden = s8.encoderHidden(pixels, prompt);
        QCOMPARE(int8Hidden.shape, f32Hidden.shape);
        const double hidden = cosine(f32Hidden, int8Hidden);
        // The decoder's logits over a short greedy answer (all three modules int8).
        const Result r = generate(f32, true, 8);
        const FloatArray a = s32.decoderLogits(pixels, r.promptIds, r.generatedIds);
        const FloatArray b = s8.decoderLogits(pixels, r.promptIds, r.generatedIds);
        QCOMPARE(b.shape, a.shape);
        double logits = 1;
        const int64_t vocab = a.shape[1];
        for (int64_t row = 0; row < a.shape[0]; ++row) {
            FloatArray ra{{vocab}, {a.data.begin() + row * vocab, a.data.begin() + (row + 1) * vocab}};
            FloatArray rb{{vocab}, {b.data.begin() + row * vocab, b.data.begin() + (row + 1) * vocab}};
            logits = std::min(logits, cosine(ra, rb));
        }
        qInfo("base, int8 on %s vs float32, cosine: image features %.6f, text encoder output "
              "%.6f, decoder logits (lowest position) %.6f",
              florence::ops::int8GemmKind().c_str(), features, hidden, logits);
        QVERIFY2(features >= 0.999, qPrintable(QString::number(features, 'f', 6)));
        QVERIFY2(logits >= 0.999, qPrintable(QString::number(logits, 'f', 6)));
        // 0.9984 when oneDNN's GEMM quantized each product's activations with one scale per
        // tensor; per row 0.99936 (AVX2) and 0.99964 (AVX-VNNI).
        QVERIFY2(hidden >= 0.999, qPrintable(QString::number(hidden, 'f', 6)));
    }

    void hostileRecipeIsRefused_data() {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QJsonValue>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("huge shape") << "shape" << QJsonValue(QJsonArray{100000, 100000, 1000})
                                    << "too large";
        QTest::newRow("zero dim") << "shape" << QJsonValue(QJsonArray{0, 8}) << "invalid shape";
        QTest::newRow("negative std") << "std" << QJsonValue(-1) << "incomplete";
        QTest::newRow("other module") << "module" << QJsonValue("evil") << "unknown module";
    }

    void hostileRecipeIsRefused() {
        // The recipe is untrusted input: a manifest that asks for terabytes or names another
        // module is refused with a message, before anything is allocated.
        QFETCH(QString, key);
        QFETCH(QJsonValue, value);
        QFETCH(QString, message);
        const QString dir = m_tmp.path() + "/hostile-" + QString::number(qHash(key + message));
        QVERIFY(QDir().mkpath(dir));
        for (const QString& f : QDir(m_arch).entryList(QDir::Files))
            QFile::copy(m_arch + "/" + f, dir + "/" + f);
        QFile mf(dir + "/manifest.json");
        QVERIFY(mf.open(QIODevice::ReadOnly));
        QJsonObject root = QJsonDocument::fromJson(mf.readAll()).object();
        mf.close();
        QJsonObject gen = root["generated_parameters"].toObject();
        QJsonArray params = gen["parameters"].toArray();
        QJsonObject first = params[0].toObject();
        first[key] = value;
        params[0] = first;
        gen["parameters"] = params;
        root["generated_parameters"] = gen;
        QVERIFY(mf.open(QIODevice::WriteOnly | QIODevice::Truncate));
        mf.write(QJsonDocument(root).toJson());
        mf.close();
        try {
            Model::load(dir.toStdString());
            QFAIL("loaded");
        } catch (const std::exception& e) {
            QVERIFY2(QString(e.what()).contains(message), e.what());
            QVERIFY2(QString(e.what()).contains("manifest.json"), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestArchitecturePackage)
#include "TestArchitecturePackage.moc"
