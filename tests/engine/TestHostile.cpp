// The hostile inputs, each built here by the test: a checkpoint pickle that runs
// code, TorchScript that writes files, manifests with out-of-range values or without checksums,
// package files that are FIFOs or links to /dev/zero, an --out folder holding someone's files,
// a cancelled import. Each must end in one clear line naming the file or field (or a correct
// result), never run the attacker's code, crash, hang or delete anything.
#include <florence/engine.h>
#include <florence/importer.h>
#include <florence/package.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <sys/stat.h>
#include <thread>

using namespace florence;

namespace {

const QString kBundled = QStringLiteral(FLORENCE_BUILD_DATA_DIR "/models/default");
const QString kFixture = QStringLiteral(FLORENCE_TEST_DATA_DIR "/florence2-tiny-random");

void copyDir(const QString& from, const QString& to) {
    QVERIFY(QDir().mkpath(to));
    for (const QFileInfo& fi : QDir(from).entryInfoList(QDir::Files | QDir::Hidden))
        QVERIFY(QFile::copy(fi.filePath(), to + "/" + fi.fileName()));
}

QJsonObject readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

void writeJson(const QString& path, const QJsonObject& o) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(QJsonDocument(o).toJson());
}

// Runs /usr/bin/python3 on a script given as text (from a file: torch.jit.script needs the
// source); returns its exit code.
int python(const QString& script, const QStringList& args = {}) {
    QTemporaryDir dir;
    QFile file(dir.filePath("script.py"));
    if (!file.open(QIODevice::WriteOnly))
        return -1;
    file.write(script.toUtf8());
    file.close();
    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    QStringList all{file.fileName()};
    all << args;
    p.start(FLORENCE_PYTHON, all);
    if (!p.waitForFinished(300000))
        return -1;
    return p.exitCode();
}

// Puts `file` into the package's manifest with its real size and hash, as an attacker would.
void relist(const QString& pkg, const QString& role, const QString& name) {
    QFile f(pkg + "/" + name);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    QJsonObject m = readJson(pkg + "/manifest.json");
    QJsonObject files = m["files"].toObject();
    QJsonObject entry;
    entry["name"] = name;
    entry["size"] = qint64(bytes.size());
    entry["sha256"] =
        QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex());
    files[role] = entry;
    m["files"] = files;
    writeJson(pkg + "/manifest.json", m);
}

template <typename F> QString errorOf(F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return QStringLiteral("no error");
}

QString importError(const ImportJobParams& job, const std::atomic<bool>* cancel = nullptr) {
    try {
        runImport(job, {}, cancel);
    } catch (const ImportError& e) {
        return QString::fromStdString(e.what());
    }
    return QStringLiteral("no error");
}

} // namespace

class TestHostile : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void pickleWithPayloadIsRefused();
    void checkpointErrorsNameTheFile_data();
    void checkpointErrorsNameTheFile();
    void scriptedModuleOfAnotherAuthorIsRefused_data();
    void scriptedModuleOfAnotherAuthorIsRefused();
    void manifestValuesOutOfRange_data();
    void manifestValuesOutOfRange();
    void forcedTokensAtTheEdgeOfTheVocabulary();
    void packageFilesThatAreNotFiles_data();
    void packageFilesThatAreNotFiles();
    void loadCanBeCancelled();
    void loadStopsInsideAModuleArchive();
    void modulesLoadOnlyAfterTheChecks();
    void importOutIsNeverDeleted_data();
    void importOutIsNeverDeleted();
    void cancelledImportLeavesNoTemporaryFolder();
};

void TestHostile::initTestCase() {
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    QVERIFY2(QFile::exists(kBundled + "/manifest.json"), "the build exports the bundled model");
    // The bundled package loads: the checks below refuse hostile packages, not good ones.
    QVERIFY(Model::load(kBundled.toStdString()) != nullptr);
}

void TestHostile::pickleWithPayloadIsRefused() {
    QTemporaryDir dir;
    const QString hf = dir.path() + "/hf";
    const QString witness = dir.path() + "/payload-ran";
    QVERIFY(QDir().mkpath(hf));
    QVERIFY(QFile::copy(kFixture + "/config.json", hf + "/config.json"));
    // A pickle whose loading calls os.system: torch.load without weights_only runs it.
    QCOMPARE(python("import os, pickle, sys\n"
                    "class P:\n"
                    "    def __reduce__(self):\n"
                    "        return (os.system, ('touch ' + sys.argv[2],))\n"
                    "pickle.dump({'w': P()}, open(sys.argv[1], 'wb'))\n",
                    {hf + "/pytorch_model.bin", witness}),
             0);
    ImportJobParams job;
    job.hfDir = hf.toStdString();
    job.outDir = (dir.path() + "/out").toStdString();
    const QString err = importError(job);
    QVERIFY2(err.contains("pytorch_model.bin") && err.contains("plain weights"), qPrintable(err));
    QVERIFY2(!err.contains('\n'), qPrintable(err));
    QVERIFY2(!QFile::exists(witness), "the pickle's payload ran");
    QVERIFY(!QFile::exists(dir.path() + "/out"));
}

// What a stranger's Hugging Face folder can hold, through the exporter (/usr/bin/python3): each
// gives one line naming the file at fault and what is wrong with it, and no code of theirs runs.
void TestHostile::checkpointErrorsNameTheFile_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("file"); // named in the message ("" = the folder)
    QTest::addColumn<QString>("problem");
    QTest::newRow("no weights") << "no-weights"
                                << ""
                                << "no weights found";
    QTest::newRow("text named pytorch_model.bin") << "text"
                                                  << "pytorch_model.bin"
                                                  << "not a PyTorch checkpoint";
    QTest::newRow("half a checkpoint") << "truncated"
                                       << "pytorch_model.bin"
                                       << "damaged or incomplete";
    QTest::newRow("zip checkpoint calling os.system") << "zip-payload"
                                                      << "pytorch_model.bin"
                                                      << "holds more than plain weights";
    QTest::newRow("config missing") << "no-config"
                                    << "config.json"
                                    << "is missing";
    QTest::newRow("config not JSON") << "config-text"
                                     << "config.json"
                                     << "is not valid JSON";
    QTest::newRow("d_model 10^12") << "d-model"
                                   << "config.json"
                                   << "text_config.d_model is 1000000000000";
    QTest::newRow("16 billion parameters, each size within bounds") << "billions"
                                                                    << "config.json"
                                                                    << "billion parameters";
    QTest::newRow("vision stage of depth 10^6") << "vision-depth"
                                                << "config.json"
                                                << "vision_config.depths";
    // Files that are not files: each refused at once, never waited on or read without end.
    QTest::newRow("config a FIFO") << "fifo:config.json"
                                   << "config.json"
                                   << "is a FIFO";
    QTest::newRow("config a link to /dev/zero") << "zero:config.json"
                                                << "config.json"
                                                << "is a device";
    QTest::newRow("config a link loop") << "loop:config.json"
                                        << "config.json"
                                        << "link loop";
    QTest::newRow("config a folder") << "folder:config.json"
                                     << "config.json"
                                     << "is a folder";
    QTest::newRow("config nested 100,000 deep") << "deep:config.json"
                                                << "config.json"
                                                << "nested too deeply";
    QTest::newRow("preprocessor config a link to /dev/zero") << "zero:preprocessor_config.json"
                                                             << "preprocessor_config.json"
                                                             << "is a device";
    QTest::newRow("preprocessor config a FIFO") << "fifo:preprocessor_config.json"
                                                << "preprocessor_config.json"
                                                << "is a FIFO";
    QTest::newRow("vocab.json a FIFO") << "fifo:vocab.json"
                                       << "vocab.json"
                                       << "is a FIFO";
    QTest::newRow("tokenizer.json a link to /dev/zero") << "zero:tokenizer.json"
                                                        << "tokenizer.json"
                                                        << "is a device";
    // The weights are looked for as model.safetensors first: one that is not a file is refused,
    // not waited on or read without end, and not passed over for pytorch_model.bin.
    QTest::newRow("model.safetensors a FIFO") << "fifo:model.safetensors"
                                              << "model.safetensors"
                                              << "is a FIFO";
    QTest::newRow("model.safetensors a link to /dev/zero") << "zero:model.safetensors"
                                                           << "model.safetensors"
                                                           << "is a device";
}

namespace {

// Puts something that is not a regular file at `path`: "fifo", "zero" (a link to /dev/zero),
// "loop" (a link to itself), "folder", or "deep" (JSON nested 100,000 deep).
void notAFile(const QString& how, const QString& path) {
    QFile::remove(path);
    if (how == "fifo") {
        QCOMPARE(::mkfifo(path.toLocal8Bit().constData(), 0600), 0);
    } else if (how == "zero") {
        QVERIFY(QFile::link("/dev/zero", path));
    } else if (how == "loop") {
        QVERIFY(QFile::link(path, path));
    } else if (how == "folder") {
        QVERIFY(QDir().mkpath(path));
    } else {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(100000, '[') + QByteArray(100000, ']'));
    }
}

} // namespace

void TestHostile::checkpointErrorsNameTheFile() {
    QFETCH(QString, kind);
    QFETCH(QString, file);
    QFETCH(QString, problem);
    QTemporaryDir dir;
    const QString hf = dir.path() + "/hf";
    const QString witness = dir.path() + "/payload-ran";
    QVERIFY(QDir().mkpath(hf));
    if (kind != "no-config")
        QVERIFY(QFile::copy(kFixture + "/config.json", hf + "/config.json"));
    if (kind != "no-weights")
        QVERIFY(QFile::copy(kFixture + "/pytorch_model.bin", hf + "/pytorch_model.bin"));
    QFile weights(hf + "/pytorch_model.bin");
    QJsonObject config = readJson(hf + "/config.json");
    QJsonObject text = config["text_config"].toObject();
    QJsonObject vision = config["vision_config"].toObject();
    if (kind == "text" || kind == "config-text") {
        QFile f(hf + (kind == "text" ? "/pytorch_model.bin" : "/config.json"));
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("These are not the weights you are looking for.\n");
    } else if (kind == "truncated") {
        QVERIFY(weights.resize(weights.size() / 2));
    } else if (kind == "zip-payload") {
        QCOMPARE(python("import os, sys, torch\n"
                        "class P:\n"
                        "    def __reduce__(self):\n"
                        "        return (os.system, ('touch ' + sys.argv[2],))\n"
                        "torch.save({'w': P()}, sys.argv[1])\n",
                        {hf + "/pytorch_model.bin", witness}),
                 0);
    } else if (kind == "d-model") {
        text["d_model"] = 1e12;
    } else if (kind == "billions") {
        text["d_model"] = 16384;
        text["vocab_size"] = 1000000;
    } else if (kind == "vision-depth") {
        vision["depths"] = QJsonArray{1, 1, 1000000, 1};
    }
    if (kind == "d-model" || kind == "billions" || kind == "vision-depth") {
        config["text_config"] = text;
        config["vision_config"] = vision;
        writeJson(hf + "/config.json", config);
    }
    if (kind.contains(':'))
        notAFile(kind.section(':', 0, 0), hf + "/" + kind.section(':', 1));
    ImportJobParams job;
    job.hfDir = hf.toStdString();
    job.outDir = (dir.path() + "/out").toStdString();
    const QString err = importError(job);
    QVERIFY2(err.contains(file.isEmpty() ? hf : hf + "/" + file), qPrintable(err));
    QVERIFY2(err.contains(problem), qPrintable(err));
    QVERIFY2(!err.contains('\n'), qPrintable(err));
    QVERIFY2(!err.contains("weights_only"), qPrintable(err)); // torch's advice to load unsafely
    QVERIFY2(!QFile::exists(witness), "the pickle's payload ran");
    QVERIFY(!QFile::exists(dir.path() + "/out"));
}

void TestHostile::scriptedModuleOfAnotherAuthorIsRefused_data() {
    QTest::addColumn<QString>("kind");
    QTest::newRow("module calling torch.from_file") << "from_file";
    QTest::newRow("exporter's module with one line added") << "edited";
    QTest::newRow("decoder of another model family") << "family";
}

void TestHostile::scriptedModuleOfAnotherAuthorIsRefused() {
    QFETCH(QString, kind);
    QTemporaryDir dir;
    const QString pkg = dir.path() + "/pkg";
    const QString target = dir.path() + "/victim.txt";
    copyDir(kBundled, pkg);
    {
        QFile v(target);
        QVERIFY(v.open(QIODevice::WriteOnly));
        v.write("untouched");
    }
    QString role = "vision", name = "vision.pt";
    if (kind == "from_file") {
        // Writes into any file the user can write, on an ordinary run.
        QCOMPARE(python("import sys, torch\n"
                        "class M(torch.nn.Module):\n"
                        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                        "        t = torch.from_file('" +
                            target +
                            "', shared=True, size=9, "
                            "dtype=torch.uint8)\n"
                            "        t.fill_(65)\n"
                            "        return x\n"
                            "torch.jit.script(M()).save(sys.argv[1])\n",
                        {pkg + "/vision.pt"}),
                 0);
    } else if (kind == "edited") {
        // The real module with a statement added to its code (deflated again like torch's).
        QCOMPARE(python("import sys, zipfile\n"
                        "src = zipfile.ZipFile(sys.argv[1])\n"
                        "dst = zipfile.ZipFile(sys.argv[2], 'w')\n"
                        "for info in src.infolist():\n"
                        "    data = src.read(info)\n"
                        "    if info.filename.endswith('code/__torch__/florence2/model.py'):\n"
                        "        data = data.replace(b'    return ', "
                        "b'    _evil = torch.from_file(\"/tmp/x\", True, 1)\\n    return ', 1)\n"
                        "    dst.writestr(info, data)\n"
                        "dst.close()\n",
                        {kBundled + "/vision.pt", pkg + "/vision.pt"}),
                 0);
    } else {
        // A genuine decoder, but of the tiny family, next to the demo model's vision module.
        QCOMPARE(python("import sys, torch\n"
                        "sys.path.insert(0, sys.argv[3])\n"
                        "from florence2 import ops, model\n"
                        "import json\n"
                        "ops.load_library(None)\n"
                        "m = model.Florence2(json.load(open(sys.argv[2]))).eval()\n"
                        "m.tie_weights()\n"
                        "m.tie_encoder_embedding()\n"
                        "torch.jit.script(m.dec).save(sys.argv[1])\n",
                        {pkg + "/decoder.pt",
                         FLORENCE_SOURCE_DIR "/resources/florence2/config-tiny.json",
                         FLORENCE_SOURCE_DIR "/engine/exporter"}),
                 0);
        role = "decoder";
        name = "decoder.pt";
    }
    relist(pkg, role, name); // checksums that match: the manifest's author computed them
    const QString err = errorOf([&] { Model::load(pkg.toStdString()); });
    QVERIFY2(err.contains(name), qPrintable(err));
    QVERIFY2(
        err.contains(kind == "family" ? "another model" : "not code Florence Studio's exporter"),
        qPrintable(err));
    QVERIFY2(err.contains("re-import"), qPrintable(err));
    QFile v(target);
    QVERIFY(v.open(QIODevice::ReadOnly));
    QCOMPARE(v.readAll(), QByteArray("untouched"));
}

void TestHostile::manifestValuesOutOfRange_data() {
    QTest::addColumn<QString>("section");
    QTest::addColumn<QString>("key");
    QTest::addColumn<QJsonValue>("value"); // undefined: remove the key
    QTest::addColumn<QString>("expected");
    QTest::newRow("forced_bos 2,000,000,000 (was a segfault)")
        << "tokens"
        << "forced_bos" << QJsonValue(2000000000.0) << "\"tokens.forced_bos\" is 2000000000";
    QTest::newRow("forced_eos 60,000 (was a heap write)")
        << "tokens"
        << "forced_eos" << QJsonValue(60000) << "\"tokens.forced_eos\" is 60000";
    QTest::newRow("decoder_start 10^9 (was a traceback)")
        << "tokens"
        << "decoder_start" << QJsonValue(1e9) << "\"tokens.decoder_start\"";
    QTest::newRow("eos 10^12 (past int)") << "tokens"
                                          << "eos" << QJsonValue(1e12) << "\"tokens.eos\"";
    QTest::newRow("negative pad") << "tokens"
                                  << "pad" << QJsonValue(-5) << "\"tokens.pad\"";
    QTest::newRow("fractional bos") << "tokens"
                                    << "bos" << QJsonValue(1.5) << "\"tokens.bos\"";
    QTest::newRow("text as a token") << "tokens"
                                     << "eos" << QJsonValue("2") << "\"tokens.eos\"";
    QTest::newRow("zero beams") << "generation"
                                << "num_beams" << QJsonValue(0) << "\"generation.num_beams\"";
    QTest::newRow("a million new tokens")
        << "generation"
        << "max_new_tokens" << QJsonValue(1e6) << "\"generation.max_new_tokens\"";
    QTest::newRow("zero d_model") << "dimensions"
                                  << "d_model" << QJsonValue(0) << "\"dimensions.d_model\"";
    QTest::newRow("huge vocabulary")
        << "dimensions"
        << "vocab_size" << QJsonValue(1e15) << "\"dimensions.vocab_size\"";
    QTest::newRow("image tokens past the positions")
        << "dimensions"
        << "image_tokens" << QJsonValue(5000) << "\"dimensions.image_tokens\"";
    QTest::newRow("image width 10^6") << "image"
                                      << "width" << QJsonValue(1e6) << "\"image.width\"";
    QTest::newRow("decoder without sha256")
        << "files.decoder"
        << "sha256" << QJsonValue(QJsonValue::Undefined) << "\"files.decoder.sha256\" is missing";
    QTest::newRow("vision without size")
        << "files.vision"
        << "size" << QJsonValue(QJsonValue::Undefined) << "\"files.vision.size\"";
    QTest::newRow("file outside the package")
        << "files.vocab"
        << "name" << QJsonValue("../../etc/passwd") << "invalid name";
}

void TestHostile::manifestValuesOutOfRange() {
    QFETCH(QString, section);
    QFETCH(QString, key);
    QFETCH(QJsonValue, value);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString pkg = dir.path() + "/pkg";
    copyDir(kBundled, pkg);
    QJsonObject m = readJson(pkg + "/manifest.json");
    const QStringList path = section.split('.');
    QJsonObject outer = m[path[0]].toObject();
    QJsonObject inner = path.size() > 1 ? outer[path[1]].toObject() : outer;
    if (value.isUndefined())
        inner.remove(key);
    else
        inner[key] = value;
    if (path.size() > 1)
        outer[path[1]] = inner;
    else
        outer = inner;
    m[path[0]] = outer;
    writeJson(pkg + "/manifest.json", m);
    const QString err = errorOf([&] { Model::load(pkg.toStdString()); });
    QVERIFY2(err.contains(expected), qPrintable(err));
    QVERIFY2(err.contains("manifest.json"), qPrintable(err));
    QVERIFY2(!err.contains('\n'), qPrintable(err));
}

void TestHostile::forcedTokensAtTheEdgeOfTheVocabulary() {
    // The largest ids the checks accept index the last row of the logits: a correct result.
    QTemporaryDir dir;
    const QString pkg = dir.path() + "/pkg";
    copyDir(kBundled, pkg);
    QJsonObject m = readJson(pkg + "/manifest.json");
    const int vocab = m["dimensions"].toObject()["vocab_size"].toInt();
    QJsonObject tokens = m["tokens"].toObject();
    tokens["forced_bos"] = vocab - 1;
    tokens["forced_eos"] = vocab - 1;
    m["tokens"] = tokens;
    writeJson(pkg + "/manifest.json", m);
    auto model = Model::load(pkg.toStdString());
    Session s(model);
    Request req;
    RgbImage gray;
    gray.width = gray.height = 64;
    gray.pixels.assign(64 * 64 * 3, 128);
    req.image = std::make_shared<const RgbImage>(std::move(gray));
    req.prompt = "What does the image describe?";
    GenerationOptions o = model->defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 3;
    const Result r = s.generate(req, o);
    QCOMPARE(r.generatedIds.size(), size_t(4)); // start token + 3
    QCOMPARE(r.generatedIds[1], int64_t(vocab - 1));
    QCOMPARE(r.generatedIds[3], int64_t(vocab - 1));
}

void TestHostile::packageFilesThatAreNotFiles_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("decoder.pt linked to /dev/zero (hung hashing)") << "devzero"
                                                                   << "decoder.pt is a device";
    QTest::newRow("decoder.pt a FIFO") << "fifo"
                                       << "decoder.pt is a FIFO";
    QTest::newRow("manifest.json a FIFO") << "manifest-fifo"
                                          << "manifest.json is a FIFO";
    QTest::newRow("decoder.pt a folder") << "folder"
                                         << "decoder.pt is a folder";
}

void TestHostile::packageFilesThatAreNotFiles() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString pkg = dir.path() + "/pkg";
    copyDir(kBundled, pkg);
    const QString victim = pkg + (kind == "manifest-fifo" ? "/manifest.json" : "/decoder.pt");
    QVERIFY(QFile::remove(victim));
    if (kind == "devzero")
        QVERIFY(QFile::link("/dev/zero", victim));
    else if (kind == "folder")
        QVERIFY(QDir().mkpath(victim));
    else
        QCOMPARE(::mkfifo(QFile::encodeName(victim).constData(), 0600), 0);
    const QString err = errorOf([&] { Model::load(pkg.toStdString()); });
    QVERIFY2(err.contains(expected), qPrintable(err));
}

void TestHostile::loadCanBeCancelled() {
    std::atomic<bool> cancel{true};
    LoadOptions options;
    options.cancel = &cancel;
    const QString err = errorOf([&] { Model::load(kBundled.toStdString(), options); });
    QVERIFY2(err.contains("cancelled"), qPrintable(err));
}

void TestHostile::loadStopsInsideAModuleArchive() {
    // Set just before the modules are read (the last check of the flag before them has passed):
    // the archive reader sees short reads and the load ends as cancelled, not as a damaged file.
    std::atomic<bool> cancel{false};
    LoadOptions options;
    options.cancel = &cancel;
    options.beforeModules = [&] { cancel = true; };
    const QString err = errorOf([&] { Model::load(kBundled.toStdString(), options); });
    QVERIFY2(err.contains("cancelled") && err.contains(kBundled), qPrintable(err));
    QVERIFY2(!err.contains("TorchScript"), qPrintable(err));
}

void TestHostile::modulesLoadOnlyAfterTheChecks() {
    // beforeModules is where a caller releases the model in use: never for a package its
    // checks refuse, once for a good one.
    int calls = 0;
    LoadOptions options;
    options.beforeModules = [&] { ++calls; };
    QTemporaryDir dir;
    const QString pkg = dir.path() + "/pkg";
    copyDir(kBundled, pkg);
    {
        QFile decoder(pkg + "/decoder.pt");
        QVERIFY(decoder.open(QIODevice::ReadWrite));
        QVERIFY(decoder.seek(100));
        QCOMPARE(decoder.write("XXXX"), qint64(4));
    }
    const QString err = errorOf([&] { Model::load(pkg.toStdString(), options); });
    QVERIFY2(err.contains("checksum"), qPrintable(err));
    QCOMPARE(calls, 0);
    const auto model = Model::load(kBundled.toStdString(), options);
    QVERIFY(model != nullptr);
    QCOMPARE(calls, 1);
}

void TestHostile::importOutIsNeverDeleted_data() {
    QTest::addColumn<QString>("layout");
    QTest::addColumn<QString>("expected");
    QTest::newRow("a folder with a manifest.json and the user's files")
        << "manifest-and-files"
        << "files the exporter did not write";
    QTest::newRow("a folder of the user's files") << "files"
                                                  << "not a model package";
    QTest::newRow("a file") << "file"
                            << "not a folder";
}

void TestHostile::importOutIsNeverDeleted() {
    QFETCH(QString, layout);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString out = dir.path() + "/out";
    if (layout == "file") {
        QFile f(out);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("my notes");
    } else {
        QVERIFY(QDir().mkpath(out + "/photos"));
        QFile f(out + "/thesis.txt");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("years of work");
        f.close();
        if (layout == "manifest-and-files") {
            QFile m(out + "/manifest.json");
            QVERIFY(m.open(QIODevice::WriteOnly));
            m.write("{}");
        }
    }
    ImportJobParams job;
    job.randomInit = "tiny";
    job.outDir = out.toStdString();
    const QString err = importError(job);
    QVERIFY2(err.contains(expected), qPrintable(err));
    QVERIFY2(err.contains(out), qPrintable(err));
    if (layout == "file") {
        QVERIFY(QFileInfo(out).isFile());
    } else {
        QVERIFY(QFile::exists(out + "/thesis.txt"));
        QVERIFY(QFileInfo(out + "/photos").isDir());
    }
    QCOMPARE(QDir(dir.path()).entryList({".export-*"}, QDir::AllEntries | QDir::Hidden).size(), 0);
}

void TestHostile::cancelledImportLeavesNoTemporaryFolder() {
    QTemporaryDir dir;
    std::atomic<bool> cancel{false};
    ImportJobParams job;
    job.randomInit = "tiny";
    job.outDir = (dir.path() + "/out").toStdString();
    // Cancelled once the exporter has made its temporary folder next to --out.
    std::thread watcher([&] {
        for (int i = 0; i < 6000 && !cancel; ++i) {
            if (!QDir(dir.path()).entryList({".export-*"}, QDir::Dirs | QDir::Hidden).isEmpty())
                cancel = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        cancel = true;
    });
    const QString err = importError(job, &cancel);
    watcher.join();
    QVERIFY2(err.contains("cancelled"), qPrintable(err));
    QCOMPARE(QDir(dir.path()).entryList({".export-*"}, QDir::AllEntries | QDir::Hidden),
             QStringList());
    QVERIFY(!QFile::exists(dir.path() + "/out"));
}

QTEST_GUILESS_MAIN(TestHostile)
#include "TestHostile.moc"
