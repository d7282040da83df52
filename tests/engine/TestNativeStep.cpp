// The decoder's cached step run from C++ (engine/decoding/NativeStep.h) against the scripted
// method it mirrors, on the bundled model: step by step, the logits and the whole cache equal to
// the bit for one to four rows, cross-attention of one image (beams) or one per row, padded
// encoder masks, in float32, bfloat16 and int8 weights; and through the engine, the same tokens,
// log-probabilities and beam scores to the bit, greedy, with beams and in batches of images with
// prompts of different lengths, with four rows (the most it takes) and five (which the scripted
// step runs). Each kernel class the CPU has runs it again (tests/engine/CMakeLists.txt).
#include "decoding/NativeStep.h"
#include "package/CodeCheck.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <florence/engine.h>
#include <florence/image.h>
#include <florence/machine.h>
#include <florence/paths.h>
#include <florence/tasks.h>

#include <QDir>
#include <QFile>
#include <QTest>

#include <cstring>
#include <map>

using namespace florence;

namespace {

// Bit for bit, so that a difference in the last place of one logit shows.
bool sameFloats(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

} // namespace

class TestNativeStep : public QObject {
    Q_OBJECT

    // The model in `precision`, its steps from C++ (native) or scripted.
    std::shared_ptr<const Model> load(Precision precision, bool native) {
        auto& m = m_models[{int(precision), native}];
        if (!m) {
            LoadOptions o;
            o.threads = 2; // the step's products split over two cores, as on a desktop
            o.precision = precision;
            if (!native)
                qputenv("FLORENCE_NATIVE_STEP", "0");
            m = Model::load(bundledModelDir(), o);
            qunsetenv("FLORENCE_NATIVE_STEP");
        }
        return m;
    }

    std::map<std::pair<int, bool>, std::shared_ptr<const Model>> m_models;
    std::vector<std::shared_ptr<const RgbImage>> m_images;

private slots:
    void initTestCase();
    void nativeOnlyForThisExporter();
    void stepBitForBit_data();
    void stepBitForBit();
    void sameAsScripted_data();
    void sameAsScripted();
};

void TestNativeStep::initTestCase() {
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    QVERIFY2(!bundledModelDir().empty(), "no bundled model: build the florence_data target first");
    const QDir scenes(QString::fromStdString(samplesDir()) + "/scenes");
    const QStringList files = scenes.entryList({"*.png"}, QDir::Files, QDir::Name);
    QVERIFY2(files.size() >= 5, qPrintable(scenes.path()));
    for (int i = 0; i < 5; ++i)
        m_images.push_back(
            std::make_shared<const RgbImage>(loadImage(scenes.filePath(files[i]).toStdString())));
    qInfo("%s", runtimeSummary().c_str());
}

void TestNativeStep::nativeOnlyForThisExporter() {
    // The bundled model is this version's exporter's: its steps run from C++ unless the variable
    // says otherwise.
    QVERIFY(load(Precision::Float32, true)->nativeStep());
    QVERIFY(!load(Precision::Float32, false)->nativeStep());
    const std::string decoder = bundledModelDir() + "/decoder.pt";
    QVERIFY(florence::detail::currentExporterCode(
        "decoder", florence::detail::torchScriptCodeDigest(decoder)));
    // An earlier exporter's decoder code is accepted but runs the scripted step.
    QFile previous(FLORENCE_SOURCE_DIR "/engine/package/code-allowlist-previous.txt");
    QVERIFY(previous.open(QIODevice::ReadOnly));
    int decoders = 0;
    for (const QByteArray& line : previous.readAll().split('\n')) {
        const QList<QByteArray> f = line.simplified().split(' ');
        if (f.size() == 3 && f[0] == "decoder") {
            ++decoders;
            QVERIFY(!florence::detail::codeFamilies("decoder", f[1].toStdString()).empty());
            QVERIFY2(!florence::detail::currentExporterCode("decoder", f[1].toStdString()),
                     f[1].data());
        }
    }
    QVERIFY(decoders > 0);
}

void TestNativeStep::stepBitForBit_data() {
    QTest::addColumn<int>("precision");
    QTest::addColumn<int>("rows");
    QTest::addColumn<bool>("sharedImage");
    for (Precision p : {Precision::Float32, Precision::BFloat16, Precision::Int8})
        for (int rows = 1; rows <= 4; ++rows)
            for (bool shared : {false, true})
                if (!(shared && rows == 1))
                    QTest::addRow("%s, %d rows%s", precisionName(p), rows,
                                  shared ? ", one image" : "")
                        << int(p) << rows << shared;
}

void TestNativeStep::stepBitForBit() {
    QFETCH(int, precision);
    QFETCH(int, rows);
    QFETCH(bool, sharedImage);
    c10::InferenceMode guard;
    torch::jit::getProfilingMode() = false; // as the engine runs its modules (ModelLoad.cpp)
    torch::jit::Module decoder = torch::jit::load(bundledModelDir() + "/decoder.pt");
    decoder.eval();
    decoder.to(torch::kFloat32); // a package may store float16 (ModelLoad.cpp's loadModule)
    // The weights as the engine converts them (ModelLoad.cpp's toBFloat16, Quantize.cpp).
    for (const auto& sub : decoder.named_modules()) {
        const auto type = sub.value.type()->name();
        if (!type || type->name() != "Linear")
            continue;
        torch::jit::Module lin = sub.value;
        const torch::Tensor w = lin.attr("weight").toTensor();
        if (Precision(precision) == Precision::BFloat16) {
            lin.setattr("weight", w.to(torch::kBFloat16));
        } else if (Precision(precision) == Precision::Int8) {
            const torch::Tensor scales =
                (w.abs().amax({1}).to(torch::kDouble) / 127.0).clamp_min(1e-30);
            lin.setattr("weight",
                        at::quantize_per_channel(w, scales, torch::zeros({w.size(0)}, torch::kLong),
                                                 0, torch::kQInt8));
        }
    }
    const auto native = florence::detail::NativeStep::fromModule(decoder);
    const int64_t images = sharedImage ? 1 : rows, positions = 37, capacity = 12;
    const int64_t dModel = decoder.attr("heads").toInt() * decoder.attr("head_dim").toInt();
    torch::manual_seed(rows * 10 + precision);
    const torch::Tensor hidden = torch::randn({images, positions, dModel});
    torch::Tensor mask = torch::ones({images, positions}, torch::kInt64);
    mask.index_put_({images - 1, torch::indexing::Slice(positions - 5, positions)}, 0);
    const torch::Tensor crossKv = decoder.run_method("cross_kv", hidden).toTensor();
    const torch::Tensor crossMask = florence::detail::NativeStep::crossMask(mask);
    torch::Tensor scripted = decoder.run_method("new_cache", rows, capacity).toTensor();
    torch::Tensor fromCpp = scripted.clone();
    const int64_t before = florence::detail::NativeStep::stepsRun();
    for (int64_t past = 0; past < capacity; ++past) {
        const torch::Tensor ids = torch::randint(0, 50000, {rows, 1}, torch::kInt64);
        const auto out = decoder.run_method("step", ids, past, scripted, crossKv, mask).toTuple();
        const torch::Tensor expected = out->elements()[0].toTensor();
        const torch::Tensor got = native->step(ids, past, fromCpp, crossKv, crossMask);
        QCOMPARE(got.sizes().vec(), expected.sizes().vec());
        QVERIFY2(torch::equal(got, expected),
                 qPrintable(QString("logits differ at position %1, by up to %2")
                                .arg(past)
                                .arg((got - expected).abs().max().item<double>())));
        QVERIFY2(torch::equal(fromCpp, scripted),
                 qPrintable(QString("cache differs after position %1").arg(past)));
    }
    QCOMPARE(florence::detail::NativeStep::stepsRun() - before, capacity);
}

void TestNativeStep::sameAsScripted_data() {
    QTest::addColumn<int>("precision");
    QTest::addColumn<int>("images");
    QTest::addColumn<int>("beams");
    for (Precision p : {Precision::Float32, Precision::BFloat16, Precision::Int8}) {
        const char* name = precisionName(p);
        QTest::addRow("%s greedy", name) << int(p) << 1 << 1;
        QTest::addRow("%s 3 beams", name) << int(p) << 1 << 3;
        QTest::addRow("%s 4 beams", name) << int(p) << 1 << 4;
        QTest::addRow("%s batch of 3", name) << int(p) << 3 << 1;
        QTest::addRow("%s batch of 4", name) << int(p) << 4 << 1;
        QTest::addRow("%s batch of 5", name) << int(p) << 5 << 1;
    }
}

void TestNativeStep::sameAsScripted() {
    QFETCH(int, precision);
    QFETCH(int, images);
    QFETCH(int, beams);
    const Precision p = Precision(precision);
    if (p == Precision::BFloat16 && !bfloat16ProductsRun())
        QSKIP("LibTorch cannot run bfloat16 products on this CPU (or kernel class)");
    Session native(load(p, true)), scripted(load(p, false));
    QVERIFY(native.model().nativeStep());
    // Prompts of different lengths, so a batch pads them and masks the padding.
    const char* tasks[] = {"<CAPTION>", "<OD>", "<MORE_DETAILED_CAPTION>", "<OCR>",
                           "<DENSE_REGION_CAPTION>"};
    std::vector<Request> requests;
    for (int i = 0; i < images; ++i) {
        Request r;
        r.image = m_images[size_t(i)];
        r.prompt = buildPrompt({tasks[i], "", std::nullopt}, r.image->width, r.image->height);
        requests.push_back(r);
    }
    GenerationOptions o = native.model().defaultOptions();
    o.numBeams = beams;
    o.maxNewTokens = 40;
    o.ignoreEos = true; // every row takes every step
    const int64_t before = florence::detail::NativeStep::stepsRun();
    const std::vector<Result> a = native.generateBatch(requests, o);
    const int64_t during = florence::detail::NativeStep::stepsRun() - before;
    const std::vector<Result> b = scripted.generateBatch(requests, o);
    QCOMPARE(florence::detail::NativeStep::stepsRun() - before, during);
    // Every step of up to four rows ran from C++ (the start token's too); five, none.
    QCOMPARE(during, images * beams <= 4 ? int64_t(o.maxNewTokens) : int64_t(0));
    QCOMPARE(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        QCOMPARE(a[i].generatedIds, b[i].generatedIds);
        QCOMPARE(a[i].generatedIds.size(), size_t(41));
        QVERIFY2(sameFloats(a[i].tokenLogprobs, b[i].tokenLogprobs),
                 qPrintable(QString("request %1: log-probabilities differ").arg(i)));
        QVERIFY(std::memcmp(&a[i].score, &b[i].score, sizeof(double)) == 0);
        QCOMPARE(a[i].text, b[i].text);
    }
}

QTEST_GUILESS_MAIN(TestNativeStep)
#include "TestNativeStep.moc"
