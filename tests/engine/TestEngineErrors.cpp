// Every error the engine promises: damaged or incomplete packages, bad requests and imports,
// each with a message naming the file or the setting at fault.
#include "TestEngine.h"

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
    QTest::newRow("manifest empty") << "empty-manifest"
                                    << "manifest.json: is empty";
    QTest::newRow("manifest an array") << "array-manifest"
                                       << "manifest.json: holds a JSON array, not the object";
    QTest::newRow("empty folder") << "empty"
                                  << "lacks manifest.json: not a Florence Studio model package";
    // Its modules without their manifest: damaged, not a checkpoint to import.
    QTest::newRow("manifest removed") << "rm-manifest"
                                      << "lacks manifest.json: the package is damaged";
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
        } else if (damage == "rm-manifest") {
            QVERIFY(QFile::remove(pkg + "/manifest.json"));
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
            else if (damage == "empty-manifest")
                text = " \n";
            else if (damage == "array-manifest")
                text = "[1, 2, 3]";
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
