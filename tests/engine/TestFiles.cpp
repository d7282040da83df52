// The files the program writes and reads for the user (<florence/files.h>, the batch sidecars of
// <florence/batch.h>): a write that fails part way (a full disk, simulated with a file size
// limit, which needs no root) leaves the old file whole and says which file; a FIFO, a device or
// an oversized file is refused at once, never read and never replaced; an empty or cut sidecar
// is answered again while another task's answer is kept.
#include <florence/annotate.h>
#include <florence/answer_json.h>
#include <florence/batch.h>
#include <florence/files.h>

#include "engine/FileSizeLimit.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<unreadable>");
}

void touch(const QString& path, const QByteArray& bytes = "x") {
    QDir().mkpath(QFileInfo(path).path());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QCOMPARE(f.write(bytes), bytes.size());
}

using florence::test::FileSizeLimit;

// A document of <OD> with one box, as the batch writes it.
QJsonObject boxDocument(const std::string& image) {
    const florence::ParsedAnswer a = florence::parseAnswer(
        "<OD>", "</s><s>dog<loc_100><loc_100><loc_500><loc_500></s>", 200, 100);
    florence::AnswerContext ctx;
    ctx.imageFile = image;
    return florence::answerJson(a, florence::Result{}, ctx);
}

// Names of the files in `dir`, hidden ones (a temporary file left behind) included.
QStringList entries(const QString& dir) {
    return QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot,
                               QDir::Name);
}

} // namespace

class TestFiles : public QObject {
    Q_OBJECT

private slots:
    void init();
    void failedWriteKeepsTheOldFile_data();
    void failedWriteKeepsTheOldFile();
    void notAFileIsNeverWrittenOver();
    void outputFolderThatCannotBeWrittenIsSaidFirst();
    void readsOnlySmallRegularFiles_data();
    void readsOnlySmallRegularFiles();
    void cutSidecarIsAnsweredAgain_data();
    void cutSidecarIsAnsweredAgain();
    void sidecarThatIsNotAFileIsRefused_data();
    void sidecarThatIsNotAFileIsRefused();
    void cocoOnAFullDiskKeepsTheOldOne();
    void cocoNamesRelativeToItsFolder();
    void namesThatAreNotUtf8();

private:
    QTemporaryDir m_tmp;
    QString m_dir;
};

void TestFiles::init() {
    // One folder per test and data row: a row's FIFO must not be the next row's file.
    m_dir = m_tmp.filePath(QString::fromLatin1(QTest::currentTestFunction()) + "-" +
                           QString::fromLatin1(QTest::currentDataTag()).replace('/', '_'));
    QVERIFY(QDir().mkpath(m_dir));
}

void TestFiles::failedWriteKeepsTheOldFile_data() {
    QTest::addColumn<int>("bytes");
    // Smaller than QFileDevice's buffer: the failure comes when the buffer is flushed at the
    // end, which QSaveFile::commit alone does not notice. Larger: while writing.
    QTest::newRow("buffered") << 9000;
    QTest::newRow("large") << 300000;
}

void TestFiles::failedWriteKeepsTheOldFile() {
    QFETCH(int, bytes);
    const QString path = m_dir + "/scene.florence.json";
    touch(path, "{\"good\": true}\n");
    bool threw = false;
    {
        const FileSizeLimit limit(4096);
        try {
            florence::writeFileAtomically(path.toStdString(), QByteArray(bytes, 'x'));
        } catch (const florence::Error& e) {
            threw = true;
            QVERIFY2(QString(e.what()).contains(path), e.what());
        }
    }
    QVERIFY2(threw, "a write cut at 4096 bytes was reported as done");
    QCOMPARE(readAll(path), QByteArray("{\"good\": true}\n"));
    QCOMPARE(entries(m_dir), QStringList{"scene.florence.json"}); // no temporary file left
    // Room again: the same write succeeds.
    florence::writeFileAtomically(path.toStdString(), QByteArray(bytes, 'x'));
    QCOMPARE(readAll(path).size(), bytes);
}

void TestFiles::outputFolderThatCannotBeWrittenIsSaidFirst() {
    // An output folder is checked before a long run, naming what is in the way: batch said
    // "cannot make the output folder" with no reason, import named its own temporary folder.
    QCOMPARE(QString::fromStdString(florence::whyNotWritableFolder(m_dir.toStdString())),
             QString());
    QCOMPARE(QString::fromStdString(
                 florence::whyNotWritableFolder((m_dir + "/not/yet/made").toStdString())),
             QString()); // made in m_dir
    QFile file(m_dir + "/a-file");
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.close();
    QCOMPARE(QString::fromStdString(
                 florence::whyNotWritableFolder((m_dir + "/a-file/out").toStdString())),
             m_dir + "/a-file is not a folder");
    // A folder this process may not write in (as root every folder is writable but a read-only
    // mount's, which test_faults' read-only tmpfs covers).
    if (::geteuid() != 0) {
        QVERIFY(QDir().mkpath(m_dir + "/locked"));
        QVERIFY(QFile::setPermissions(m_dir + "/locked",
                                      QFileDevice::ReadOwner | QFileDevice::ExeOwner));
        QCOMPARE(QString::fromStdString(
                     florence::whyNotWritableFolder((m_dir + "/locked/out").toStdString())),
                 m_dir + "/locked: Permission denied");
        QFile::setPermissions(m_dir + "/locked", QFileDevice::ReadOwner | QFileDevice::WriteOwner |
                                                     QFileDevice::ExeOwner);
    }
}

void TestFiles::notAFileIsNeverWrittenOver() {
    const QString fifo = m_dir + "/answer.json";
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    const QString link = m_dir + "/zero.json";
    QVERIFY(QFile::link("/dev/zero", link));
    for (const QString& path : {fifo, link}) {
        try {
            florence::writeFileAtomically(path.toStdString(), "{}");
            QFAIL("wrote over a FIFO or a device");
        } catch (const florence::Error& e) {
            QVERIFY2(QString(e.what()).contains(path), e.what());
        }
    }
    struct stat st {};
    QCOMPARE(::stat(fifo.toLocal8Bit().constData(), &st), 0);
    QVERIFY(S_ISFIFO(st.st_mode));
    QCOMPARE(QFileInfo(link).symLinkTarget(), QString("/dev/zero"));
    QVERIFY(QFileInfo("/dev/zero").exists());
}

void TestFiles::readsOnlySmallRegularFiles_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("FIFO") << "fifo"
                          << "FIFO";
    QTest::newRow("link to /dev/zero") << "zero"
                                       << "device";
    QTest::newRow("folder") << "folder"
                            << "folder";
    QTest::newRow("too large") << "large"
                               << "bytes, more than";
    QTest::newRow("missing") << "missing"
                             << "does not exist";
    QTest::newRow("link to itself") << "loop"
                                    << "is a link that leads back to itself (a link loop)";
    // The target named as the link's folder resolves it.
    QTest::newRow("link to nothing") << "dangling"
                                     << "/sub/gone.json, which does not exist";
    QTest::newRow("link to a link to nothing") << "chain"
                                               << "is a symbolic link that leads, through ";
}

void TestFiles::readsOnlySmallRegularFiles() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    const QString path = m_dir + "/config.json";
    if (kind == "fifo")
        QCOMPARE(::mkfifo(path.toLocal8Bit().constData(), 0600), 0);
    else if (kind == "zero")
        QVERIFY(QFile::link("/dev/zero", path));
    else if (kind == "folder")
        QVERIFY(QDir().mkpath(path));
    else if (kind == "large")
        touch(path, QByteArray(5000, ' '));
    else if (kind == "loop")
        QCOMPARE(::symlink("config.json", path.toLocal8Bit().constData()), 0);
    else if (kind == "dangling")
        QCOMPARE(::symlink("sub/gone.json", path.toLocal8Bit().constData()), 0);
    else if (kind == "chain") {
        QCOMPARE(::symlink("gone.json", (m_dir + "/dangling.json").toLocal8Bit().constData()), 0);
        QCOMPARE(::symlink("dangling.json", path.toLocal8Bit().constData()), 0);
    }
    try {
        florence::readSmallFile(path.toStdString(), 4096); // a FIFO would block here forever
        QFAIL("read something that is not a small regular file");
    } catch (const florence::Error& e) {
        QVERIFY2(QString(e.what()).contains(path) && QString(e.what()).contains(expected),
                 e.what());
    }
    const std::string why = florence::whyNotARegularFile(path.toStdString(), 4096);
    // Missing, or a link to nothing: "" (the file is not there); otherwise the same words.
    QCOMPARE(why.empty(), kind == "missing" || kind == "dangling" || kind == "chain");
    QVERIFY2(why.empty() || QString::fromStdString(why).contains(expected), why.c_str());
    touch(m_dir + "/small.json", "{}");
    QCOMPARE(florence::readSmallFile((m_dir + "/small.json").toStdString(), 4096),
             QByteArray("{}"));
}

void TestFiles::cutSidecarIsAnsweredAgain_data() {
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<bool>("redone");
    const QByteArray whole = QJsonDocument(boxDocument("a.png")).toJson();
    QTest::newRow("empty") << QByteArray() << true;
    QTest::newRow("cut") << whole.left(whole.size() / 2) << true;
    QTest::newRow("whole") << whole << false;
}

void TestFiles::cutSidecarIsAnsweredAgain() {
    QFETCH(QByteArray, content);
    QFETCH(bool, redone);
    touch(m_dir + "/a.png");
    touch(m_dir + "/b.png");
    touch(m_dir + "/a.florence.json", content);
    florence::FolderJobParams job;
    job.dir = m_dir.toStdString();
    job.task = {"<OD>", "", std::nullopt};
    job.formats = florence::kJsonSidecar;
    job.existing = florence::ExistingResults::Skip;
    const florence::FolderBatch batch(job);
    QVERIFY(batch.refused().empty());
    QCOMPARE(batch.pendingImages().size(), size_t(redone ? 2 : 1));
    QCOMPARE(batch.skippedCount(), size_t(redone ? 0 : 1));
    // Without --resume a cut sidecar does not count as a result in the way.
    job.existing = florence::ExistingResults::Refuse;
    if (redone)
        QCOMPARE(florence::FolderBatch(job).pendingImages().size(), size_t(2));
    else
        QVERIFY_THROWS_EXCEPTION(florence::Error, florence::FolderBatch{job});
}

void TestFiles::sidecarThatIsNotAFileIsRefused_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("FIFO") << "fifo"
                          << "FIFO";
    QTest::newRow("link to /dev/zero") << "zero"
                                       << "device";
    QTest::newRow("folder") << "folder"
                            << "folder";
    QTest::newRow("another task") << "task"
                                  << "<CAPTION>";
    QTest::newRow("not an answer") << "foreign"
                                   << "not an answer document";
}

void TestFiles::sidecarThatIsNotAFileIsRefused() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    touch(m_dir + "/a.png");
    const QString sidecar = m_dir + "/a.florence.json";
    if (kind == "fifo") {
        QCOMPARE(::mkfifo(sidecar.toLocal8Bit().constData(), 0600), 0);
    } else if (kind == "zero") {
        QVERIFY(QFile::link("/dev/zero", sidecar));
    } else if (kind == "folder") {
        QVERIFY(QDir().mkpath(sidecar));
    } else if (kind == "task") {
        QJsonObject doc = boxDocument("a.png");
        doc["task"] = "<CAPTION>";
        touch(sidecar, QJsonDocument(doc).toJson());
    } else {
        touch(sidecar, "{\"mine\": 1}");
    }
    for (auto existing : {florence::ExistingResults::Skip, florence::ExistingResults::Refuse,
                          florence::ExistingResults::Overwrite}) {
        florence::FolderJobParams job;
        job.dir = m_dir.toStdString();
        job.task = {"<OD>", "", std::nullopt};
        job.formats = florence::kJsonSidecar;
        job.existing = existing;
        const florence::FolderBatch batch(job);
        const bool userFile = kind == "task" || kind == "foreign";
        if (existing == florence::ExistingResults::Overwrite && userFile) {
            QCOMPARE(batch.pendingImages().size(), size_t(1)); // asked to replace it
            continue;
        }
        QCOMPARE(batch.refused().size(), size_t(1));
        const QString why = QString::fromStdString(batch.refused()[0].second);
        QVERIFY2(why.contains(sidecar) && why.contains(expected), qPrintable(why));
        QVERIFY(batch.pendingImages().empty());
    }
    QVERIFY(QFileInfo("/dev/zero").exists());
}

void TestFiles::cocoOnAFullDiskKeepsTheOldOne() {
    touch(m_dir + "/a.png");
    florence::FolderJobParams job;
    job.dir = m_dir.toStdString();
    job.task = {"<OD>", "", std::nullopt};
    job.formats = florence::kCocoFile;
    job.existing = florence::ExistingResults::Overwrite;
    const florence::FolderBatch batch(job);
    const std::string a = (m_dir + "/a.png").toStdString();
    const florence::ParsedAnswer answer = florence::parseAnswer(
        "<OD>", "</s><s>dog<loc_100><loc_100><loc_500><loc_500></s>", 200, 100);
    // A sidecar with many boxes makes a COCO file larger than the limit.
    QJsonObject doc = boxDocument(a);
    QJsonObject coco = doc["coco"].toObject();
    QJsonArray annotations;
    for (int i = 0; i < 400; ++i)
        annotations.append(coco["annotations"].toArray().first());
    coco["annotations"] = annotations;
    doc["coco"] = coco;
    batch.writeResult(a, answer, doc);
    const QString cocoPath = QString::fromStdString(batch.cocoPath());
    touch(cocoPath, "{\"old\": true}");
    bool threw = false;
    {
        const FileSizeLimit limit(8192);
        try {
            batch.writeCoco();
        } catch (const florence::Error& e) {
            threw = true;
            QVERIFY2(QString(e.what()).contains(cocoPath), e.what());
        }
    }
    QVERIFY2(threw, "a COCO file cut at 8192 bytes was reported as written");
    QCOMPARE(readAll(cocoPath), QByteArray("{\"old\": true}"));
    batch.writeCoco();
    QCOMPARE(QJsonDocument::fromJson(readAll(cocoPath))["annotations"].toArray().size(), 400);
}

void TestFiles::cocoNamesRelativeToItsFolder() {
    // A folder given relative to the current one: names must resolve next to the COCO file,
    // not repeat the folder ("b2/b2/scene.png").
    touch(m_dir + "/b2/scene.png");
    const QString before = QDir::currentPath();
    QVERIFY(QDir::setCurrent(m_dir));
    florence::FolderJobParams job;
    job.dir = "b2";
    job.task = {"<OD>", "", std::nullopt};
    job.formats = florence::kCocoFile;
    QString name, outName;
    {
        const florence::FolderBatch batch(job);
        const std::string image = batch.images().at(0);
        batch.writeResult(image, florence::parseAnswer("<OD>", "</s><s>dog</s>", 20, 10),
                          boxDocument(image));
        batch.writeCoco();
        name = QJsonDocument::fromJson(readAll("b2/OD.coco.json"))["images"][0]["file_name"]
                   .toString();
        // With --out the COCO file is elsewhere: the name leads back to the image from there.
        job.outDir = "out/od";
        job.existing = florence::ExistingResults::Overwrite;
        const florence::FolderBatch elsewhere(job);
        elsewhere.writeResult(image, florence::parseAnswer("<OD>", "</s><s>dog</s>", 20, 10),
                              boxDocument(image));
        elsewhere.writeCoco();
        outName = QJsonDocument::fromJson(readAll("out/od/OD.coco.json"))["images"][0]["file_name"]
                      .toString();
    }
    QVERIFY(QDir::setCurrent(before));
    QCOMPARE(name, QString("scene.png"));
    QCOMPARE(outName, QString("../../b2/scene.png"));
    QVERIFY(QFileInfo::exists(m_dir + "/out/od/" + outName));
}

void TestFiles::namesThatAreNotUtf8() {
    // "bad\xff\xfename.png": bytes no encoding of the name can hold. run --image finds it by
    // its bytes; batch lists it as failed with the reason instead of skipping it unseen.
    florence::RgbImage img;
    img.width = 8;
    img.height = 6;
    img.pixels.assign(8 * 6 * 3, 200);
    const std::string good = (m_dir + "/good.png").toStdString();
    florence::saveImage(img, good);
    const std::string bad = m_dir.toStdString() + "/bad\xff\xfename.png";
    QCOMPARE(::link(good.c_str(), bad.c_str()), 0);
    const florence::RgbImage loaded = florence::loadImage(bad);
    QCOMPARE(loaded.width, 8);
    florence::FolderJobParams job;
    job.dir = m_dir.toStdString();
    job.task = {"<CAPTION>", "", std::nullopt};
    const florence::FolderBatch batch(job);
    QCOMPARE(batch.images().size(), size_t(2));
    QCOMPARE(batch.refused().size(), size_t(1));
    QCOMPARE(batch.refused()[0].first, bad);
    QVERIFY(QString::fromStdString(batch.refused()[0].second).contains("not valid UTF-8"));
    QCOMPARE(batch.pendingImages(), std::vector<std::string>{good});
}

QTEST_GUILESS_MAIN(TestFiles)
#include "TestFiles.moc"
