// The bundled demo model (resources/models/florence2-demo-shapes, exported by the build) on two
// sets of test scenes: tests/engine/data/scenes (24, drawn by the training generator with a seed
// training never used) and tests/engine/data/drawn (30, drawn by tools/demo/drawn_scenes.py, a
// renderer written apart from the training generator: OpenCV, other fonts, white canvases,
// outlines, any aspect ratio, JPEG). <CAPTION>, <OD>, <OCR>, <OCR_WITH_REGION> and
// <REGION_TO_CATEGORY> run with the engine's normal generation settings, answers parsed by the
// AnswerParser and scored with the metrics of tools/demo/evaluate.py. Fails when a figure falls
// below its set's threshold (kSets). Also: bfloat16 and int8 give the same answers as float32 on
// the sample scenes shipped with the app.
#include <florence/answer.h>
#include <florence/engine.h>
#include <florence/image.h>
#include <florence/machine.h>
#include <florence/paths.h>
#include <florence/tasks.h>

#include "Ops.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QStringList>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <set>

using namespace florence;

namespace {

// ---------------------------------------------------------------------------------------------
// Thresholds: the lowest figures the bundled model may reach on a set of test scenes, as
// fractions. They sit a little below what the model measured when it was committed (qInfo prints
// the figures on every run); raise them together with the model. The same figures come from
//   /usr/bin/python3 tools/demo/evaluate.py --package PKG --beams 3 --data tests/engine/data/SET
// (this test decodes with the package's beam search, 3 beams).
struct Thresholds {
    double captionSetExact;     // <CAPTION>: the (colour, shape) pairs named equal the scene's
    double odMap50;             // <OD>: mean over shapes of AP@0.5 (one operating point)
    double odLabelsExact;       // <OD>: the labels' multiset equals the scene's shapes
    double ocrWordAccuracy;     // <OCR>: the word exactly, on scenes with a word
    double ocrEmptyWithoutText; // <OCR>: an empty answer on scenes without a word
    double ocrRegionCorrect;    // <OCR_WITH_REGION>: one region, the word, IoU >= 0.5
    double regionCategory;      // <REGION_TO_CATEGORY>: colour and shape, first object's box
};
// A set of test scenes: its folder under tests/engine/data, its size and its thresholds.
struct TestSet {
    const char* name;
    int scenes;
    Thresholds thresholds;
};
const TestSet kSets[] = {
    // The training generator's scenes. Measured on the committed model (run 11 of the retraining
    // for drawn scenes, step 7592, beam search as the engine runs it): caption 24/24, OD mAP
    // 1.000, OD labels 24/24, OCR 12/12, OCR empty 12/12, OCR region 12/12, region category
    // 24/24, as runs 7 and 5 before it (run 2: OD mAP 0.972, OD labels 23/24, OCR region 11/12).
    // Two misses more than that still pass.
    {"scenes", 24, {/*captionSetExact*/ 0.9, /*odMap50*/ 0.9, /*odLabelsExact*/ 0.9,
                    /*ocrWordAccuracy*/ 0.83, /*ocrEmptyWithoutText*/ 0.83,
                    /*ocrRegionCorrect*/ 0.83, /*regionCategory*/ 0.9}},
    // The independent renderer's scenes (drawn_scenes.py --n 30 --seed 7101; 14 with a word).
    // Measured on the committed model (run 11, step 7592): caption 26/30, OD mAP 0.945, OD labels
    // 28/30, OCR 12/14, OCR empty 16/16, OCR region 11/14, region category 28/30 (run 7: 25/30,
    // 0.937, 28/30, 13/14, 16/16, 11/14, 28/30; run 5: 18/30, 0.763, 21/30, 9/14, 16/16, 8/14,
    // 23/30; run 2: 13/30, 0.491, 14/30, 8/14, 16/16, 6/14, 23/30; the model before the
    // retraining: caption 1/30, mAP 0.008, OCR 0/14, empty 4/16, region 6/30). Two misses more
    // than that still pass (mAP: 0.05 less).
    {"drawn", 30, {/*captionSetExact*/ 0.79, /*odMap50*/ 0.89, /*odLabelsExact*/ 0.86,
                   /*ocrWordAccuracy*/ 0.71, /*ocrEmptyWithoutText*/ 0.87,
                   /*ocrRegionCorrect*/ 0.64, /*regionCategory*/ 0.86}},
};
// ---------------------------------------------------------------------------------------------

QString setFolder(const QString& name) {
    return QStringLiteral(FLORENCE_SOURCE_DIR "/tests/engine/data/") + name;
}

// bfloat16 and int8 against float32: the same words, and every <loc_N> within eight bins (0.8%
// of the image side, 3 pixels of a 384-pixel scene). Location bins are neighbours on a smooth
// scale; the model's logits for adjacent bins are close, and reduced precision can move an
// answer by a few bins (an earlier model, at step 12916 of a previous run, moved 3 of 18
// coordinate answers on the sample scenes by one or two; the model retrained for drawn scenes
// moves one corner of one <OCR_WITH_REGION> quad by three in bfloat16 and four in int8 with
// LibTorch 1.13, and by five in int8 with Debian 13's LibTorch 2.6, whose oneDNN rounds
// differently), which no one can see on the image. The words must still match exactly.
constexpr int kLocationTolerance = 8;

// The loc-free text and the location bins of a generated answer.
std::pair<QString, std::vector<int>> splitLocations(const std::string& text) {
    static const QRegularExpression loc(QStringLiteral("<loc_(\\d+)>"));
    const QString t = QString::fromStdString(text);
    std::vector<int> bins;
    for (auto it = loc.globalMatch(t); it.hasNext();)
        bins.push_back(it.next().captured(1).toInt());
    QString words = t;
    words.remove(loc);
    return {words, bins};
}

bool sameAnswer(const std::string& a, const std::string& b) {
    const auto [wa, la] = splitLocations(a);
    const auto [wb, lb] = splitLocations(b);
    if (wa != wb || la.size() != lb.size())
        return false;
    for (size_t i = 0; i < la.size(); ++i)
        if (std::abs(la[i] - lb[i]) > kLocationTolerance)
            return false;
    return true;
}

struct Object {
    QString shape, color;
    Box box;
};

struct Scene {
    QString file;
    std::shared_ptr<const RgbImage> image;
    std::vector<Object> objects;
    QString word;  // "" without text
    Box wordBox{}; // bounding box of the word's quad
};

bool overlaps(const Box& a, const Box& b) {
    return a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
}

// A corner of the canvas, a fifth of each side, that no object or word touches; none if all do.
std::optional<Box> emptyCorner(const Scene& scene) {
    const double w = scene.image->width, h = scene.image->height;
    const double cw = w / 5, ch = h / 5;
    for (const Box& corner : {Box{0, 0, cw, ch}, Box{w - cw, 0, w, ch}, Box{0, h - ch, cw, h},
                              Box{w - cw, h - ch, w, h}}) {
        bool free = !(!scene.word.isEmpty() && overlaps(corner, scene.wordBox));
        for (const Object& o : scene.objects)
            free = free && !overlaps(corner, o.box);
        if (free)
            return corner;
    }
    return std::nullopt;
}

Box boundingBox(const std::vector<double>& xy) {
    Box b{xy[0], xy[1], xy[0], xy[1]};
    for (size_t i = 0; i + 1 < xy.size(); i += 2) {
        b.x1 = std::min(b.x1, xy[i]);
        b.x2 = std::max(b.x2, xy[i]);
        b.y1 = std::min(b.y1, xy[i + 1]);
        b.y2 = std::max(b.y2, xy[i + 1]);
    }
    return b;
}

double iou(const Box& a, const Box& b) {
    const double ix = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
    const double iy = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
    const double inter = ix * iy;
    const double u = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
    return u > 0 ? inter / u : 0.0;
}

std::vector<double> toDoubles(const QJsonArray& a) {
    std::vector<double> v;
    for (const auto& x : a)
        v.push_back(x.toDouble());
    return v;
}

std::vector<Scene> loadScenes(const QString& folder) {
    QFile f(folder + "/ground_truth.json");
    if (!f.open(QIODevice::ReadOnly))
        return {};
    std::vector<Scene> scenes;
    for (const auto& v : QJsonDocument::fromJson(f.readAll()).object()["scenes"].toArray()) {
        const QJsonObject s = v.toObject();
        Scene scene;
        scene.file = s["file"].toString();
        scene.image =
            std::make_shared<const RgbImage>(loadImage((folder + "/" + scene.file).toStdString()));
        for (const auto& o : s["objects"].toArray()) {
            const QJsonObject obj = o.toObject();
            scene.objects.push_back({obj["shape"].toString(), obj["color"].toString(),
                                     boundingBox(toDoubles(obj["box"].toArray()))});
        }
        if (s["text"].isObject()) {
            scene.word = s["text"].toObject()["text"].toString();
            scene.wordBox = boundingBox(toDoubles(s["text"].toObject()["quad"].toArray()));
        }
        scenes.push_back(std::move(scene));
    }
    return scenes;
}

// The (colour, shape) pairs a text names, as evaluate.py's pairs_in().
std::set<QString> colourShapePairs(const QString& text) {
    static const QRegularExpression re(
        "\\b(red|green|blue|yellow|orange|purple|black|white) (circle|square|triangle|star)\\b");
    std::set<QString> pairs;
    auto it = re.globalMatch(text.toLower());
    while (it.hasNext())
        pairs.insert(it.next().captured(0));
    return pairs;
}

// AP@0.5 of one class as evaluate.py computes it: every box has score 1, so it is precision x
// recall at the single operating point; a prediction matches the unused ground-truth box it
// overlaps most.
struct Prediction {
    size_t scene;
    Box box;
};
double averagePrecision(const std::vector<Prediction>& preds,
                        const std::map<size_t, std::vector<Box>>& truth, int* truePositives) {
    int positives = 0;
    std::map<size_t, std::vector<bool>> used;
    for (const auto& [scene, boxes] : truth) {
        positives += static_cast<int>(boxes.size());
        used[scene].assign(boxes.size(), false);
    }
    int tp = 0;
    for (const Prediction& p : preds) {
        auto it = truth.find(p.scene);
        if (it == truth.end())
            continue;
        double best = 0;
        int bi = -1;
        for (size_t j = 0; j < it->second.size(); ++j) {
            const double o = iou(p.box, it->second[j]);
            if (o > best) {
                best = o;
                bi = static_cast<int>(j);
            }
        }
        if (best >= 0.5 && !used[p.scene][bi]) {
            used[p.scene][bi] = true;
            ++tp;
        }
    }
    *truePositives += tp;
    if (positives == 0 || preds.empty())
        return 0;
    return double(tp) / preds.size() * double(tp) / positives;
}

QString locFree(const std::string& text) {
    static const QRegularExpression loc("<loc_\\d+>");
    return QString::fromStdString(text).remove(loc).trimmed();
}

QString figure(const char* what, int hits, int total) {
    return QStringLiteral("%1: %2 (%3/%4)")
        .arg(what)
        .arg(total ? double(hits) / total : 0.0, 0, 'f', 3)
        .arg(hits)
        .arg(total);
}

} // namespace

class TestDemoModel : public QObject {
    Q_OBJECT

private:
    std::shared_ptr<const Model> m_model; // float32
    // bfloat16 and int8, each loaded by the first test that runs it.
    std::map<int, std::shared_ptr<const Model>> m_reduced;
    // With floatEncoders, loaded as on a CPU whose bfloat16 products are inaccurate (the
    // encoders stay float32), whatever this one's are.
    const std::shared_ptr<const Model>& reduced(Precision precision, bool floatEncoders = false) {
        auto& m = m_reduced[int(precision) * 2 + int(floatEncoders)];
        if (!m) {
            LoadOptions o;
            o.threads = 1;
            o.precision = precision;
            if (floatEncoders)
                qputenv("FLORENCE_BFLOAT16_PRODUCTS", "inaccurate");
            m = Model::load(bundledModelDir(), o);
            qunsetenv("FLORENCE_BFLOAT16_PRODUCTS");
        }
        return m;
    }
    std::map<QString, std::vector<Scene>> m_sets; // by TestSet::name

    // Every scoring test runs once per set.
    static void addSets() {
        QTest::addColumn<int>("set");
        for (size_t i = 0; i < std::size(kSets); ++i)
            QTest::newRow(kSets[i].name) << static_cast<int>(i);
    }
    const TestSet& currentSet() {
        QFETCH(int, set);
        return kSets[set];
    }
    const std::vector<Scene>& scenesOf(const TestSet& set) { return m_sets[set.name]; }

    // The answer to `task` on `image` with the model's default generation settings.
    Result run(Session& session, const std::shared_ptr<const RgbImage>& image,
               const TaskRequest& task) {
        Request req;
        req.image = image;
        req.prompt = buildPrompt(task, image->width, image->height);
        return session.generate(req, session.model().defaultOptions());
    }
    ParsedAnswer answer(Session& session, const std::shared_ptr<const RgbImage>& image,
                        const std::string& task) {
        const Result r = run(session, image, {task, "", std::nullopt});
        return parseAnswer(task, r.text, image->width, image->height);
    }

private slots:
    void initTestCase();
    void caption_data() { addSets(); }
    void caption();
    void objectDetection_data() { addSets(); }
    void objectDetection();
    void ocr_data() { addSets(); }
    void ocr();
    void ocrWithRegion_data() { addSets(); }
    void ocrWithRegion();
    void regionToCategory_data() { addSets(); }
    void regionToCategory();
    void reducedPrecisionMatchesFloat32_data();
    void reducedPrecisionMatchesFloat32();
    void int8LogitsMatchFloat32();
};

void TestDemoModel::initTestCase() {
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    const std::string dir = bundledModelDir();
    QVERIFY2(!dir.empty(), "no bundled model: build the florence_data target first");
    // One thread: the model is small enough that a second one gains little, and CTest may run
    // other tests beside this one.
    LoadOptions options;
    options.threads = 1;
    m_model = Model::load(dir, options);
    const Manifest& m = m_model->manifest();
    QVERIFY2(QString::fromStdString(m.name).contains("demo"), m.name.c_str());
    QCOMPARE(m.imageWidth, 256);
    qInfo("bundled model %s: %lld parameters, %lld bytes of weights in memory", m.name.c_str(),
          static_cast<long long>(m.parameterCount), static_cast<long long>(m_model->weightBytes()));
    for (const TestSet& set : kSets) {
        m_sets[set.name] = loadScenes(setFolder(set.name));
        QVERIFY2(m_sets[set.name].size() == size_t(set.scenes), set.name);
    }
}

void TestDemoModel::caption() {
    const TestSet& set = currentSet();
    const std::vector<Scene>& scenes = scenesOf(set);
    Session s(m_model);
    int exact = 0;
    for (const Scene& scene : scenes) {
        const ParsedAnswer a = answer(s, scene.image, "<CAPTION>");
        std::set<QString> want;
        for (const Object& o : scene.objects)
            want.insert(o.color + " " + o.shape);
        const bool ok = colourShapePairs(QString::fromStdString(a.text)) == want;
        exact += ok;
        if (!ok)
            qDebug("%s: %s", qPrintable(scene.file), a.text.c_str());
    }
    const int n = static_cast<int>(scenes.size());
    qInfo("%s", qPrintable(figure("<CAPTION> (colour, shape) set exact", exact, n)));
    QVERIFY2(exact >= set.thresholds.captionSetExact * n,
             qPrintable(figure("caption set exact below threshold", exact, n)));
}

void TestDemoModel::objectDetection() {
    const TestSet& set = currentSet();
    const std::vector<Scene>& scenes = scenesOf(set);
    Session s(m_model);
    const QStringList shapes{"circle", "square", "triangle", "star"};
    std::map<QString, std::vector<Prediction>> preds;
    std::map<QString, std::map<size_t, std::vector<Box>>> truth;
    int labelsExact = 0, predicted = 0, objects = 0;
    for (size_t i = 0; i < scenes.size(); ++i) {
        const Scene& scene = scenes[i];
        const ParsedAnswer a = answer(s, scene.image, "<OD>");
        QStringList got, want;
        for (const AnswerItem& item : a.items) {
            const QString label = QString::fromStdString(item.label).trimmed();
            got << label;
            if (shapes.contains(label))
                preds[label].push_back({i, item.box});
        }
        for (const Object& o : scene.objects) {
            want << o.shape;
            truth[o.shape][i].push_back(o.box);
        }
        predicted += static_cast<int>(a.items.size());
        objects += static_cast<int>(scene.objects.size());
        got.sort();
        want.sort();
        labelsExact += got == want;
    }
    double mapSum = 0;
    int classes = 0, tp = 0;
    QStringList perClass;
    for (const QString& shape : shapes) {
        if (truth[shape].empty())
            continue;
        const double ap = averagePrecision(preds[shape], truth[shape], &tp);
        perClass << QStringLiteral("%1 %2").arg(shape).arg(ap, 0, 'f', 3);
        mapSum += ap;
        ++classes;
    }
    const double map = classes ? mapSum / classes : 0;
    const int n = static_cast<int>(scenes.size());
    qInfo("<OD> mAP@0.5: %.3f (AP %s); precision@0.5 %d/%d, recall@0.5 %d/%d", map,
          qPrintable(perClass.join(", ")), tp, predicted, tp, objects);
    qInfo("%s", qPrintable(figure("<OD> labels exact", labelsExact, n)));
    QVERIFY2(map >= set.thresholds.odMap50,
             qPrintable(QString("mAP@0.5 %1 below threshold").arg(map)));
    QVERIFY2(labelsExact >= set.thresholds.odLabelsExact * n,
             qPrintable(figure("OD labels exact below threshold", labelsExact, n)));
}

void TestDemoModel::ocr() {
    const TestSet& set = currentSet();
    const std::vector<Scene>& scenes = scenesOf(set);
    Session s(m_model);
    int words = 0, right = 0, blank = 0, empty = 0;
    for (const Scene& scene : scenes) {
        const ParsedAnswer a = answer(s, scene.image, "<OCR>");
        const QString text = QString::fromStdString(a.text).trimmed();
        if (scene.word.isEmpty()) {
            ++blank;
            empty += text.isEmpty();
        } else {
            ++words;
            right += text == scene.word;
            if (text != scene.word)
                qDebug("%s: '%s' for '%s'", qPrintable(scene.file), qPrintable(text),
                       qPrintable(scene.word));
        }
    }
    qInfo("%s", qPrintable(figure("<OCR> word accuracy", right, words)));
    qInfo("%s", qPrintable(figure("<OCR> empty on scenes without text", empty, blank)));
    QVERIFY(words > 0 && blank > 0);
    QVERIFY2(right >= set.thresholds.ocrWordAccuracy * words,
             qPrintable(figure("OCR word accuracy below threshold", right, words)));
    QVERIFY2(empty >= set.thresholds.ocrEmptyWithoutText * blank,
             qPrintable(figure("OCR empty answers below threshold", empty, blank)));
}

void TestDemoModel::ocrWithRegion() {
    const TestSet& set = currentSet();
    const std::vector<Scene>& scenes = scenesOf(set);
    Session s(m_model);
    int words = 0, right = 0;
    for (const Scene& scene : scenes) {
        if (scene.word.isEmpty())
            continue;
        ++words;
        const ParsedAnswer a = answer(s, scene.image, "<OCR_WITH_REGION>");
        // The label keeps the original post-processor's leading "</s>".
        const bool ok =
            a.items.size() == 1 &&
            QString::fromStdString(a.items[0].label).remove(QStringLiteral("</s>")).trimmed() ==
                scene.word &&
            iou(boundingBox(a.items[0].quad), scene.wordBox) >= 0.5;
        if (!ok && !a.items.empty())
            qDebug("%s: '%s' IoU %.2f for '%s'", qPrintable(scene.file), a.items[0].label.c_str(),
                   iou(boundingBox(a.items[0].quad), scene.wordBox), qPrintable(scene.word));
        right += ok;
    }
    qInfo("%s", qPrintable(figure("<OCR_WITH_REGION> word and IoU>=0.5", right, words)));
    QVERIFY2(right >= set.thresholds.ocrRegionCorrect * words,
             qPrintable(figure("OCR with region below threshold", right, words)));
}

void TestDemoModel::regionToCategory() {
    const TestSet& set = currentSet();
    const std::vector<Scene>& scenes = scenesOf(set);
    // The first (leftmost) object of each scene: all 69 would triple the time for little more.
    Session s(m_model);
    int objects = 0, right = 0;
    // Confidence scores: an answer about a shape should be surer than one about a region that
    // holds none (a corner of the canvas that no object touches).
    double shapeScores = 0, emptyScores = 0;
    int emptyRegions = 0;
    for (const Scene& scene : scenes) {
        const Object& o = scene.objects.front();
        ++objects;
        const Result r = run(s, scene.image, {"<REGION_TO_CATEGORY>", "", o.box});
        const ParsedAnswer a = parseResult(m_model->tokenizer(), "<REGION_TO_CATEGORY>", r,
                                           scene.image->width, scene.image->height);
        right += locFree(a.text) == o.color + " " + o.shape;
        QVERIFY(a.score > 0 && a.score <= 1);
        shapeScores += a.score;

        if (const std::optional<Box> empty = emptyCorner(scene)) {
            const Result e = run(s, scene.image, {"<REGION_TO_CATEGORY>", "", *empty});
            const ParsedAnswer ea = parseResult(m_model->tokenizer(), "<REGION_TO_CATEGORY>", e,
                                                scene.image->width, scene.image->height);
            QVERIFY(ea.score > 0 && ea.score <= 1);
            emptyScores += ea.score;
            ++emptyRegions;
        }
    }
    qInfo("%s", qPrintable(figure("<REGION_TO_CATEGORY> colour and shape", right, objects)));
    QVERIFY2(right >= set.thresholds.regionCategory * objects,
             qPrintable(figure("region to category below threshold", right, objects)));
    QVERIFY(emptyRegions >= 6);
    const double shapeMean = shapeScores / objects, emptyMean = emptyScores / emptyRegions;
    qInfo("<REGION_TO_CATEGORY> mean score: %.3f on a shape, %.3f on %d empty corners", shapeMean,
          emptyMean, emptyRegions);
    QVERIFY2(shapeMean > emptyMean, "answers about empty regions score as high as about shapes");
}

void TestDemoModel::reducedPrecisionMatchesFloat32_data() {
    QTest::addColumn<int>("precision");
    QTest::addColumn<QString>("task");
    QTest::addColumn<bool>("floatEncoders");
    for (const bool floatEncoders : {false, true})
        for (const Precision p : {Precision::BFloat16, Precision::Int8})
            for (const char* task :
                 {"<CAPTION>", "<DETAILED_CAPTION>", "<OD>", "<OCR>", "<OCR_WITH_REGION>"})
                QTest::addRow("%s %s%s", precisionName(p), task,
                              floatEncoders ? " float32 encoders" : "")
                    << int(p) << QString(task) << floatEncoders;
}

void TestDemoModel::reducedPrecisionMatchesFloat32() {
    // The app's precision switch must not change what the demo model says about the sample
    // scenes a first start shows (up to kLocationTolerance): bfloat16, and int8 (its decoder in
    // int8, its encoders in bfloat16: none of its layers is large enough for int8 encoders).
    // Where this CPU's bfloat16 products sum in bfloat16 (no AVX-512: 2.8% off over an image's
    // positions, which changed four of five tasks' answers), the encoders stay float32 and only
    // the decoder takes the precision; the "float32 encoders" rows load that way on any CPU.
    QFETCH(int, precision);
    QFETCH(QString, task);
    QFETCH(bool, floatEncoders);
    const Precision p = static_cast<Precision>(precision);
    const bool accurate = bfloat16ProductsAccurate();
    if (floatEncoders && !accurate)
        QSKIP("this CPU's bfloat16 products are inaccurate: the rows above ran float32 encoders");
    const std::shared_ptr<const Model>& model = reduced(p, floatEncoders);
    // int8 on the own int8 GEMM (the AVX2 kernel class, AVX-512 with VNNI) keeps the encoders
    // float32 whatever their bfloat16 products, but their products of both sides >= 128 take
    // int8 weights (the demo model's text encoder and its vision encoder's last stage), so the
    // encoders report int8.
    const bool int8Own = p == Precision::Int8 && florence::ops::ownInt8Gemm();
    const bool lowEncoders = accurate && !floatEncoders && !int8Own;
    const bool int8Products = int8Own && florence::ops::int8GemmAvailable();
    QCOMPARE(int(model->encoderPrecision()),
             int(lowEncoders ? p : int8Products ? Precision::Int8 : Precision::Float32));
    QCOMPARE(model->precisionNote().empty(), lowEncoders);
    const QDir scenes(QString::fromStdString(samplesDir()) + "/scenes");
    const QStringList files = scenes.entryList({"*.png"}, QDir::Files, QDir::Name);
    QVERIFY2(files.size() >= 3, qPrintable(scenes.path()));
    Session s32(m_model), sr(model);
    QStringList differ;
    for (const QString& file : files) {
        const auto image =
            std::make_shared<const RgbImage>(loadImage(scenes.filePath(file).toStdString()));
        const Result a = run(s32, image, {task.toStdString(), "", std::nullopt});
        const Result b = run(sr, image, {task.toStdString(), "", std::nullopt});
        if (!sameAnswer(a.text, b.text))
            differ << QStringLiteral("%1: float32 '%2', %3 '%4'")
                          .arg(file, QString::fromStdString(a.text), precisionName(p),
                               QString::fromStdString(b.text));
    }
    for (const QString& d : differ)
        qInfo("%s differs on %s", precisionName(p), qPrintable(d));
    QVERIFY2(differ.isEmpty(),
             qPrintable(QString("%1 of %2 scenes differ").arg(differ.size()).arg(files.size())));
}

void TestDemoModel::int8LogitsMatchFloat32() {
    // The int8 decoder's logits against float32's over the same tokens (a detailed caption of
    // each sample scene, as float32 says it): cosine >= 0.999 at every position, the issue's
    // bar for int8 (bench reports the same figure for the speed demo).
    const auto int8 = reduced(Precision::Int8);
    const QDir scenes(QString::fromStdString(samplesDir()) + "/scenes");
    const QStringList files = scenes.entryList({"*.png"}, QDir::Files, QDir::Name);
    QVERIFY(!files.isEmpty());
    Session s32(m_model), s8(int8);
    const Manifest& m = m_model->manifest();
    double minCos = 1;
    for (const QString& file : files) {
        const auto image =
            std::make_shared<const RgbImage>(loadImage(scenes.filePath(file).toStdString()));
        const Result r = run(s32, image, {"<MORE_DETAILED_CAPTION>", "", std::nullopt});
        const std::vector<float> pixels =
            preprocess(*image, m.imageWidth, m.imageHeight, m.imageMean, m.imageStd);
        const FloatArray a = s32.decoderLogits(pixels, r.promptIds, r.generatedIds);
        const FloatArray b = s8.decoderLogits(pixels, r.promptIds, r.generatedIds);
        QCOMPARE(a.shape, b.shape);
        const int64_t vocab = a.shape[1];
        for (int64_t row = 0; row < a.shape[0]; ++row) {
            double dot = 0, na = 0, nb = 0;
            for (int64_t i = row * vocab; i < (row + 1) * vocab; ++i) {
                dot += double(a.data[i]) * b.data[i];
                na += double(a.data[i]) * a.data[i];
                nb += double(b.data[i]) * b.data[i];
            }
            minCos = std::min(minCos, dot / std::sqrt(na * nb));
        }
    }
    qInfo("int8 logits cosine vs float32, lowest of %lld scenes' positions: %.6f",
          static_cast<long long>(files.size()), minCos);
    QVERIFY2(minCos >= 0.999, qPrintable(QString::number(minCos, 'f', 6)));
}

QTEST_GUILESS_MAIN(TestDemoModel)
#include "TestDemoModel.moc"
