// Checkpoints already on the disk: a temporary HOME with a Hugging Face hub cache laid out as the
// hub writes it (models--ORG--NAME/refs/main, snapshots/REV/ of symlinks into blobs/) and a
// ~/Downloads folder. Florence-2 folders are found with name, revision, layout and size; a
// snapshot linking outside its cache entry and other models are not, and a FIFO does not block
// the search; `ORG/NAME` resolves to its snapshot and imports.
#include <florence/checkpoints.h>
#include <florence/importer.h>

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <sys/stat.h>

using namespace florence;

namespace {

const QString kFixture = QStringLiteral(FLORENCE_TEST_DATA_DIR "/florence2-tiny-random");

bool writeFile(const QString& path, const QByteArray& data) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(data) == data.size();
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// One cache entry as the hub lays it out: every file a blob named by (a stand-in for) its hash,
// linked from the snapshot by a relative symlink.
bool addCacheEntry(const QString& cache, const QString& name, const QString& revision,
                   const QMap<QString, QByteArray>& files) {
    const QString entry = cache + "/models--" + QString(name).replace('/', "--");
    int blob = 0;
    for (auto it = files.begin(); it != files.end(); ++it) {
        const QString blobName = QString("blob%1%2").arg(revision).arg(++blob);
        if (!writeFile(entry + "/blobs/" + blobName, it.value()))
            return false;
        const QString link = entry + "/snapshots/" + revision + "/" + it.key();
        QDir().mkpath(QFileInfo(link).absolutePath());
        if (!QFile::link("../../blobs/" + blobName, link))
            return false;
    }
    return writeFile(entry + "/refs/main", revision.toUtf8());
}

const FoundCheckpoint* byName(const std::vector<FoundCheckpoint>& found, const std::string& name) {
    const auto it = std::find_if(found.begin(), found.end(),
                                 [&](const FoundCheckpoint& c) { return c.name == name; });
    return it == found.end() ? nullptr : &*it;
}

} // namespace

class TestCheckpointSearch : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_home;
    QString cache() const { return m_home.path() + "/hf/hub"; }

private slots:
    void initTestCase();
    void findsCacheAndDownloads();
    void resolvesHubNames();
    void importsByHubName();
};

void TestCheckpointSearch::initTestCase() {
    QVERIFY(m_home.isValid());
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    qputenv("HOME", m_home.path().toUtf8());
    qputenv("HF_HOME", (m_home.path() + "/hf").toUtf8());
    qunsetenv("HF_HUB_CACHE");
    qunsetenv("XDG_CACHE_HOME");
    qunsetenv("XDG_CONFIG_HOME");

    const QByteArray config = readFile(kFixture + "/config.json");
    QVERIFY(!config.isEmpty());
    QVERIFY(addCacheEntry(
        cache(), "florence-test/tiny-random", "0123abcd",
        {{"config.json", config},
         {"pytorch_model.bin", readFile(kFixture + "/pytorch_model.bin")},
         {"preprocessor_config.json", readFile(kFixture + "/preprocessor_config.json")}}));
    // An older revision that refs/main no longer names.
    QVERIFY(
        addCacheEntry(cache(), "florence-test/tiny-random", "00000old", {{"config.json", config}}));
    QVERIFY(writeFile(cache() + "/models--florence-test--tiny-random/refs/main", "0123abcd"));
    // Not Florence-2.
    QVERIFY(addCacheEntry(cache(), "google-bert/bert-base-uncased", "feed",
                          {{"config.json", R"({"model_type": "bert"})"}}));
    // A snapshot whose weights link to a file outside the cache.
    QVERIFY(addCacheEntry(cache(), "stranger/Florence-2-leak", "beef", {{"config.json", config}}));
    QVERIFY(writeFile(m_home.path() + "/secret.bin", "not a download"));
    QVERIFY(QFile::link(m_home.path() + "/secret.bin",
                        cache() + "/models--stranger--Florence-2-leak/snapshots/beef/"
                                  "pytorch_model.bin"));
    // refs/main a FIFO (it would block a plain read): the newest snapshot is taken instead.
    QVERIFY(addCacheEntry(cache(), "stranger/Florence-2-fifo", "cafe", {{"config.json", config}}));
    const QString ref = cache() + "/models--stranger--Florence-2-fifo/refs/main";
    QVERIFY(QFile::remove(ref));
    QCOMPARE(::mkfifo(QFile::encodeName(ref).constData(), 0600), 0);
    // A native-layout folder in ~/Downloads.
    QJsonObject native = QJsonDocument::fromJson(config).object();
    QJsonObject vision = native["vision_config"].toObject();
    vision["embed_dim"] = vision["dim_embed"];
    vision.remove("dim_embed");
    native["vision_config"] = vision;
    QVERIFY(writeFile(m_home.path() + "/Downloads/Florence-2-large-ft/config.json",
                      QJsonDocument(native).toJson()));
    QVERIFY(writeFile(m_home.path() + "/Downloads/Florence-2-large-ft/model.safetensors",
                      QByteArray(1000, 'x')));
    QVERIFY(writeFile(m_home.path() + "/Downloads/holiday-photos/config.json", "{}"));
}

void TestCheckpointSearch::findsCacheAndDownloads() {
    const std::vector<std::string> caches = huggingFaceCacheDirs();
    QCOMPARE(caches.size(), size_t(1));
    QCOMPARE(QString::fromStdString(caches[0]), cache());

    const std::vector<FoundCheckpoint> found = findCheckpoints();
    QCOMPARE(found.size(), size_t(3));
    const FoundCheckpoint* fifo = byName(found, "stranger/Florence-2-fifo");
    QVERIFY(fifo);
    QCOMPARE(fifo->revision, std::string("cafe"));
    const FoundCheckpoint* tiny = byName(found, "florence-test/tiny-random");
    QVERIFY(tiny);
    QCOMPARE(tiny->revision, std::string("0123abcd"));
    QCOMPARE(tiny->layout, std::string("original"));
    QCOMPARE(tiny->where, std::string("Hugging Face cache"));
    QCOMPARE(tiny->weightBytes, QFileInfo(kFixture + "/pytorch_model.bin").size());
    QCOMPARE(QString::fromStdString(tiny->dir),
             cache() + "/models--florence-test--tiny-random/snapshots/0123abcd");
    const FoundCheckpoint* large = byName(found, "Florence-2-large-ft");
    QVERIFY(large);
    QCOMPARE(large->layout, std::string("native"));
    QCOMPARE(large->where, std::string("Downloads"));
    QCOMPARE(large->weightBytes, int64_t(1000));
    QVERIFY(large->revision.empty());
}

void TestCheckpointSearch::resolvesHubNames() {
    QCOMPARE(QString::fromStdString(resolveCheckpoint("florence-test/tiny-random")),
             cache() + "/models--florence-test--tiny-random/snapshots/0123abcd");
    // A folder is taken as it is.
    QCOMPARE(resolveCheckpoint(kFixture.toStdString()), kFixture.toStdString());
    const auto errorOf = [](const std::string& name) {
        try {
            resolveCheckpoint(name);
        } catch (const ImportError& e) {
            return QString::fromUtf8(e.what());
        }
        return QStringLiteral("no error");
    };
    QString err = errorOf("stranger/Florence-2-leak");
    QVERIFY2(err.contains("links outside"), qPrintable(err));
    err = errorOf((cache() + "/models--stranger--Florence-2-leak/snapshots/beef").toStdString());
    QVERIFY2(err.contains("links outside"), qPrintable(err));
    err = errorOf("microsoft/Florence-2-base");
    QVERIFY2(err.contains("neither a folder nor in the Hugging Face cache") &&
                 err.contains(cache()),
             qPrintable(err));
}

void TestCheckpointSearch::importsByHubName() {
    ImportJobParams job;
    job.hfDir = "florence-test/tiny-random";
    job.outDir = (m_home.path() + "/pkg").toStdString();
    try {
        runImport(job);
    } catch (const florence::ImportError& e) {
        // The sanitizer build (tools/run-sanitizers.sh) has no exporter and no LibTorch.
        if (!QFile::exists(QStringLiteral(FLORENCE_BUILD_DATA_DIR "/tools/florence2_export.py")))
            QSKIP("no exporter in this build (the sanitizer build has none)");
        throw;
    }
    const QJsonObject manifest =
        QJsonDocument::fromJson(readFile(m_home.path() + "/pkg/manifest.json")).object();
    QVERIFY2(manifest["source"].toString().contains("snapshots/0123abcd"),
             qPrintable(manifest["source"].toString()));
}

QTEST_GUILESS_MAIN(TestCheckpointSearch)
#include "TestCheckpointSearch.moc"
