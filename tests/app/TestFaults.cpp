// `florence-studio-cli` when writing fails or what should be a file is not one: standard output
// on a full device, --coco on a device, results written with a file size limit in force (a full
// disk, without root) and on a tiny tmpfs (a real full disk, when the suite runs as root and may
// mount one), sidecars that are cut, FIFOs or links to /dev/zero. Exit codes tell the truth, the
// message names the file, and no result that existed before is lost.
#include "app/CliProcess.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

const QString kScenes = kSamples + "/scenes";
const QStringList kFast = {"--beams", "1", "--max-new-tokens", "24", "--quiet"};

struct RunSetup {
    QString stdoutFile;   // "" keeps it in a pipe
    rlim_t fileLimit = 0; // RLIMIT_FSIZE in the child; 0: none
};

Output runWith(const QString& program, const QStringList& args, const RunSetup& setup,
               int timeoutMs = 300000) {
    QProcess p;
    p.setProcessEnvironment(cliEnvironment());
    if (!setup.stdoutFile.isEmpty())
        p.setStandardOutputFile(setup.stdoutFile);
    const rlim_t limit = setup.fileLimit;
    if (limit > 0)
        p.setChildProcessModifier([limit] {
            // Writes past `limit` fail with EFBIG, as they would with ENOSPC on a full disk.
            std::signal(SIGXFSZ, SIG_IGN);
            rlimit r{};
            getrlimit(RLIMIT_FSIZE, &r);
            r.rlim_cur = limit;
            setrlimit(RLIMIT_FSIZE, &r);
        });
    p.start(program, args);
    return finishProcess(p, timeoutMs);
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool isWholeJson(const QByteArray& bytes) {
    QJsonParseError e{};
    QJsonDocument::fromJson(bytes, &e);
    return e.error == QJsonParseError::NoError;
}

// path (relative) → content, for every file under `dir`.
QMap<QString, QByteArray> snapshot(const QString& dir) {
    QMap<QString, QByteArray> files;
    QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        files.insert(QDir(dir).relativeFilePath(path), readAll(path));
    }
    return files;
}

} // namespace

class TestFaults : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void stdoutOnFullDevice_data();
    void stdoutOnFullDevice();
    void cocoOnDeviceOrFullDisk();
    void batchOnFullDiskKeepsEveryResult();
    void batchOnTinyTmpfs();
    void resumeRedoesCutSidecars();
    void sidecarFifoOrDeviceIsRefusedAtOnce();

private:
    void copyScenes(int count);
    QTemporaryDir m_tmp;
    QString m_dir;
};

void TestFaults::initTestCase() {
    QVERIFY2(QFile::exists(kCli), qPrintable(kCli));
    QVERIFY(m_tmp.isValid());
}

void TestFaults::init() {
    m_dir = m_tmp.filePath(QString::fromLatin1(QTest::currentTestFunction()) + "-" +
                           QString::fromLatin1(QTest::currentDataTag()).replace('/', '_'));
    QDir(m_dir).removeRecursively();
    QVERIFY(QDir().mkpath(m_dir + "/imgs"));
}

void TestFaults::copyScenes(int count) {
    for (int i = 0; i < count; ++i) {
        const QString name = QStringLiteral("scene_%1.png").arg(i, 2, 10, QLatin1Char('0'));
        QVERIFY(QFile::copy(kScenes + "/" + name, m_dir + "/imgs/" + name));
    }
}

void TestFaults::stdoutOnFullDevice_data() {
    QTest::addColumn<QStringList>("args");
    const QString scene = kScenes + "/scene_00.png";
    QTest::newRow("run --json") << QStringList{"run", "--image", scene, "--json"};
    QTest::newRow("run (text)") << QStringList{"run", "--image", scene};
    QTest::newRow("run --jsonl, two images")
        << QStringList{"run", "--image", scene, "--image", kScenes + "/scene_01.png", "--jsonl"};
    QTest::newRow("batch --jsonl") << QStringList{"batch", "--dir", "IMGS", "--format", "jsonl"};
}

void TestFaults::stdoutOnFullDevice() {
    QFETCH(QStringList, args);
    copyScenes(2);
    args.replaceInStrings("IMGS", m_dir + "/imgs");
    RunSetup setup;
    setup.stdoutFile = "/dev/full";
    const Output o = runWith(kCli, args + kFast, setup);
    QVERIFY2(o.exitCode == 1, o.err.constData());
    QVERIFY2(o.err.contains("standard output") && o.err.contains("No space left"),
             o.err.constData());
}

void TestFaults::cocoOnDeviceOrFullDisk() {
    const QString scene = kScenes + "/scene_00.png";
    const QStringList args = QStringList{"run", "--image", scene, "--task", "<OD>"} + kFast;
    Output o = runWith(kCli, args + QStringList{"--coco", "/dev/full"}, {});
    QVERIFY2(o.exitCode == 1 && o.err.contains("/dev/full"), o.err.constData());
    // A good COCO file is kept when the new one cannot be written whole.
    const QString coco = m_dir + "/scene.coco.json";
    const QByteArray good = "{\"images\": [], \"annotations\": [], \"categories\": []}\n";
    QFile f(coco);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(good);
    f.close();
    RunSetup setup;
    setup.fileLimit = 64; // smaller than any COCO document
    o = runWith(kCli, args + QStringList{"--coco", coco}, setup);
    QVERIFY2(o.exitCode == 1 && o.err.contains(coco.toLocal8Bit()), o.err.constData());
    QCOMPARE(readAll(coco), good);
    QCOMPARE(QDir(m_dir).entryList(QDir::Files | QDir::Hidden), QStringList{"scene.coco.json"});
}

void TestFaults::batchOnFullDiskKeepsEveryResult() {
    copyScenes(3);
    const QString imgs = m_dir + "/imgs";
    const QStringList args =
        QStringList{"batch", "--dir", imgs, "--task", "<OD>", "--format", "json,coco"} + kFast;
    Output o = runWith(kCli, args, {});
    QVERIFY2(o.exitCode == 0, o.err.constData());
    const QMap<QString, QByteArray> before = snapshot(imgs);
    QCOMPARE(before.size(), 3 + 3 + 1);
    // --overwrite with no room for any result: each one is reported, none is cut or emptied.
    RunSetup setup;
    setup.fileLimit = 256;
    o = runWith(kCli, args + QStringList{"--overwrite"}, setup);
    QVERIFY2(o.exitCode == 1, o.err.constData()); // the COCO file could not be written
    for (const char* name : {"scene_00.florence.json", "scene_02.florence.json", "OD.coco.json"})
        QVERIFY2(o.err.contains(name), o.err.constData());
    QVERIFY2(o.err.contains("3 failed (3 answered but not written)"), o.err.constData());
    QCOMPARE(snapshot(imgs), before);
}

void TestFaults::batchOnTinyTmpfs() {
    // A real full disk: a 64 KB tmpfs in a mount namespace of its own (root only). What the run
    // leaves there is copied out before the namespace goes.
    if (geteuid() != 0)
        QSKIP("mounting a tmpfs needs root");
    const QString unshare = QStandardPaths::findExecutable("unshare");
    if (unshare.isEmpty())
        QSKIP("unshare is not installed");
    copyScenes(6);
    const QString mnt = m_dir + "/mnt", kept = m_dir + "/kept";
    QVERIFY(QDir().mkpath(mnt) && QDir().mkpath(kept));
    // Fill most of it first, as a disk that is nearly full.
    const QString script = "mount -t tmpfs -o size=64k tmpfs \"$1\" || exit 97\n"
                           "head -c 40000 /dev/zero > \"$1/filler\"\n"
                           "shift; out=\"$1\"; kept=\"$2\"; shift 2\n"
                           "\"$@\"; code=$?\n"
                           "rm -f \"$out/filler\"; cp -a \"$out/.\" \"$kept/\"; exit $code\n";
    const QStringList args =
        QStringList{"-m",     "sh",   "-c",       script,          "sh",    mnt,
                    mnt,      kept,   kCli,       "batch",         "--dir", m_dir + "/imgs",
                    "--task", "<OD>", "--format", "txt,json,coco", "--out", mnt} +
        kFast;
    const Output o = runWith(unshare, args, {});
    // unshare's own complaints ("unshare failed", "cannot change root filesystem propagation"
    // in a chroot, whose / is no mount point) mean the namespace was never made.
    if (o.exitCode == 97 || o.err.startsWith("unshare: ") || o.err.contains("\nunshare: "))
        QSKIP(qPrintable("no tmpfs can be mounted here (a container or a chroot): " +
                         QString::fromLocal8Bit(o.err).trimmed()));
    QVERIFY2(o.exitCode == 3 || o.exitCode == 1, o.err.constData());
    QVERIFY2(o.err.contains("No space left on device"), o.err.constData());
    // Every file left is whole; every image without a whole sidecar is named on stderr.
    const QMap<QString, QByteArray> files = snapshot(kept);
    for (auto it = files.begin(); it != files.end(); ++it)
        QVERIFY2(!it.value().isEmpty() && isWholeJson(it.value()), qPrintable(it.key()));
    int missing = 0;
    for (int i = 0; i < 6; ++i) {
        const QString name = QStringLiteral("scene_%1").arg(i, 2, 10, QLatin1Char('0'));
        if (files.contains(name + ".florence.json"))
            continue;
        ++missing;
        QVERIFY2(o.err.contains(name.toLocal8Bit()), o.err.constData());
    }
    QVERIFY2(missing > 0, "the tmpfs was not full after all");
}

void TestFaults::resumeRedoesCutSidecars() {
    copyScenes(3);
    const QString imgs = m_dir + "/imgs";
    const QStringList args =
        QStringList{"batch", "--dir", imgs, "--task", "<OD>", "--format", "json"} + kFast;
    Output o = runWith(kCli, args, {});
    QVERIFY2(o.exitCode == 0, o.err.constData());
    const QByteArray whole = readAll(imgs + "/scene_01.florence.json");
    // What an interrupted write on another program's watch could leave: empty, cut in half.
    QFile empty(imgs + "/scene_00.florence.json");
    QVERIFY(empty.open(QIODevice::WriteOnly | QIODevice::Truncate));
    empty.close();
    QFile cut(imgs + "/scene_02.florence.json");
    QVERIFY(cut.open(QIODevice::WriteOnly | QIODevice::Truncate));
    cut.write(whole.left(whole.size() / 2));
    cut.close();
    o = runWith(kCli, args + QStringList{"--resume"}, {});
    QVERIFY2(o.exitCode == 0, o.err.constData());
    for (const char* name : {"scene_00", "scene_02"}) {
        const QByteArray doc = readAll(imgs + "/" + name + ".florence.json");
        QVERIFY2(isWholeJson(doc), name);
        QCOMPARE(QJsonDocument::fromJson(doc)["task"].toString(), QString("<OD>"));
    }
    QCOMPARE(readAll(imgs + "/scene_01.florence.json"), whole); // skipped: its timings differ
}

void TestFaults::sidecarFifoOrDeviceIsRefusedAtOnce() {
    copyScenes(2);
    const QString imgs = m_dir + "/imgs";
    const QString fifo = imgs + "/scene_00.florence.json";
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    QVERIFY(QFile::link("/dev/zero", imgs + "/scene_01.florence.json"));
    for (const char* mode : {"--resume", "--overwrite"}) {
        // A FIFO would block the run forever; /dev/zero would be read without end.
        const Output o = runWith(
            kCli,
            QStringList{"batch", "--dir", imgs, "--task", "<OD>", "--format", "json", mode} + kFast,
            {}, 120000);
        QVERIFY2(o.exitCode == 3, o.err.constData());
        QVERIFY2(o.err.contains("FIFO") && o.err.contains("device"), o.err.constData());
    }
    struct stat st {};
    QCOMPARE(::stat(fifo.toLocal8Bit().constData(), &st), 0);
    QVERIFY(S_ISFIFO(st.st_mode));
    QVERIFY(QFileInfo(imgs + "/scene_01.florence.json").isSymLink());
}

QTEST_GUILESS_MAIN(TestFaults)
#include "TestFaults.moc"
