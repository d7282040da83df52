// Checkpoints as people have them: the fixture converted at test time into transformers' native
// Florence-2 layout (tests/engine/make_native_checkpoint.py, from the published mapping) imports
// and generates the same tokens as the original layout of the same weights, for five tasks with
// and without the key/value cache; so does a sharded bfloat16 copy. The native copies' extra
// vocabulary rows (<image> and padding) are made to win wherever they are kept, so a package that
// kept them would generate them. Architectures the engine cannot run are refused before anything
// is written. A fine-tune's own tasks are read from its processing_florence2.py as data (the
// file would write a file if it ran) and its processor_config.json, listed in the manifest and
// known to the engine once the package is loaded.
#include <florence/answer.h>
#include <florence/engine.h>
#include <florence/importer.h>
#include <florence/package.h>
#include <florence/safetensors.h>
#include <florence/tasks.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace florence;

namespace {

const QString kFixture = QStringLiteral(FLORENCE_TEST_DATA_DIR "/florence2-tiny-random");
const char* const kTasks[] = {"<CAPTION>", "<OD>", "<OCR_WITH_REGION>",
                              "<CAPTION_TO_PHRASE_GROUNDING>", "<REGION_TO_DESCRIPTION>"};

QJsonObject readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

bool writeJson(const QString& path, const QJsonObject& o) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) &&
           f.write(QJsonDocument(o).toJson()) > 0;
}

// A fine-tune's processor: its task tables as literals, and code that leaves a file behind if
// the file is ever run (imported or executed) rather than read.
const char* const kProcessing = R"(import os
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "EXECUTED"), "w").write("ran")
os.system("touch " + os.path.join(os.path.dirname(os.path.abspath(__file__)), "EXECUTED2"))


class Florence2Processor:
    def __init__(self, tokenizer=None):
        self.tasks_answer_post_processing_type = {
            '<OD>': 'description_with_bboxes',
            '<GENERATE_TAGS>': 'pure_text',
            '<MIXED_OD>': 'description_with_bboxes',
        }
        self.task_prompts_without_inputs = {
            '<CAPTION>': 'What does the image describe?',
            '<GENERATE_TAGS>': '<GENERATE_TAGS>',
            '<MIXED_OD>': 'Locate the objects and describe them.',
        }
        self.task_prompts_with_input = {
            '<DocVQA>': '<DocVQA>{input}',
        }
        self.ran = {k: os.system("touch EXECUTED3") for k in range(1)}
)";

bool writeFile(const QString& path, const QByteArray& data) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(data) == data.size();
}

QString importError(const QString& hf, const QString& out) {
    ImportJobParams job;
    job.hfDir = hf.toStdString();
    job.outDir = out.toStdString();
    try {
        runImport(job);
    } catch (const ImportError& e) {
        return QString::fromUtf8(e.what());
    }
    return QStringLiteral("no error");
}

} // namespace

class TestCheckpointLayouts : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_tmp;
    // 0: native float32, 1: original of the same weights, 2: native bfloat16 in 3 shards,
    // 3: original of the same bfloat16 weights
    std::shared_ptr<const Model> m_models[4];
    std::vector<std::string> m_prompts;
    std::vector<float> m_pixels;

    void convert(const QStringList& args);
    void importPackage(int index, const QString& hf);

private slots:
    void initTestCase();
    void nativeLayoutSaysWhatItFound();
    void sameTokensAsOriginal_data();
    void sameTokensAsOriginal();
    void unsupportedArchitecture_data();
    void unsupportedArchitecture();
    void badShardIndex_data();
    void badShardIndex();
    void moreLayersThanTheConfig();
    void fineTuneTasksReadAsData();
    void taskTableThatIsNotALiteral();
};

void TestCheckpointLayouts::convert(const QStringList& args) {
    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    p.start(FLORENCE_PYTHON,
            QStringList{FLORENCE_SOURCE_DIR "/tests/engine/make_native_checkpoint.py", kFixture} +
                args);
    QVERIFY(p.waitForFinished(300000));
    QCOMPARE(p.exitCode(), 0);
}

void TestCheckpointLayouts::importPackage(int index, const QString& hf) {
    ImportJobParams job;
    job.hfDir = hf.toStdString();
    job.outDir = (m_tmp.path() + "/pkg" + QString::number(index)).toStdString();
    runImport(job);
    m_models[index] = Model::load(job.outDir);
}

void TestCheckpointLayouts::initTestCase() {
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    QVERIFY(m_tmp.isValid());
    const QString t = m_tmp.path();
    convert({t + "/native", "--original", t + "/original"});
    convert({t + "/native-bf16", "--dtype", "bfloat16", "--shards", "3", "--original",
             t + "/original-bf16"});
    QVERIFY(QFile::exists(t + "/native-bf16/model.safetensors.index.json"));
    QVERIFY(QFile::exists(t + "/native-bf16/model-00003-of-00003.safetensors"));
    QVERIFY(!QFile::exists(t + "/native-bf16/model.safetensors"));
    const QJsonObject cfg = readJson(t + "/native/config.json");
    QCOMPARE(cfg["text_config"].toObject()["vocab_size"].toInt(), 51328);
    QCOMPARE(cfg["image_token_id"].toInt(), 51289);

    const QString folders[] = {"native", "original", "native-bf16", "original-bf16"};
    for (int i = 0; i < 4; ++i)
        importPackage(i, t + "/" + folders[i]);

    SafetensorsFile ref =
        SafetensorsFile::open((kFixture + "/reference.safetensors").toStdString());
    m_pixels = ref.toFloat("pixel_values");
    const QJsonObject tasks = readJson(kFixture + "/reference.json")["tasks"].toObject();
    for (const char* token : kTasks)
        m_prompts.push_back(tasks[token].toObject()["prompt"].toString().toStdString());
}

void TestCheckpointLayouts::nativeLayoutSaysWhatItFound() {
    const QString sources[] = {readJson(m_tmp.path() + "/pkg0/manifest.json")["source"].toString(),
                               readJson(m_tmp.path() + "/pkg1/manifest.json")["source"].toString(),
                               readJson(m_tmp.path() + "/pkg2/manifest.json")["source"].toString()};
    QVERIFY2(sources[0].contains("native Florence-2 layout") &&
                 sources[0].contains("model.safetensors"),
             qPrintable(sources[0]));
    QVERIFY2(sources[1].contains("original Florence-2 layout"), qPrintable(sources[1]));
    QVERIFY2(sources[2].contains("model.safetensors.index.json (3 shards)"),
             qPrintable(sources[2]));
    // <image> and the padding rows are not in the package: its vocabulary is the original's.
    for (int i = 0; i < 4; ++i) {
        const QJsonObject dims =
            readJson(m_tmp.path() + "/pkg" + QString::number(i) + "/manifest.json")["dimensions"]
                .toObject();
        QCOMPARE(dims["vocab_size"].toInt(), 51289);
    }
}

void TestCheckpointLayouts::sameTokensAsOriginal_data() {
    QTest::addColumn<int>("pair");
    QTest::addColumn<int>("task");
    QTest::addColumn<bool>("cache");
    for (int pair : {0, 2})
        for (int task = 0; task < 5; ++task)
            for (bool cache : {true, false})
                QTest::addRow("%s %s %s", pair ? "bfloat16 sharded" : "float32", kTasks[task],
                              cache ? "cache" : "no-cache")
                    << pair << task << cache;
}

void TestCheckpointLayouts::sameTokensAsOriginal() {
    QFETCH(int, pair);
    QFETCH(int, task);
    QFETCH(bool, cache);
    Result results[2];
    for (int side = 0; side < 2; ++side) {
        const std::shared_ptr<const Model>& model = m_models[pair + side];
        Session s(model);
        Request req;
        req.pixelValues = m_pixels;
        req.prompt = m_prompts[task];
        GenerationOptions o = model->defaultOptions();
        o.numBeams = 1;
        o.maxNewTokens = 24;
        o.useCache = cache;
        results[side] = s.generate(req, o);
    }
    QVERIFY(results[0].generatedIds.size() > 2);
    QCOMPARE(results[0].promptIds, results[1].promptIds);
    QCOMPARE(results[0].generatedIds, results[1].generatedIds);
    QCOMPARE(results[0].text, results[1].text);
    for (int64_t id : results[0].generatedIds)
        QVERIFY2(id < 51289, qPrintable(QString::number(id)));
}

void TestCheckpointLayouts::unsupportedArchitecture_data() {
    QTest::addColumn<QString>("section");
    QTest::addColumn<QString>("key");
    QTest::addColumn<QJsonValue>("value");
    QTest::addColumn<QString>("expected");
    QTest::newRow("decoder layers")
        << "text_config"
        << "decoder_layers" << QJsonValue(4) << "2 encoder and 4 decoder layers";
    QTest::newRow("vision depths")
        << "vision_config"
        << "depths" << QJsonValue(QJsonArray{1, 1, 3, 1}) << "vision depths [1, 1, 3, 1]";
    QTest::newRow("model type") << ""
                                << "model_type" << QJsonValue("florence3")
                                << "model_type is 'florence3'";
    QTest::newRow("vision model type") << "vision_config"
                                       << "model_type" << QJsonValue("florence_vision2")
                                       << "vision_config.model_type is 'florence_vision2'";
    QTest::newRow("text model type")
        << "text_config"
        << "model_type" << QJsonValue("t5") << "text_config.model_type is 't5'";
}

void TestCheckpointLayouts::unsupportedArchitecture() {
    QFETCH(QString, section);
    QFETCH(QString, key);
    QFETCH(QJsonValue, value);
    QFETCH(QString, expected);
    // The native copy: refused from its config.json before its weights are read.
    const QString hf = m_tmp.path() + "/unsupported";
    QDir(hf).removeRecursively();
    QVERIFY(QDir().mkpath(hf));
    for (const QString& name : QDir(m_tmp.path() + "/native").entryList(QDir::Files))
        QVERIFY(QFile::copy(m_tmp.path() + "/native/" + name, hf + "/" + name));
    QJsonObject cfg = readJson(hf + "/config.json");
    if (section.isEmpty()) {
        cfg[key] = value;
    } else {
        QJsonObject part = cfg[section].toObject();
        part[key] = value;
        cfg[section] = part;
    }
    QVERIFY(writeJson(hf + "/config.json", cfg));
    const QString out = m_tmp.path() + "/unsupported-pkg";
    const QString err = importError(hf, out);
    QVERIFY2(err.contains(expected), qPrintable(err));
    if (key != "model_type")
        QVERIFY2(err.contains("supported: Florence-2-base: vision depths [1, 1, 9, 1], 6 encoder "
                              "and 6 decoder layers"),
                 qPrintable(err));
    QVERIFY(!QFileInfo::exists(out));
}

void TestCheckpointLayouts::badShardIndex_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("shard");
    QTest::addColumn<QString>("expected");
    const QString first = "model.language_model.encoder.layers.0.fc1.weight";
    QTest::newRow("shard outside the folder") << first << "../original/model.safetensors"
                                              << "not a file name in the checkpoint's folder";
    QTest::newRow("missing shard") << first << "model-00009-of-00009.safetensors"
                                   << "is missing from";
    QTest::newRow("tensor in no shard") << "model.language_model.extra.weight"
                                        << "model-00001-of-00003.safetensors"
                                        << "tensors it lists are in no shard";
}

void TestCheckpointLayouts::badShardIndex() {
    QFETCH(QString, name);
    QFETCH(QString, shard);
    QFETCH(QString, expected);
    const QString hf = m_tmp.path() + "/bad-index";
    QDir(hf).removeRecursively();
    QVERIFY(QDir().mkpath(hf));
    for (const QString& file : QDir(m_tmp.path() + "/native-bf16").entryList(QDir::Files))
        QVERIFY(QFile::copy(m_tmp.path() + "/native-bf16/" + file, hf + "/" + file));
    QJsonObject index = readJson(hf + "/model.safetensors.index.json");
    QJsonObject map = index["weight_map"].toObject();
    map[name] = shard;
    index["weight_map"] = map;
    QVERIFY(writeJson(hf + "/model.safetensors.index.json", index));
    const QString err = importError(hf, m_tmp.path() + "/bad-index-pkg");
    QVERIFY2(err.contains(expected) && err.contains("model.safetensors.index.json"),
             qPrintable(err));
    QVERIFY(!QFileInfo::exists(m_tmp.path() + "/bad-index-pkg"));
}

void TestCheckpointLayouts::moreLayersThanTheConfig() {
    // A third decoder layer the config does not describe, in a shard of its own: a package of
    // the config's two layers would silently drop it, so the import is refused.
    const QString hf = m_tmp.path() + "/more-layers";
    QDir(hf).removeRecursively();
    QVERIFY(QDir().mkpath(hf));
    for (const QString& file : QDir(m_tmp.path() + "/native-bf16").entryList(QDir::Files))
        QVERIFY(QFile::copy(m_tmp.path() + "/native-bf16/" + file, hf + "/" + file));
    const QString name = "model.language_model.decoder.layers.2.fc1.weight";
    QByteArray header =
        "{\"" + name.toUtf8() + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    const quint64 length = header.size();
    QByteArray shard(reinterpret_cast<const char*>(&length), 8); // little-endian, as x86 is
    shard += header + QByteArray(4, '\0');
    QVERIFY(writeFile(hf + "/model-extra.safetensors", shard));
    QJsonObject index = readJson(hf + "/model.safetensors.index.json");
    QJsonObject map = index["weight_map"].toObject();
    map[name] = "model-extra.safetensors";
    index["weight_map"] = map;
    QVERIFY(writeJson(hf + "/model.safetensors.index.json", index));
    const QString err = importError(hf, m_tmp.path() + "/more-layers-pkg");
    QVERIFY2(err.contains("weights of layers config.json does not describe") &&
                 err.contains("decoder.layers.2") && err.contains("2 encoder and 2 decoder layers"),
             qPrintable(err));
    QVERIFY(!QFileInfo::exists(m_tmp.path() + "/more-layers-pkg"));
}

void TestCheckpointLayouts::fineTuneTasksReadAsData() {
    const QString hf = m_tmp.path() + "/fine-tune";
    QVERIFY(QDir().mkpath(hf));
    for (const QString& name : QDir(m_tmp.path() + "/original").entryList(QDir::Files))
        QVERIFY(QFile::copy(m_tmp.path() + "/original/" + name, hf + "/" + name));
    QVERIFY(writeFile(hf + "/processing_florence2.py", kProcessing));
    QVERIFY(writeFile(hf + "/processor_config.json",
                      R"({"task_prompts_without_inputs": {"<FROM_JSON>": "Describe it."}})"));
    ImportJobParams job;
    job.hfDir = hf.toStdString();
    job.outDir = (m_tmp.path() + "/pkg-fine-tune").toStdString();
    QStringList messages;
    runImport(job, [&](int, const std::string& m) { messages << QString::fromStdString(m); });
    for (const char* marker : {"EXECUTED", "EXECUTED2", "EXECUTED3"})
        QVERIFY2(!QFileInfo::exists(hf + "/" + marker), marker);
    QVERIFY2(messages.join('\n').contains("<GENERATE_TAGS>, <MIXED_OD>, <FROM_JSON>, <DocVQA>"),
             qPrintable(messages.join('\n')));

    // The manifest lists what the standard 15 lack, each with its prompt and post-processing.
    const QJsonArray tasks =
        readJson(m_tmp.path() + "/pkg-fine-tune/manifest.json")["tasks"].toArray();
    QCOMPARE(tasks.size(), 4);
    const QJsonObject mixed = tasks[1].toObject();
    QCOMPARE(mixed["token"].toString(), QStringLiteral("<MIXED_OD>"));
    QCOMPARE(mixed["name"].toString(), QStringLiteral("Mixed od"));
    QCOMPARE(mixed["prompt"].toString(), QStringLiteral("Locate the objects and describe them."));
    QCOMPARE(mixed["input"].toString(), QStringLiteral("none"));
    QCOMPARE(mixed["answer"].toString(), QStringLiteral("description_with_bboxes"));
    QCOMPARE(tasks[3].toObject()["input"].toString(), QStringLiteral("text"));

    // Loaded, the package's tasks are tasks like the standard ones.
    const auto model = Model::load(job.outDir);
    QCOMPARE(model->manifest().tasks.size(), size_t(4));
    QCOMPARE(taskInfo("<MIXED_OD>").answerType, AnswerType::DescriptionWithBboxes);
    QCOMPARE(buildPrompt({"<GENERATE_TAGS>", "", std::nullopt}, 768, 768),
             std::string("<GENERATE_TAGS>"));
    QCOMPARE(buildPrompt({"<DocVQA>", "What is the title?", std::nullopt}, 768, 768),
             std::string("<DocVQA>What is the title?"));
    Session s(model);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = buildPrompt({"<MIXED_OD>", "", std::nullopt}, 768, 768);
    GenerationOptions o = model->defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 12;
    const Result r = s.generate(req, o);
    QCOMPARE(r.promptIds, model->tokenizer().encode("Locate the objects and describe them."));
    QCOMPARE(parseResult(model->tokenizer(), "<MIXED_OD>", r, 768, 768).type,
             AnswerType::DescriptionWithBboxes);
}

void TestCheckpointLayouts::taskTableThatIsNotALiteral() {
    // A processing_florence2.py whose tables are computed is not data: ignored, with a note.
    const QString hf = m_tmp.path() + "/computed-tables";
    QVERIFY(QDir().mkpath(hf));
    for (const QString& name : QDir(m_tmp.path() + "/original").entryList(QDir::Files))
        QVERIFY(QFile::copy(m_tmp.path() + "/original/" + name, hf + "/" + name));
    QVERIFY(
        writeFile(hf + "/processing_florence2.py",
                  "task_prompts_without_inputs = dict(('<T%d>' % i, 'x') for i in range(9))\n"));
    ImportJobParams job;
    job.hfDir = hf.toStdString();
    job.outDir = (m_tmp.path() + "/pkg-computed").toStdString();
    QStringList messages;
    runImport(job, [&](int, const std::string& m) { messages << QString::fromStdString(m); });
    QVERIFY2(messages.join('\n').contains("assigns no task table as a dictionary literal"),
             qPrintable(messages.join('\n')));
    QVERIFY(!readJson(m_tmp.path() + "/pkg-computed/manifest.json").contains("tasks"));
}

QTEST_GUILESS_MAIN(TestCheckpointLayouts)
#include "TestCheckpointLayouts.moc"
