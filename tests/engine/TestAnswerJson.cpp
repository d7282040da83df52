// The one answer document (<florence/answer_json.h>): every case of the original
// post-processor's table (tests/data/postprocess-cases.json) gives a document that holds the
// Hugging Face form exactly as the original returns it, the app's form, COCO where there is
// geometry, the raw text, the ids and the timings, with snake_case keys, and that survives a
// write and a read unchanged.
#include <florence/answer_json.h>

#include "engine/PostprocessCases.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QtTest>

using namespace florence;

namespace {

// Keys that are not snake_case, with their path. The Hugging Face form's top-level key is the
// task token ("<OD>"), which the original chose.
QStringList nonSnakeKeys(const QJsonValue& v, const QString& path) {
    static const QRegularExpression snake(QStringLiteral("^[a-z][a-z0-9_]*$"));
    QStringList bad;
    if (v.isArray()) {
        const QJsonArray a = v.toArray();
        for (qsizetype i = 0; i < a.size(); ++i)
            bad += nonSnakeKeys(a[i], path + QStringLiteral("[%1]").arg(i));
    } else if (v.isObject()) {
        const QJsonObject o = v.toObject();
        for (const QString& key : o.keys()) {
            const bool taskKey = path == QStringLiteral("$.huggingface") && key.startsWith('<');
            if (!taskKey && !snake.match(key).hasMatch())
                bad << path + '.' + key;
            bad += nonSnakeKeys(o[key], path + '.' + key);
        }
    }
    return bad;
}

Result resultFor(const QString& text) {
    Result r;
    r.text = text.toStdString();
    r.promptIds = {0, 2264, 473, 2};
    r.generatedIds = {2, 0, 1437, 2};
    r.score = -0.25;
    r.timings.preprocessMs = 1.5;
    r.timings.visionMs = 20;
    r.timings.textEncoderMs = 4;
    r.timings.firstTokenMs = 26;
    r.timings.stepMs = {3, 2.5, 2.5};
    r.timings.decodeMs = 8;
    r.timings.totalMs = 34;
    return r;
}

} // namespace

class TestAnswerJson : public QObject {
    Q_OBJECT
private slots:
    void everyTaskKind_data();
    void everyTaskKind();
    void unknownContextIsLeftOut();
};

void TestAnswerJson::everyTaskKind_data() {
    addPostprocessCaseRows(false);
}

void TestAnswerJson::everyTaskKind() {
    QFETCH(QString, task);
    QFETCH(QString, text);
    QFETCH(int, width);
    QFETCH(int, height);
    const ParsedAnswer answer = parseAnswer(task.toStdString(), text.toStdString(), width, height);
    const Result result = resultFor(text);
    GenerationOptions options;
    options.numBeams = 3;
    AnswerContext context;
    context.imageFile = "/data/scenes/pier.png";
    // A region task's prompt names the region (as the CLI and the app send it).
    const bool regionTask = taskInfo(task.toStdString()).input == TaskInput::Region;
    context.prompt = regionTask ? "What is the region <loc_100><loc_200><loc_300><loc_400>?"
                                : "What does the image describe?";
    context.model = "florence2-demo-shapes";
    context.options = &options;
    context.precision = "float32";
    context.loadMs = 120;
    context.runtime = "LibTorch 1.13.1, 2 threads";
    const QJsonObject doc = answerJson(answer, result, context);

    // Written and read back, the document is the same.
    const QByteArray bytes = QJsonDocument(doc).toJson(QJsonDocument::Indented);
    QCOMPARE(QJsonDocument::fromJson(bytes).object(), doc);
    QVERIFY2(nonSnakeKeys(doc, QStringLiteral("$")).isEmpty(),
             qPrintable(nonSnakeKeys(doc, QStringLiteral("$")).join(' ')));

    QCOMPARE(doc["format"].toString(), QStringLiteral("florence-studio-answer"));
    QCOMPARE(doc["format_version"].toInt(), kAnswerJsonVersion);
    QCOMPARE(doc["task"].toString(), task);
    QCOMPARE(doc["answer_type"].toString(), QString::fromStdString(answerTypeName(answer.type)));
    QCOMPARE(doc["raw_text"].toString(), text);
    QCOMPARE(doc["huggingface"].toObject(), toHuggingFaceJson(answer));
    QVERIFY(doc["huggingface"].toObject().contains(task));
    // The native form is what a person reads: no model token in its text or any label, and a
    // region task's answer is an item for the region asked about.
    const std::optional<Box> asked =
        regionTask ? regionInPrompt(context.prompt, width, height) : std::nullopt;
    QCOMPARE(doc["native"].toObject(), nativeForm(answer, readableAnswer(answer, asked)));
    QCOMPARE(doc["native"]["answer_type"].toString(), doc["answer_type"].toString());
    const QJsonObject native = doc["native"].toObject();
    const QRegularExpression modelToken(
        QStringLiteral("<(/?s|pad|unk|loc_\\d+|poly|sep|/?[A-Z_]+)>"));
    QVERIFY2(!native["text"].toString().contains(modelToken),
             qPrintable(native["text"].toString()));
    for (const QJsonValue& item : native["items"].toArray())
        QVERIFY2(!item["label"].toString().contains(modelToken),
                 qPrintable(item["label"].toString()));
    const bool answered = !readableText(answer.text).empty();
    QCOMPARE(native["items"].toArray().size(),
             qsizetype(answer.items.size() + (regionTask && answer.items.empty() && answered)));
    if (regionTask && answer.items.empty() && answered) {
        const QJsonArray box = native["items"][0]["box"].toArray();
        QCOMPARE(box[0].toDouble(), binToPixel(100, width));
        QCOMPARE(box[3].toDouble(), binToPixel(400, height));
    }
    QCOMPARE(doc["prompt"].toString(), QString::fromStdString(context.prompt));
    QCOMPARE(doc["model"].toString(), QStringLiteral("florence2-demo-shapes"));
    QCOMPARE(doc["image"]["file"].toString(), QStringLiteral("/data/scenes/pier.png"));
    QCOMPARE(doc["image"]["width"].toInt(), width);
    QCOMPARE(doc["image"]["height"].toInt(), height);
    QCOMPARE(doc["prompt_ids"].toArray(), (QJsonArray{0, 2264, 473, 2}));
    QCOMPARE(doc["generated_ids"].toArray(), (QJsonArray{2, 0, 1437, 2}));
    QCOMPARE(doc["sequence_score"].toDouble(), -0.25);
    QCOMPARE(doc["cancelled"].toBool(), false);
    QCOMPARE(doc["generation"]["beams"].toInt(), 3);
    QCOMPARE(doc["generation"]["precision"].toString(), QStringLiteral("float32"));
    QCOMPARE(doc["timings"]["load_ms"].toDouble(), 120.0);
    QCOMPARE(doc["timings"]["first_token_ms"].toDouble(), 26.0);
    QCOMPARE(doc["timings"]["step_ms"].toArray(), (QJsonArray{3, 2.5, 2.5}));
    QCOMPARE(doc["runtime"].toString(), QStringLiteral("LibTorch 1.13.1, 2 threads"));

    // COCO where the answer has geometry, naming the image by its file name.
    // COCO from the readable answer too: labels without model tokens, the asked region's box.
    const ParsedAnswer readable = readableAnswer(answer, asked);
    // A region task's text answer is a box on the region asked about, in COCO as well.
    QCOMPARE(doc.contains("coco"), answer.type != AnswerType::PureText ||
                                       (regionTask && answer.items.empty() && answered));
    if (doc.contains("coco")) {
        const QJsonObject coco = doc["coco"].toObject();
        QCOMPARE(coco, toCocoJson(readable, "pier.png", width, height));
        for (const QJsonValue& c : coco["categories"].toArray())
            QVERIFY2(!c["name"].toString().contains(modelToken), qPrintable(c["name"].toString()));
        QCOMPARE(coco["images"][0]["file_name"].toString(), QStringLiteral("pier.png"));
    }
}

void TestAnswerJson::unknownContextIsLeftOut() {
    const ParsedAnswer answer = parseAnswer("<CAPTION>", "</s><s>A pier.</s>", 100, 80);
    const QJsonObject doc = answerJson(answer, resultFor("</s><s>A pier.</s>"), {});
    for (const char* key : {"prompt", "model", "generation", "runtime", "coco"})
        QVERIFY2(!doc.contains(key), key);
    QVERIFY(!doc["image"].toObject().contains("file"));
    QVERIFY(!doc["timings"].toObject().contains("load_ms"));
    QCOMPARE(doc["huggingface"].toObject(), (QJsonObject{{"<CAPTION>", "A pier."}}));
    QCOMPARE(doc["image"]["width"].toInt(), 100);
}

QTEST_GUILESS_MAIN(TestAnswerJson)
#include "TestAnswerJson.moc"
