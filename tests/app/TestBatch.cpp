// `florence-studio-cli batch` and `run` over many images, as a user runs them: a folder of
// sample scenes with a broken and an unreadable file, sidecars for the rest, the failures
// listed, resume, Ctrl+C mid-run, one JSON line per image, and memory that does not grow with
// the number of images.
#include "app/CliProcess.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

const QString kScenes = kSamples + "/scenes";
// Short answers keep the suite quick; the answers themselves are the engine suites' concern.
const QStringList kFast = {"--beams", "1", "--max-new-tokens", "24", "--quiet"};

// Every line of `out` as a JSON object; fails the test on a line that is not one.
QList<QJsonObject> jsonLines(const QByteArray& out) {
    QList<QJsonObject> lines;
    for (const QByteArray& line : out.split('\n')) {
        if (line.isEmpty())
            continue;
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(line, &error);
        if (error.error != QJsonParseError::NoError || !doc.isObject()) {
            qWarning("not a JSON line: %s", line.constData());
            return {};
        }
        lines << doc.object();
    }
    return lines;
}

QJsonObject readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

// Every file under `dir`, relative, sorted.
QStringList filesUnder(const QString& dir) {
    QStringList files;
    QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
    while (it.hasNext())
        files << QDir(dir).relativeFilePath(it.next());
    files.sort();
    return files;
}

bool copy(const QString& from, const QString& to) {
    QDir().mkpath(QFileInfo(to).path());
    return QFile::copy(from, to);
}

// Peak resident memory (kB) of one run of the CLI, from the kernel's account of that child.
long peakRssKb(const QStringList& args, int* exitCode) {
    std::vector<QByteArray> storage{kCli.toLocal8Bit()};
    for (const QString& a : args)
        storage.push_back(a.toLocal8Bit());
    std::vector<char*> argv;
    for (QByteArray& s : storage)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execv(argv[0], argv.data());
        _exit(127);
    }
    int status = 0;
    rusage usage{};
    if (pid < 0 || wait4(pid, &status, 0, &usage) != pid)
        return -1;
    *exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -2;
    return usage.ru_maxrss;
}

} // namespace

class TestBatch : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void folderWritesSidecarsAndListsFailures();
    void resumeProcessesOnlyWhatIsMissing();
    void captionsGoToTheOutputFolder();
    void captionFilesForTrainingSets();
    void badArguments_data();
    void badArguments();
    void interruptLeavesNoHalfWrittenFile();
    void runStreamsOneLinePerImage();
    void fileListShard();
    void regionPastAnImageIsNotedForThatImage();
    void regionTaskFilesItsAnswersAsCoco();
    void peakMemoryDoesNotGrowWithImages();

private:
    // scene_00..02 at the top, scene_03 in sub/, broken.png (text), and locked.png (no read
    // permission) unless running as root, who can read it anyway.
    void makeFolder();
    QTemporaryDir m_tmp;
    QString m_dir;
    bool m_locked = false;
};

void TestBatch::initTestCase() {
    QVERIFY2(QFile::exists(kCli), qPrintable(kCli));
    QVERIFY(m_tmp.isValid());
}

void TestBatch::init() {
    m_dir = m_tmp.filePath(QString::fromLatin1(QTest::currentTestFunction()));
    QDir(m_dir).removeRecursively();
    QVERIFY(QDir().mkpath(m_dir));
}

void TestBatch::makeFolder() {
    for (const char* name : {"scene_00.png", "scene_01.png", "scene_02.png"})
        QVERIFY(copy(kScenes + "/" + name, m_dir + "/" + name));
    QVERIFY(copy(kScenes + "/scene_03.png", m_dir + "/sub/scene_03.png"));
    QFile broken(m_dir + "/broken.png");
    QVERIFY(broken.open(QIODevice::WriteOnly));
    broken.write("this is not a PNG\n");
    broken.close();
    m_locked = geteuid() != 0;
    if (m_locked) {
        QVERIFY(copy(kScenes + "/scene_04.png", m_dir + "/locked.png"));
        QVERIFY(QFile::setPermissions(m_dir + "/locked.png", QFileDevice::Permissions()));
    }
}

void TestBatch::folderWritesSidecarsAndListsFailures() {
    makeFolder();
    const Output o = runCli(
        QStringList{"batch", "--dir", m_dir, "--recursive", "--task", "<OD>", "--jsonl"} + kFast,
        300000);
    QVERIFY2(o.exitCode == 3, o.err.constData()); // 3: some images failed
    // The failures are listed with their reason; the others have their answer beside them.
    QVERIFY2(o.err.contains("broken.png") && o.err.contains("not an image"), o.err.constData());
    if (m_locked)
        QVERIFY2(o.err.contains("locked.png"), o.err.constData());
    for (const char* name : {"scene_00", "scene_01", "scene_02", "sub/scene_03"}) {
        const QJsonObject doc = readJson(m_dir + "/" + QString(name) + ".florence.json");
        QCOMPARE(doc["task"].toString(), QString("<OD>"));
        QVERIFY(doc["native"]["items"].isArray());
    }
    QVERIFY(!QFile::exists(m_dir + "/broken.florence.json"));
    QVERIFY(!QFile::exists(m_dir + "/locked.florence.json"));
    // Nothing but the images, their answers and the COCO file: no temporary file left over.
    QStringList expected = {"OD.coco.json",
                            "broken.png",
                            "scene_00.florence.json",
                            "scene_00.png",
                            "scene_01.florence.json",
                            "scene_01.png",
                            "scene_02.florence.json",
                            "scene_02.png",
                            "sub/scene_03.florence.json",
                            "sub/scene_03.png"};
    if (m_locked)
        expected << "locked.png";
    expected.sort();
    QCOMPARE(filesUnder(m_dir), expected);
    // One JSON line per image, the failures with their error.
    const QList<QJsonObject> lines = jsonLines(o.out);
    QCOMPARE(lines.size(), m_locked ? 6 : 5);
    int errors = 0;
    for (const QJsonObject& line : lines)
        errors += line.contains("error") ? 1 : 0;
    QCOMPARE(errors, m_locked ? 2 : 1);
    // The folder's COCO file: the four answered images, named relative to the folder.
    const QJsonObject coco = readJson(m_dir + "/OD.coco.json");
    const QJsonArray images = coco["images"].toArray();
    QCOMPARE(images.size(), 4);
    QCOMPARE(images[3]["file_name"].toString(), QString("sub/scene_03.png"));
    QVERIFY(!coco["annotations"].toArray().isEmpty());
    for (const QJsonValue& a : coco["annotations"].toArray()) {
        QVERIFY(a["image_id"].toInt() >= 1 && a["image_id"].toInt() <= 4);
        QVERIFY(a["category_id"].toInt() >= 1 &&
                a["category_id"].toInt() <= coco["categories"].toArray().size());
    }
}

void TestBatch::resumeProcessesOnlyWhatIsMissing() {
    makeFolder();
    const QStringList args =
        QStringList{"batch", "--dir", m_dir, "--recursive", "--task", "<OD>", "--jsonl"} + kFast;
    QCOMPARE(runCli(args, 300000).exitCode, 3);
    QVERIFY(!readJson(m_dir + "/scene_00.florence.json").isEmpty());
    QVERIFY(QFile::remove(m_dir + "/scene_01.florence.json"));
    QFile::remove(m_dir + "/sub/scene_03.florence.json");

    // Without --resume or --overwrite, existing results are not touched.
    const Output refused = runCli(args, 300000);
    QCOMPARE(refused.exitCode, 2); // the command line must choose
    QVERIFY2(refused.err.contains("already have results: --resume skips them, --overwrite"),
             refused.err.constData());

    // --resume: the two missing answers and the failures again, nothing else.
    const Output resumed = runCli(args + QStringList{"--resume"}, 300000);
    QCOMPARE(resumed.exitCode, 3);
    QStringList answered;
    for (const QJsonObject& line : jsonLines(resumed.out))
        if (!line.contains("error"))
            answered << QFileInfo(line["image"]["file"].toString()).fileName();
    answered.sort();
    QCOMPARE(answered, (QStringList{"scene_01.png", "scene_03.png"}));
    QVERIFY(QFile::exists(m_dir + "/scene_01.florence.json"));
    QCOMPARE(readJson(m_dir + "/OD.coco.json")["images"].toArray().size(), 4);

    // A result of another task is never overwritten silently.
    const Output other =
        runCli(QStringList{"batch", "--dir", m_dir, "--recursive", "--task", "<CAPTION>",
                           "--format", "json", "--resume", "--jsonl"} +
                   kFast,
               300000);
    QCOMPARE(other.exitCode, 3);
    QVERIFY2(other.err.contains("<OD>'s answer"), other.err.constData());
    QCOMPARE(jsonLines(other.out).size(), m_locked ? 6 : 5); // each with its error
    for (const QJsonObject& line : jsonLines(other.out))
        QVERIFY(line.contains("error"));
    QCOMPARE(readJson(m_dir + "/scene_00.florence.json")["task"].toString(), QString("<OD>"));
    // Nor is another program's COCO file: the run is refused before anything, as results that
    // exist are, naming the flags.
    QFile::remove(m_dir + "/OD.coco.json");
    QFile theirs(m_dir + "/OD.coco.json");
    QVERIFY(theirs.open(QIODevice::WriteOnly));
    theirs.write(R"({"images": [], "annotations": [], "categories": []})");
    theirs.close();
    const Output coco = runCli(args + QStringList{"--resume"}, 300000);
    QCOMPARE(coco.exitCode, 2);
    QVERIFY2(coco.err.contains("OD.coco.json is not a COCO file of this app's, and is kept; pass "
                               "--overwrite to replace it, or --out DIR") &&
                 !coco.err.contains("--resume skips"),
             coco.err.constData());

    // --overwrite: every image again.
    const Output again = runCli(args + QStringList{"--overwrite"}, 300000);
    QCOMPARE(again.exitCode, 3);
    QCOMPARE(jsonLines(again.out).size(), m_locked ? 6 : 5);
}

void TestBatch::captionsGoToTheOutputFolder() {
    makeFolder();
    const QString out = m_tmp.filePath("captions-out");
    QDir(out).removeRecursively();
    const Output o = runCli(QStringList{"batch", "--dir", m_dir, "--recursive", "--task",
                                        "<CAPTION>", "--out", out, "--format", "txt"} +
                                kFast,
                            300000);
    QCOMPARE(o.exitCode, 3);
    // Training-data captions: NAME.caption.txt, the sub-folders mirrored, nothing else.
    QCOMPARE(filesUnder(out), (QStringList{"scene_00.caption.txt", "scene_01.caption.txt",
                                           "scene_02.caption.txt", "sub/scene_03.caption.txt"}));
    QFile caption(out + "/scene_00.caption.txt");
    QVERIFY(caption.open(QIODevice::ReadOnly));
    const QByteArray text = caption.readAll();
    QVERIFY(!text.trimmed().isEmpty());
    QVERIFY2(!text.contains("<s>") && !text.contains("</s>"), text.constData());
    // The images' folder is left as it was.
    QVERIFY(!filesUnder(m_dir).join(' ').contains(".txt"));
}

void TestBatch::captionFilesForTrainingSets() {
    for (const char* name : {"scene_00.png", "scene_01.png"})
        QVERIFY(copy(kScenes + "/" + name, m_dir + "/" + name));
    QFile old(m_dir + "/scene_01.txt");
    QVERIFY(old.open(QIODevice::WriteOnly));
    old.write("sks, old tag\n");
    old.close();
    const auto read = [](const QString& path) {
        QFile f(path);
        return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    };
    const QStringList args =
        QStringList{"batch",   "--dir",    m_dir, "--task",      "<CAPTION>",   "--format",
                    "caption", "--prefix", "sks", "--lowercase", "--separator", "newline"} +
        kFast;
    // An existing caption file: refused unless told what to do with it.
    const Output refused = runCli(args, 300000);
    QCOMPARE(refused.exitCode, 2); // the command line must choose
    QVERIFY2(refused.err.contains("already have results: --resume skips them, --overwrite"),
             refused.err.constData());

    // The preview shows the first image's file and writes nothing.
    const Output preview = runCli(args + QStringList{"--append", "--preview"}, 300000);
    QVERIFY2(preview.exitCode == 0, preview.err.constData());
    QVERIFY2(preview.err.contains("scene_00.txt would hold"), preview.err.constData());
    QVERIFY(!QFile::exists(m_dir + "/scene_00.txt"));
    QCOMPARE(read(m_dir + "/scene_01.txt"), QStringLiteral("sks, old tag\n"));

    const Output run = runCli(args + QStringList{"--append"}, 300000);
    QVERIFY2(run.exitCode == 0, run.err.constData());
    const QString first = read(m_dir + "/scene_00.txt");
    QCOMPARE(first + "\n", QString::fromUtf8(preview.out));
    QVERIFY2(first.startsWith("sks\n") && first == first.toLower() && !first.contains("<"),
             qPrintable(first));
    // Appended after the file's own tags, the trigger word not repeated.
    const QString second = read(m_dir + "/scene_01.txt");
    QVERIFY2(second.startsWith("sks, old tag\n") && second.count("sks") == 1 && second.size() > 14,
             qPrintable(second));
    QCOMPARE(filesUnder(m_dir),
             (QStringList{"scene_00.png", "scene_00.txt", "scene_01.png", "scene_01.txt"}));
}

void TestBatch::badArguments_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QString>("message");
    QTest::newRow("no folder") << QStringList{"batch", "--task", "<OD>"} << 2 << "--dir";
    QTest::newRow("missing folder") << QStringList{"batch", "--dir", "/nonexistent/photos"} << 1
                                    << "/nonexistent/photos does not exist";
    QTest::newRow("empty folder") << QStringList{"batch", "--dir", "EMPTY"} << 1
                                  << "holds no images";
    QTest::newRow("unknown format")
        << QStringList{"batch", "--dir", kScenes, "--format", "txt,xml"} << 2 << "'xml'";
    QTest::newRow("format that does not apply")
        << QStringList{"batch", "--dir", kScenes, "--task", "<OD>", "--format", "txt"} << 1
        << "none of the formats";
    QTest::newRow("missing text") << QStringList{"batch", "--dir", kScenes, "--task",
                                                 "<CAPTION_TO_PHRASE_GROUNDING>"}
                                  << 2 << "needs a caption: pass it with --text";
    QTest::newRow("caption option without caption files")
        << QStringList{"batch", "--dir", kScenes, "--prefix", "sks"} << 2 << "--format caption";
    QTest::newRow("resume and overwrite")
        << QStringList{"batch", "--dir", kScenes, "--resume", "--overwrite"} << 2 << "exclude";
}

void TestBatch::badArguments() {
    QFETCH(QStringList, args);
    QFETCH(int, exitCode);
    QFETCH(QString, message);
    args.replaceInStrings(QRegularExpression("^EMPTY$"), m_dir);
    const Output o = runCli(args);
    QCOMPARE(o.exitCode, exitCode);
    const QString err = QString::fromUtf8(o.err).trimmed();
    QVERIFY2(err.contains(message), qPrintable(err));
    QVERIFY2(!err.contains('\n'), qPrintable(err));
}

void TestBatch::interruptLeavesNoHalfWrittenFile() {
    // Enough images that the run is still going when the first answer has been written.
    const int count = 40;
    for (int i = 0; i < count; ++i)
        QVERIFY(QFile::link(kScenes + QString("/scene_0%1.png").arg(i % 6),
                            m_dir + QString("/img_%1.png").arg(i, 2, 10, QChar('0'))));
    const QStringList args = QStringList{"batch",     "--dir",    m_dir,      "--task",
                                         "<CAPTION>", "--format", "txt,json", "--jsonl"} +
                             kFast;
    QProcess p;
    p.setProcessEnvironment(cliEnvironment());
    p.start(kCli, args);
    QVERIFY(p.waitForStarted());
    QTRY_VERIFY_WITH_TIMEOUT(p.canReadLine() || p.state() == QProcess::NotRunning, 120000);
    ::kill(static_cast<pid_t>(p.processId()), SIGINT); // Ctrl+C
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 130);
    // Each answer is there whole or not at all; no temporary file is left.
    int answers = 0;
    for (const QString& f : filesUnder(m_dir)) {
        if (f.endsWith(".png"))
            continue;
        QVERIFY2(f.endsWith(".florence.json") || f.endsWith(".caption.txt"), qPrintable(f));
        if (f.endsWith(".florence.json")) {
            QCOMPARE(readJson(m_dir + "/" + f)["task"].toString(), QString("<CAPTION>"));
            QVERIFY(QFile::exists(m_dir + "/" + f.chopped(13) + "caption.txt"));
            ++answers;
        }
    }
    QVERIFY(answers >= 1);
    QVERIFY2(answers < count, "the run ended before it was interrupted");
    // Resuming answers exactly the rest.
    const Output rest = runCli(args + QStringList{"--resume"}, 300000);
    QCOMPARE(rest.exitCode, 0);
    QCOMPARE(jsonLines(rest.out).size(), count - answers);
}

void TestBatch::runStreamsOneLinePerImage() {
    makeFolder();
    const Output o = runCli(QStringList{"run", "--image", m_dir + "/scene_00.png", "--image",
                                        m_dir + "/broken.png", "--image", m_dir + "/scene_01.png",
                                        "--task", "<CAPTION>", "--jsonl"} +
                                kFast,
                            300000);
    QCOMPARE(o.exitCode, 1); // one image could not be read; the others were answered
    const QList<QJsonObject> lines = jsonLines(o.out);
    QCOMPARE(lines.size(), 3);
    QCOMPARE(lines[0]["image"]["file"].toString(), m_dir + "/scene_00.png");
    QVERIFY(lines[0]["huggingface"]["<CAPTION>"].isString());
    QVERIFY2(lines[1]["error"].toString().contains("broken.png"),
             qPrintable(lines[1]["error"].toString()));
    QCOMPARE(lines[2]["image"]["file"].toString(), m_dir + "/scene_01.png");
    // One image: the same one line.
    const Output one = runCli(
        QStringList{"run", "--image", m_dir + "/scene_02.png", "--task", "<CAPTION>", "--jsonl"} +
            kFast,
        300000);
    QCOMPARE(one.exitCode, 0);
    QCOMPARE(one.out.count('\n'), 1);
    QCOMPARE(jsonLines(one.out).size(), 1);
    // Without --quiet, each image's progress line names it.
    const Output named = runCli(QStringList{"run", "--image", m_dir + "/scene_02.png", "--image",
                                            m_dir + "/broken.png", "--task", "<CAPTION>",
                                            "--beams", "1", "--max-new-tokens", "8"},
                                300000);
    QCOMPARE(named.exitCode, 1);
    QVERIFY2(named.err.contains("[1/2] scene_02.png\n") &&
                 named.err.contains("[2/2] broken.png (failed)\n"),
             named.err.constData());
}

void TestBatch::fileListShard() {
    makeFolder();
    // A shard of a larger set: only the listed images, results mirrored under --out.
    QFile list(m_dir + "/shard.txt");
    QVERIFY(list.open(QIODevice::WriteOnly));
    list.write((m_dir + "/scene_02.png\n" + m_dir + "/sub/scene_03.png\n").toUtf8());
    list.close();
    const QString out = m_tmp.filePath("shard-out");
    const Output o =
        runCli(QStringList{"batch", "--files", m_dir + "/shard.txt", "--dir", m_dir, "--task",
                           "<CAPTION>", "--out", out, "--format", "json,jsonl"} +
                   kFast,
               300000);
    QVERIFY2(o.exitCode == 0, o.err.constData());
    QCOMPARE(jsonLines(o.out).size(), 2);
    QCOMPARE(filesUnder(out),
             (QStringList{"scene_02.florence.json", "sub/scene_03.florence.json"}));
}

void TestBatch::regionPastAnImageIsNotedForThatImage() {
    // One region in pixels for images of several sizes: inside the 1000x667 pier, past the
    // 512x512 scene, which is asked about the part inside it and says so, in `run` and `batch`.
    QVERIFY(copy(kSamples + "/pier.png", m_dir + "/pier.png"));
    QVERIFY(copy(kScenes + "/scene_00.png", m_dir + "/scene_00.png"));
    const QStringList task{"--task", "<REGION_TO_CATEGORY>", "--region", "10,10,800,200"};
    const QByteArray note = "note: --region reaches past " + (m_dir + "/scene_00.png").toUtf8() +
                            " (512x512): asking about the part inside it, 10,10,512,200\n";
    const Output run =
        runCli(QStringList{"run", "--images", m_dir, "--jsonl"} + task + kFast, 300000);
    QVERIFY2(run.exitCode == 0, run.err.constData());
    QCOMPARE(jsonLines(run.out).size(), 2);
    QVERIFY2(run.err.contains(note), run.err.constData());
    QCOMPARE(run.err.count("reaches past"), 1); // not for the pier
    const Output batch =
        runCli(QStringList{"batch", "--dir", m_dir, "--format", "json"} + task + kFast, 300000);
    QVERIFY2(batch.exitCode == 0, batch.err.constData());
    QVERIFY2(batch.err.contains(note), batch.err.constData());
    QCOMPARE(batch.err.count("reaches past"), 1);
}

void TestBatch::regionTaskFilesItsAnswersAsCoco() {
    // Each image's answer is a box on the region asked about (within that image), its
    // category the answer's text, as in the image's own sidecar.
    QVERIFY(copy(kSamples + "/pier.png", m_dir + "/pier.png"));
    QVERIFY(copy(kScenes + "/scene_00.png", m_dir + "/scene_00.png"));
    const Output o = runCli(QStringList{"batch", "--dir", m_dir, "--task", "<REGION_TO_CATEGORY>",
                                        "--region", "10,20,800,200", "--quiet"} +
                                kFast,
                            300000);
    QVERIFY2(o.exitCode == 0, o.err.constData());
    const QJsonObject coco = readJson(m_dir + "/REGION_TO_CATEGORY.coco.json");
    const QJsonArray images = coco["images"].toArray(), boxes = coco["annotations"].toArray();
    QCOMPARE(images.size(), 2);
    QCOMPARE(boxes.size(), 2);
    QStringList categories;
    for (const QJsonValue& c : coco["categories"].toArray())
        categories << c["name"].toString();
    for (int i = 0; i < 2; ++i) {
        const QString name = images[i]["file_name"].toString();
        const QJsonObject box = boxes[i].toObject();
        QCOMPARE(box["image_id"].toInt(), images[i]["id"].toInt());
        const QJsonArray xywh = box["bbox"].toArray();
        // Location bins: within a pixel or two of the region, cut at the 512-pixel scene.
        const double right = name == "pier.png" ? 800 : 512;
        QVERIFY2(std::abs(xywh[0].toDouble() - 10) < 2 && std::abs(xywh[1].toDouble() - 20) < 2 &&
                     std::abs(xywh[0].toDouble() + xywh[2].toDouble() - right) < 2 &&
                     std::abs(xywh[1].toDouble() + xywh[3].toDouble() - 200) < 2,
                 qPrintable(name + ": " + QJsonDocument(xywh).toJson(QJsonDocument::Compact)));
        QFile text(m_dir + "/" + QFileInfo(name).completeBaseName() + ".region_to_category.txt");
        QVERIFY(text.open(QIODevice::ReadOnly));
        QCOMPARE(categories.value(box["category_id"].toInt() - 1),
                 QString::fromUtf8(text.readAll()));
    }
}

void TestBatch::peakMemoryDoesNotGrowWithImages() {
    // Decoding every image before the first answer (as `run --images` once did) costs at
    // least 2 MB per 1000x667 photo: 240 MB more for 120 of them. One image at a time costs
    // nothing more than for 2.
    const QString few = m_dir + "/few", many = m_dir + "/many";
    QVERIFY(QDir().mkpath(few) && QDir().mkpath(many));
    auto link = [](const QString& folder, int i) {
        return QFile::link(kSamples + "/pier.png",
                           folder + QString("/pier_%1.png").arg(i, 3, 10, QChar('0')));
    };
    for (int i = 0; i < 2; ++i)
        QVERIFY(link(few, i));
    for (int i = 0; i < 120; ++i)
        QVERIFY(link(many, i));
    const QStringList common = {"--task", "<CAPTION>",        "--format", "txt",    "--beams",
                                "1",      "--max-new-tokens", "4",        "--quiet"};
    int exitFew = -1, exitMany = -1;
    const long peakFew = peakRssKb(QStringList{"batch", "--dir", few} + common, &exitFew);
    const long peakMany = peakRssKb(QStringList{"batch", "--dir", many} + common, &exitMany);
    QCOMPARE(exitFew, 0);
    QCOMPARE(exitMany, 0);
    QCOMPARE(QDir(many).entryList({"*.caption.txt"}, QDir::Files).size(), 120);
    qInfo("peak RSS: %ld kB for 2 images, %ld kB for 120", peakFew, peakMany);
    QVERIFY2(
        peakMany < peakFew + 100 * 1024,
        qPrintable(QString("%1 kB for 120 images against %2 kB for 2").arg(peakMany).arg(peakFew)));
}

QTEST_GUILESS_MAIN(TestBatch)
#include "TestBatch.moc"
