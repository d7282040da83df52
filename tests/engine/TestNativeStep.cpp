// The decoder's cached step run from C++ (engine/decoding/NativeStep.h) against the scripted
// method it mirrors, on the bundled model: the same tokens and the same log-probabilities to the
// bit, in every precision this CPU runs, greedy, with beams (one image's cross-attention shared
// by the beams) and in batches of images with prompts of different lengths (padding masked),
// with four rows (the most it takes) and five (which the scripted step runs). Each kernel class
// the CPU has runs it again (tests/engine/CMakeLists.txt).
#include <florence/engine.h>
#include <florence/image.h>
#include <florence/machine.h>
#include <florence/paths.h>
#include <florence/tasks.h>

#include <QDir>
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
    // says otherwise (a package of an earlier exporter runs the scripted step:
    // check_previous_packages.py loads those).
    QVERIFY(load(Precision::Float32, true)->nativeStep());
    QVERIFY(!load(Precision::Float32, false)->nativeStep());
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
    const std::vector<Result> a = native.generateBatch(requests, o);
    const std::vector<Result> b = scripted.generateBatch(requests, o);
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
