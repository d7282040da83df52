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
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <zlib.h>

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

// `sh -c SCRIPT sh ARGS...` in a mount namespace of its own, where SCRIPT may mount a tmpfs
// (exiting 97 when it cannot). `skip` says why it cannot run here: not root, no unshare, or no
// namespace (a container or a chroot, where unshare complains).
Output inMountNamespace(const QString& script, const QStringList& args, QString* skip) {
    if (geteuid() != 0) {
        *skip = QStringLiteral("mounting a tmpfs needs root");
        return {};
    }
    const QString unshare = QStandardPaths::findExecutable("unshare");
    if (unshare.isEmpty()) {
        *skip = QStringLiteral("unshare is not installed");
        return {};
    }
    const Output o = runWith(unshare, QStringList{"-m", "sh", "-c", script, "sh"} + args, {});
    if (o.exitCode == 97 || o.err.startsWith("unshare: ") || o.err.contains("\nunshare: "))
        *skip = "no tmpfs can be mounted here (a container or a chroot): " +
                QString::fromLocal8Bit(o.err).trimmed();
    return o;
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

void appendBe32(QByteArray& b, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
        b.append(char((v >> shift) & 0xff));
}

void appendLe32(QByteArray& b, uint32_t v) {
    for (int shift = 0; shift < 32; shift += 8)
        b.append(char((v >> shift) & 0xff));
}

void appendPngChunk(QByteArray& png, const char* type, const QByteArray& data) {
    appendBe32(png, uint32_t(data.size()));
    const QByteArray body = QByteArray(type, 4) + data;
    png += body;
    appendBe32(png, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(body.constData()),
                                   uInt(body.size()))));
}

// Images whose decoders print lines of their own: a PNG with pixel data after its last row
// (libpng: "IDAT: Too much image data"; the image is whole and answered), a BMP and a TIFF
// declaring more than they hold (OpenCV's exception text and a warning line), a JPEG cut short
// (libjpeg's "Premature end of JPEG file"). Name → bytes.
QMap<QString, QByteArray> noisyImages() {
    QMap<QString, QByteArray> files;
    QByteArray png("\x89PNG\r\n\x1a\n", 8), ihdr, rows;
    appendBe32(ihdr, 64);
    appendBe32(ihdr, 48);
    ihdr.append("\x08\x02\x00\x00\x00", 5); // 8-bit RGB
    appendPngChunk(png, "IHDR", ihdr);
    for (int y = 0; y < 48; ++y) {
        rows.append(char(0));
        for (int x = 0; x < 64 * 3; ++x)
            rows.append(char((x * 5 + y * 3) & 0xff));
    }
    appendPngChunk(png, "IDAT", qCompress(rows + QByteArray(500, '\0')).mid(4)); // zlib stream
    appendPngChunk(png, "IEND", {});
    files.insert("extra_data.png", png);
    QByteArray bmp("BM", 2);
    for (const uint32_t v : {54u + 3000u, 0u, 54u, 40u, 4000u, 3000u})
        appendLe32(bmp, v);
    bmp.append("\x01\x00\x18\x00", 4);
    bmp.append(QByteArray(24, '\0'));
    files.insert("rows_missing.bmp", bmp + QByteArray(3000, '\x40'));
    QByteArray tiff("II*\x00\x08\x00\x00\x00\x08\x00", 10);
    const uint32_t entries[][3] = {{256, 4, 2000}, {257, 4, 1500},   {258, 3, 8},
                                   {259, 3, 1},    {262, 3, 1},      {273, 4, 1u << 20},
                                   {277, 3, 1},    {279, 4, 3000000}};
    for (const auto& e : entries) {
        tiff.append(char(e[0] & 0xff));
        tiff.append(char(e[0] >> 8));
        tiff.append(char(e[1]));
        tiff.append(char(0));
        appendLe32(tiff, 1);
        appendLe32(tiff, e[2]);
    }
    appendLe32(tiff, 0);
    files.insert("strip_missing.tif", tiff + QByteArray(100, '\0'));
    const QByteArray jpeg = readAll(kSamples + "/rocket.jpg");
    files.insert("cut.jpg", jpeg.left(jpeg.size() / 2));
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
    void readOnlyOutputIsSaidFirst();
    void resumeRedoesCutSidecars();
    void sidecarFifoOrDeviceIsRefusedAtOnce();
    void damagedImagesPrintOnlyOurMessage();
    void screenshotOfAnImageThatCannotOpenEndsAtOnce();
    void screenshotOfARunThatCannotStartEndsAtOnce_data();
    void screenshotOfARunThatCannotStartEndsAtOnce();
    void screenshotLeavesTheUsersSettingsAlone();

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
    // Said once, with its reason (batch said it again as "(a write failed)").
    QVERIFY2(o.err.count("cannot write to standard output") == 1, o.err.constData());
}

void TestFaults::cocoOnDeviceOrFullDisk() {
    const QString scene = kScenes + "/scene_00.png";
    const QStringList args = QStringList{"run", "--image", scene, "--task", "<OD>"} + kFast;
    // A device is refused before the model runs (a wrong argument); a full disk below.
    Output o = runWith(kCli, args + QStringList{"--coco", "/dev/full"}, {});
    QVERIFY2(o.exitCode == 2 && o.err.contains("/dev/full") && o.out.isEmpty(), o.err.constData());
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
    copyScenes(6);
    const QString mnt = m_dir + "/mnt", kept = m_dir + "/kept";
    QVERIFY(QDir().mkpath(mnt) && QDir().mkpath(kept));
    // Fill most of it first, as a disk that is nearly full.
    const QString script = "mount -t tmpfs -o size=64k tmpfs \"$1\" || exit 97\n"
                           "head -c 40000 /dev/zero > \"$1/filler\"\n"
                           "shift; out=\"$1\"; kept=\"$2\"; shift 2\n"
                           "\"$@\"; code=$?\n"
                           "rm -f \"$out/filler\"; cp -a \"$out/.\" \"$kept/\"; exit $code\n";
    QString skip;
    const Output o =
        inMountNamespace(script,
                         QStringList{mnt, mnt, kept, kCli, "batch", "--dir", m_dir + "/imgs",
                                     "--task", "<OD>", "--format", "txt,json,coco", "--out", mnt} +
                             kFast,
                         &skip);
    if (!skip.isEmpty())
        QSKIP(qPrintable(skip));
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

void TestFaults::readOnlyOutputIsSaidFirst() {
    // An output folder on a read-only mount (root only): batch said "cannot make the output
    // folder" with no reason, import ran minutes of scripting and then named its temporary
    // folder. Both now refuse at once, saying why.
    copyScenes(1);
    const QString mnt = m_dir + "/ro";
    QVERIFY(QDir().mkpath(mnt));
    const QString script = "mount -t tmpfs -o ro,size=64k tmpfs \"$1\" || exit 97\n"
                           "shift; \"$@\"\n";
    for (const QStringList& command :
         {QStringList{kCli, "batch", "--dir", m_dir + "/imgs", "--task", "<OD>", "--out",
                      mnt + "/results"},
          QStringList{kCli, "import", "--random-init", "base", "--out", mnt + "/pkg"}}) {
        QString skip;
        const Output o = inMountNamespace(script, QStringList{mnt} + command, &skip);
        if (!skip.isEmpty())
            QSKIP(qPrintable(skip));
        QVERIFY2(o.exitCode == 1, o.err.constData());
        QVERIFY2(o.err.contains((mnt + ": Read-only file system").toLocal8Bit()) &&
                     !o.err.contains(".export-") && o.err.trimmed().count('\n') == 0,
                 o.err.constData());
    }
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

void TestFaults::damagedImagesPrintOnlyOurMessage() {
    const QString imgs = m_dir + "/imgs";
    const QMap<QString, QByteArray> files = noisyImages();
    for (auto it = files.begin(); it != files.end(); ++it) {
        QFile f(imgs + "/" + it.key());
        QVERIFY(f.open(QIODevice::WriteOnly));
        QCOMPARE(f.write(it.value()), it.value().size());
    }
    // One by one: the refused ones end in exactly one line, naming the file.
    for (auto it = files.begin(); it != files.end(); ++it) {
        const QString path = imgs + "/" + it.key();
        const Output o = runWith(kCli, QStringList{"run", "--image", path} + kFast, {});
        if (it.key() == "extra_data.png") {
            QVERIFY2(o.exitCode == 0, o.err.constData());
            QCOMPARE(QString::fromLocal8Bit(o.err), QString());
            continue;
        }
        QVERIFY2(o.exitCode == 1, o.err.constData());
        const QString err = QString::fromLocal8Bit(o.err);
        QVERIFY2(err.startsWith("florence-studio-cli: error: " + path + ": ") &&
                     err.count('\n') == 1,
                 qPrintable(err));
    }
    // A batch: the summary and one line per refused file, nothing else.
    const Output o = runWith(kCli, QStringList{"batch", "--dir", imgs} + kFast, {});
    QVERIFY2(o.exitCode == 3, o.err.constData());
    const QStringList lines = QString::fromLocal8Bit(o.err).split('\n', Qt::SkipEmptyParts);
    QVERIFY2(lines.size() == 4, o.err.constData());
    QVERIFY2(lines[0].startsWith("batch: 1 answered, 0 skipped (results exist), 3 failed"),
             o.err.constData());
    for (const char* name : {"rows_missing.bmp", "strip_missing.tif", "cut.jpg"})
        QVERIFY2(
            lines.filter(QRegularExpression("^  " + QRegularExpression::escape(imgs + "/" + name) +
                                            ": the (BMP|TIFF|JPEG)"))
                    .size() == 1,
            o.err.constData());
}

void TestFaults::screenshotOfAnImageThatCannotOpenEndsAtOnce() {
    // `florence-studio IMAGE --screenshot OUT.png` waits for the image to open before it runs:
    // one that cannot (a FIFO) ends the shot with the reason, not at its ten-minute timeout.
    const QString gui = QStringLiteral(FLORENCE_BINARY_DIR "/bin/florence-studio");
    QVERIFY2(QFile::exists(gui), qPrintable(gui));
    const QString fifo = m_dir + "/photo.png";
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    QProcess p;
    QProcessEnvironment env = cliEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    for (const char* dir : {"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"})
        env.insert(dir, m_dir + "/home");
    p.setProcessEnvironment(env);
    p.start(gui, {"--image", fifo, "--screenshot", m_dir + "/shot.png"});
    const Output o = finishProcess(p, 300000);
    QVERIFY2(o.exitCode == 1, o.err.constData());
    QVERIFY2(o.err.contains("the image did not open") && o.err.contains("photo.png") &&
                 o.err.contains("FIFO"),
             o.err.constData());
    QVERIFY(QFile::exists(m_dir + "/shot.png")); // the window as it was, with the message
}

namespace {

// The app, offscreen, with its home (settings, caches) in `home`.
Output runApp(const QStringList& args, const QString& home) {
    const QString gui = QStringLiteral(FLORENCE_BINARY_DIR "/bin/florence-studio");
    QProcess p;
    QProcessEnvironment env = cliEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    for (const char* dir : {"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"})
        env.insert(dir, home);
    p.setProcessEnvironment(env);
    p.start(gui, args);
    return finishProcess(p, 300000);
}

} // namespace

void TestFaults::screenshotOfARunThatCannotStartEndsAtOnce_data() {
    QTest::addColumn<QStringList>("task");
    QTest::addColumn<QString>("said");
    QTest::newRow("text missing") << QStringList{"--task", "<CAPTION_TO_PHRASE_GROUNDING>"}
                                  << "the run did not start: Type a caption";
    QTest::newRow("region missing") << QStringList{"--task", "<REGION_TO_CATEGORY>"}
                                    << "the run did not start: ";
    QTest::newRow("unknown task")
        << QStringList{"--task", "<BOGUS>"}
        << "--task <BOGUS>: <BOGUS> is not a task of florence2-demo-shapes";
    // Not a run refused, but the same end: the reason, not only that the model did not load.
    QTest::newRow("no model folder")
        << QStringList{"--model", "/nonexistent-florence-model"}
        << "the model did not load: model folder /nonexistent-florence-model does not exist";
}

void TestFaults::screenshotOfARunThatCannotStartEndsAtOnce() {
    // A run the window refuses ends the shot with the window's reason (exit 1, the window
    // grabbed with its message), where it waited for a run that never came until its timeout;
    // an unknown task no longer shoots the default task instead.
    QFETCH(QStringList, task);
    QFETCH(QString, said);
    const Output o = runApp(QStringList{"--image", kScenes + "/scene_00.png", "--screenshot",
                                        m_dir + "/shot.png", "--max-new-tokens", "4"} +
                                task,
                            m_dir + "/home");
    QVERIFY2(o.exitCode == 1, o.err.constData());
    QVERIFY2(o.err.contains(said.toUtf8()), o.err.constData());
    QVERIFY(QFile::exists(m_dir + "/shot.png"));
}

void TestFaults::screenshotLeavesTheUsersSettingsAlone() {
    // The Process Folder shot runs over a temporary folder of results: the user's next dialog
    // must not open on it (nor their recent files list what the shot opened).
    const QString home = m_dir + "/home";
    const QString conf = home + "/FlorenceStudio/florence-studio.conf";
    QVERIFY(QDir().mkpath(home + "/FlorenceStudio"));
    QFile f(conf);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("[General]\nkept=yes\n");
    f.close();
    const Output o = runApp({"--view", "process-folder", "--screenshot", m_dir + "/shot.png",
                             "--max-new-tokens", "4"},
                            home);
    QVERIFY2(o.exitCode == 0, o.err.constData());
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("[General]\nkept=yes\n"));
}

QTEST_GUILESS_MAIN(TestFaults)
#include "TestFaults.moc"
