// The folder side of batch runs (<florence/batch.h>), without a model: which files count as
// images, where each format's sidecar goes, what resuming skips, what is refused, that files
// are replaced whole, and the folder's COCO file assembled from the sidecars.
#include <florence/answer_json.h>
#include <florence/batch.h>

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>
#include <unistd.h>

namespace {

void touch(const QString& path, const QByteArray& bytes = "x") {
    QDir().mkpath(QFileInfo(path).path());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

QStringList names(const std::vector<std::string>& paths, const QString& root) {
    QStringList out;
    for (const std::string& p : paths)
        out << QDir(root).relativeFilePath(QString::fromStdString(p));
    return out;
}

// An answer with one box, as the parser gives it, and its document.
florence::ParsedAnswer boxAnswer(const std::string& label) {
    return florence::parseAnswer(
        "<OD>", "</s><s>" + label + "<loc_100><loc_100><loc_500><loc_500></s>", 200, 100);
}

QJsonObject document(const florence::ParsedAnswer& a, const std::string& image) {
    florence::AnswerContext ctx;
    ctx.imageFile = image;
    return florence::answerJson(a, florence::Result{}, ctx);
}

} // namespace

class TestFolderBatch : public QObject {
    Q_OBJECT

private slots:
    void init();
    void listsImagesByName();
    void formats_data();
    void formats();
    void sidecarPaths();
    void existingResults();
    void sameNameIsRefused();
    void theUsersOwnFilesAreKept();
    void writesWholeFilesOnly();
    void textSidecarIsReadable();
    void captionText_data();
    void captionText();
    void captionFiles();
    void cocoFromSidecars();
    void progressAndEta();

private:
    QTemporaryDir m_tmp;
    QString m_dir;
};

void TestFolderBatch::init() {
    m_dir = m_tmp.filePath(QString::fromLatin1(QTest::currentTestFunction()));
    QVERIFY(QDir().mkpath(m_dir));
    for (const char* name : {"a.png", "B.JPG", "c.jpeg", "d.webp", "notes.txt", "e.tiff",
                             "sub/f.png", "sub/deeper/g.bmp", "sub/readme.md"})
        touch(m_dir + "/" + name);
}

void TestFolderBatch::listsImagesByName() {
    const std::string dir = m_dir.toStdString();
    QCOMPARE(names(florence::listImages(dir, false), m_dir),
             (QStringList{"B.JPG", "a.png", "c.jpeg", "d.webp", "e.tiff"}));
    QCOMPARE(names(florence::listImages(dir, true), m_dir),
             (QStringList{"B.JPG", "a.png", "c.jpeg", "d.webp", "e.tiff", "sub/deeper/g.bmp",
                          "sub/f.png"}));
    // A FIFO, a link to a device, a link to nothing and a link to itself named like images are
    // listed, so that reading them fails with a reason, not skipped without a word.
    QVERIFY(::mkfifo(qPrintable(m_dir + "/pipe.png"), 0600) == 0);
    QVERIFY(QFile::link("/dev/zero", m_dir + "/zero.png"));
    QVERIFY(QFile::link(m_dir + "/nowhere", m_dir + "/dangling.png"));
    QVERIFY(::symlink(qPrintable(m_dir + "/loop.png"), qPrintable(m_dir + "/loop.png")) == 0);
    QCOMPARE(names(florence::listImages(dir, false), m_dir),
             (QStringList{"B.JPG", "a.png", "c.jpeg", "d.webp", "dangling.png", "e.tiff",
                          "loop.png", "pipe.png", "zero.png"}));
    QVERIFY_THROWS_EXCEPTION(florence::Error, florence::listImages(dir + "/none", false));
    QVERIFY_THROWS_EXCEPTION(florence::Error, florence::listImages(dir + "/a.png", false));
}

void TestFolderBatch::formats_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("asked");
    QTest::addColumn<unsigned>("applied");
    using namespace florence;
    QTest::newRow("caption: txt json") << "<CAPTION>"
                                       << "txt,json,coco" << unsigned(kTextSidecar | kJsonSidecar);
    QTest::newRow("od: json coco") << "<OD>"
                                   << "txt,json,coco" << unsigned(kJsonSidecar | kCocoFile);
    QTest::newRow("coco needs the json sidecars") << "<OD>"
                                                  << "coco" << unsigned(kJsonSidecar | kCocoFile);
    // A region task's text answer is filed as a box on the region asked about.
    QTest::newRow("region: txt json coco")
        << "<REGION_TO_CATEGORY>"
        << "txt,json,coco" << unsigned(kTextSidecar | kJsonSidecar | kCocoFile);
    QTest::newRow("region: caption") << "<REGION_TO_DESCRIPTION>"
                                     << "caption" << unsigned(kCaptionFile);
    QTest::newRow("ocr text") << "<OCR>"
                              << "txt" << unsigned(kTextSidecar);
    QTest::newRow("od has no text") << "<OD>"
                                    << "txt" << 0u;
    QTest::newRow("nothing") << "<OD>"
                             << "" << 0u;
}

void TestFolderBatch::formats() {
    QFETCH(QString, task);
    QFETCH(QString, asked);
    QFETCH(unsigned, applied);
    QCOMPARE(florence::applicableFormats(task.toStdString(),
                                         florence::parseSidecarFormats(asked.toStdString())),
             applied);
    QVERIFY_THROWS_EXCEPTION(florence::Error, florence::parseSidecarFormats("txt,xml"));
}

void TestFolderBatch::sidecarPaths() {
    florence::FolderJobParams job;
    job.dir = m_dir.toStdString();
    job.recursive = true;
    job.task = {"<CAPTION>", "", std::nullopt};
    const florence::FolderBatch beside(job);
    const std::string f = (m_dir + "/sub/f.png").toStdString();
    QCOMPARE(QString::fromStdString(beside.textPath(f)), m_dir + "/sub/f.caption.txt");
    QCOMPARE(QString::fromStdString(beside.jsonPath(f)), m_dir + "/sub/f.florence.json");
    QCOMPARE(QString::fromStdString(beside.cocoPath()), QString()); // captions have no boxes

    job.outDir = (m_dir + "/out").toStdString();
    job.task = {"<OCR>", "", std::nullopt};
    const florence::FolderBatch under(job);
    QCOMPARE(QString::fromStdString(under.textPath(f)), m_dir + "/out/sub/f.ocr.txt");
    QVERIFY(QFileInfo(m_dir + "/out").isDir());

    job.task = {"<OD>", "", std::nullopt};
    QCOMPARE(QString::fromStdString(florence::FolderBatch(job).cocoPath()),
             m_dir + "/out/OD.coco.json");

    // The folder named relatively (batch --dir pics --out OUT): the same layout under OUT as
    // with an absolute name, not OUT/pics/.
    const QString before = QDir::currentPath();
    QVERIFY(QDir::setCurrent(m_tmp.path()));
    job.dir = QFileInfo(m_dir).fileName().toStdString();
    job.outDir = "out-relative";
    job.task = {"<OCR>", "", std::nullopt};
    const florence::FolderBatch relative(job);
    QCOMPARE(QString::fromStdString(relative.textPath(job.dir + "/a.png")),
             QString("out-relative/a.ocr.txt"));
    QCOMPARE(QString::fromStdString(relative.textPath(job.dir + "/sub/f.png")),
             QString("out-relative/sub/f.ocr.txt"));
    QVERIFY(QDir::setCurrent(before));

    job.task = {"<CAPTION_TO_PHRASE_GROUNDING>", "", std::nullopt};
    QVERIFY_THROWS_EXCEPTION(florence::TaskError, florence::FolderBatch{job});
}

void TestFolderBatch::existingResults() {
    florence::FolderJobParams job;
    job.dir = m_dir.toStdString();
    job.task = {"<OD>", "", std::nullopt};
    const florence::FolderBatch first(job);
    QCOMPARE(first.pendingImages().size(), size_t(5));
    const std::string a = (m_dir + "/a.png").toStdString();
    const florence::ParsedAnswer answer = boxAnswer("dog");
    first.writeResult(a, answer, document(answer, a));
    QVERIFY(first.hasResult(a));

    // Refuse (the default) names the count, as an error of its own (the CLI adds its flags).
    try {
        florence::FolderBatch refused(job);
        QFAIL("results that exist were not refused");
    } catch (const florence::ExistingResultsError& e) {
        QVERIFY2(QString(e.what()).contains("1 of the 5 images already have results"), e.what());
    }
    job.existing = florence::ExistingResults::Skip;
    const florence::FolderBatch resumed(job);
    QCOMPARE(resumed.pendingImages().size(), size_t(4));
    QCOMPARE(resumed.skippedCount(), size_t(1));
    job.existing = florence::ExistingResults::Overwrite;
    QCOMPARE(florence::FolderBatch(job).pendingImages().size(), size_t(5));

    // Another task's answer in the way: that image is refused, not overwritten, when resuming.
    job.existing = florence::ExistingResults::Skip;
    job.task = {"<CAPTION>", "", std::nullopt};
    const florence::FolderBatch other(job);
    QCOMPARE(other.pendingImages().size(), size_t(4));
    QCOMPARE(other.refused().size(), size_t(1));
    QVERIFY(QString::fromStdString(other.refused()[0].second).contains("<OD>'s answer"));
}

void TestFolderBatch::theUsersOwnFilesAreKept() {
    // A captioning set holds the user's own NAME.caption.txt: a text file where the run's
    // sidecar goes, with no answer document beside it, is not this app's and is kept.
    touch(m_dir + "/a.caption.txt", "my own caption");
    florence::FolderJobParams job;
    job.dir = m_dir.toStdString();
    job.task = {"<CAPTION>", "", std::nullopt};
    job.keepHint = "pass --overwrite";
    for (const auto existing :
         {florence::ExistingResults::Refuse, florence::ExistingResults::Skip}) {
        job.existing = existing;
        const florence::FolderBatch batch(job);
        QCOMPARE(batch.refused().size(), size_t(1));
        const QString why = QString::fromStdString(batch.refused()[0].second);
        QVERIFY2(why.contains("a.caption.txt is not a result of this run") &&
                     why.endsWith("pass --overwrite"),
                 qPrintable(why));
        QCOMPARE(batch.pendingImages().size(), size_t(4));
    }
    job.existing = florence::ExistingResults::Overwrite; // asked for
    QCOMPARE(florence::FolderBatch(job).pendingImages().size(), size_t(5));
    // The answer document is written first: a run stopped before the text leaves an image that
    // is answered again, never a text file without its document.
    job.existing = florence::ExistingResults::Skip;
    const std::string b = (m_dir + "/B.JPG").toStdString();
    const florence::ParsedAnswer caption =
        florence::parseAnswer("<CAPTION>", "</s><s>A dog</s>", 4, 4);
    QVERIFY(QDir().mkpath(m_dir + "/B.caption.txt")); // the text cannot be written
    QVERIFY_THROWS_EXCEPTION(
        florence::Error, florence::FolderBatch(job).writeResult(b, caption, document(caption, b)));
    QVERIFY(QFile::exists(m_dir + "/B.florence.json"));
    QVERIFY(QDir().rmdir(m_dir + "/B.caption.txt"));
    // A document cut in half beside its text (a copy that did not finish) is this app's: the
    // image is answered again, its text with it.
    florence::writeFileAtomically((m_dir + "/B.caption.txt").toStdString(), "A dog");
    florence::writeFileAtomically((m_dir + "/B.florence.json").toStdString(), "{\"format\": \"flo");
    QVERIFY2(names(florence::FolderBatch(job).pendingImages(), m_dir).contains("B.JPG"),
             "a cut document beside its text was refused");
    QVERIFY(QFile::remove(m_dir + "/B.florence.json") && QFile::remove(m_dir + "/B.caption.txt"));
    const florence::FolderBatch again(job);
    QCOMPARE(again.refused().size(), size_t(1)); // a.png still
    QVERIFY2(names(again.pendingImages(), m_dir).contains("B.JPG"),
             qPrintable(names(again.pendingImages(), m_dir).join(' ')));

    // The folder's COCO file: one of another program's is kept, the whole run refused...
    job.task = {"<OD>", "", std::nullopt};
    job.formats = florence::kCocoFile;
    touch(m_dir + "/OD.coco.json", R"({"info": {}, "images": [], "annotations": []})");
    try {
        florence::FolderBatch refused(job);
        QFAIL("another program's COCO file would be replaced");
    } catch (const florence::Error& e) {
        QVERIFY2(QString(e.what()).contains("OD.coco.json is not a COCO file of this app's"),
                 e.what());
    }
    // ...one this app wrote, now or in its first versions, is its to replace.
    const florence::FolderBatch overwrite = [&] {
        job.existing = florence::ExistingResults::Overwrite;
        return florence::FolderBatch(job);
    }();
    overwrite.writeCoco();
    job.existing = florence::ExistingResults::Skip;
    QVERIFY_THROWS_NO_EXCEPTION(florence::FolderBatch{job});
    touch(m_dir + "/OD.coco.json", R"({"annotations":[],"images":[],"categories":[]})");
    QVERIFY_THROWS_NO_EXCEPTION(florence::FolderBatch{job});
}

void TestFolderBatch::sameNameIsRefused() {
    touch(m_dir + "/a.jpg"); // a.png and a.jpg would both write a.florence.json
    florence::FolderJobParams job;
    job.dir = m_dir.toStdString();
    job.task = {"<CAPTION>", "", std::nullopt};
    const florence::FolderBatch batch(job);
    QCOMPARE(batch.refused().size(), size_t(1));
    QVERIFY(QString::fromStdString(batch.refused()[0].first).endsWith("a.png"));
    QVERIFY(QString::fromStdString(batch.refused()[0].second).contains("a.jpg"));
}

void TestFolderBatch::writesWholeFilesOnly() {
    const std::string path = (m_dir + "/out/x.txt").toStdString();
    florence::writeFileAtomically(path, "first");
    florence::writeFileAtomically(path, "second");
    QFile f(QString::fromStdString(path));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("second"));
    QCOMPARE(QDir(m_dir + "/out").entryList(QDir::Files | QDir::Hidden), QStringList{"x.txt"});
    // A folder where the file should be: an error naming it, the folder untouched.
    QDir().mkpath(m_dir + "/taken.txt");
    try {
        florence::writeFileAtomically((m_dir + "/taken.txt").toStdString(), "x");
        QFAIL("wrote over a folder");
    } catch (const florence::Error& e) {
        QVERIFY2(QString(e.what()).contains("taken.txt"), e.what());
    }
    QVERIFY(QFileInfo(m_dir + "/taken.txt").isDir());
}

void TestFolderBatch::textSidecarIsReadable() {
    // A region's answer as a person reads it: no location or other model tokens.
    florence::FolderJobParams job;
    job.dir = m_dir.toStdString();
    job.task = {"<REGION_TO_CATEGORY>", "", florence::Box{10, 10, 90, 90}};
    job.formats = florence::kTextSidecar;
    const florence::FolderBatch batch(job);
    const std::string a = (m_dir + "/a.png").toStdString();
    const florence::ParsedAnswer answer = florence::parseAnswer(
        "<REGION_TO_CATEGORY>", "</s><s>yellow  star<loc_19><loc_19><loc_390><loc_390></s>", 100,
        100);
    batch.writeResult(a, answer, document(answer, a));
    QFile f(QString::fromStdString(batch.textPath(a)));
    QVERIFY(f.fileName().endsWith("/a.region_to_category.txt"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("yellow star"));
    QVERIFY(batch.jsonPath(a).empty());
}

void TestFolderBatch::captionText_data() {
    QTest::addColumn<QString>("generated");
    QTest::addColumn<QString>("separator");
    QTest::addColumn<QString>("prefix");
    QTest::addColumn<QString>("suffix");
    QTest::addColumn<bool>("lowercase");
    QTest::addColumn<QStringList>("drop");
    QTest::addColumn<QString>("expected");
    const QString tags = "</s><s>dog, Cat,  tree ,,</s>";
    QTest::newRow("tags as they come") << tags << ", "
                                       << ""
                                       << "" << false << QStringList{} << "dog, Cat, tree";
    QTest::newRow("one per line") << tags << "\n"
                                  << ""
                                  << "" << false << QStringList{} << "dog\nCat\ntree";
    QTest::newRow("trigger word and suffix")
        << tags << ", "
        << "sks person"
        << "best quality" << false << QStringList{} << "sks person, dog, Cat, tree, best quality";
    QTest::newRow("lower case") << tags << ", "
                                << "SKS"
                                << "" << true << QStringList{} << "SKS, dog, cat, tree";
    QTest::newRow("drop tags without case") << tags << ", "
                                            << ""
                                            << "" << false << QStringList{"cat", " TREE"} << "dog";
    QTest::newRow("model tokens left over") << "</s><s>a photo of a dog<pad></s><pad>"
                                            << ", "
                                            << ""
                                            << "" << false << QStringList{} << "a photo of a dog";
}

void TestFolderBatch::captionText() {
    QFETCH(QString, generated);
    QFETCH(QString, separator);
    QFETCH(QString, prefix);
    QFETCH(QString, suffix);
    QFETCH(bool, lowercase);
    QFETCH(QStringList, drop);
    QFETCH(QString, expected);
    florence::CaptionOptions o;
    o.separator = separator.toStdString();
    o.prefix = prefix.toStdString();
    o.suffix = suffix.toStdString();
    o.lowercase = lowercase;
    for (const QString& tag : drop)
        o.dropTags.push_back(tag.toStdString());
    QCOMPARE(QString::fromStdString(florence::captionFileText(generated.toStdString(), o)),
             expected);
}

void TestFolderBatch::captionFiles() {
    // photo.txt beside photo.png: skipped when resuming, replaced when overwriting, added to when
    // appending.
    touch(m_dir + "/a.txt", "sks, old tag\n");
    florence::FolderJobParams job;
    job.dir = m_dir.toStdString();
    job.task = {"<CAPTION>", "", std::nullopt};
    job.formats = florence::kCaptionFile;
    job.caption.prefix = "sks";
    QVERIFY_THROWS_EXCEPTION(florence::Error, florence::FolderBatch{job}); // a.txt exists
    job.existing = florence::ExistingResults::Skip;
    QCOMPARE(florence::FolderBatch(job).skippedCount(), size_t(1));
    const std::string a = (m_dir + "/a.png").toStdString();
    const florence::ParsedAnswer answer =
        florence::parseAnswer("<CAPTION>", "</s><s>Dog, grass</s>", 100, 100);
    const auto captionOf = [&] {
        QFile f(m_dir + "/a.txt");
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    };
    job.caption.append = true;
    const florence::FolderBatch append(job);
    QCOMPARE(append.skippedCount(), size_t(0)); // appending answers every image
    QCOMPARE(QString::fromStdString(append.captionPath(a)), m_dir + "/a.txt");
    append.writeResult(a, answer, document(answer, a));
    QCOMPARE(captionOf(), QByteArray("sks, old tag, Dog, grass")); // sks once
    job.caption.append = false;
    job.existing = florence::ExistingResults::Overwrite;
    const florence::FolderBatch overwrite(job);
    overwrite.writeResult(a, answer, document(answer, a));
    QCOMPARE(captionOf(), QByteArray("sks, Dog, grass"));
    QVERIFY(overwrite.jsonPath(a).empty() && overwrite.textPath(a).empty());
    // Boxes are not a caption.
    job.task = {"<OD>", "", std::nullopt};
    QVERIFY_THROWS_EXCEPTION(florence::Error, florence::FolderBatch{job});
}

void TestFolderBatch::cocoFromSidecars() {
    florence::FolderJobParams job;
    job.dir = m_dir.toStdString();
    job.recursive = true;
    job.task = {"<OD>", "", std::nullopt};
    job.formats = florence::kCocoFile;
    const florence::FolderBatch batch(job);
    const std::string a = (m_dir + "/a.png").toStdString();
    const std::string f = (m_dir + "/sub/f.png").toStdString();
    batch.writeResult(a, boxAnswer("dog"), document(boxAnswer("dog"), a));
    const florence::ParsedAnswer two = florence::parseAnswer(
        "<OD>", "</s><s>cat<loc_1><loc_1><loc_9><loc_9>dog<loc_2><loc_2><loc_8><loc_8></s>", 50,
        40);
    batch.writeResult(f, two, document(two, f));
    batch.writeCoco();
    QFile file(QString::fromStdString(batch.cocoPath()));
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QJsonObject coco = QJsonDocument::fromJson(file.readAll()).object();
    const QJsonArray images = coco["images"].toArray();
    QCOMPARE(images.size(), 2);
    QCOMPARE(images[1]["file_name"].toString(), QString("sub/f.png"));
    QCOMPARE(images[1]["width"].toInt(), 50);
    // One category per label across the folder; annotations point at the right image.
    const QJsonArray categories = coco["categories"].toArray();
    QCOMPARE(categories.size(), 2);
    QCOMPARE(categories[0]["name"].toString(), QString("dog"));
    const QJsonArray annotations = coco["annotations"].toArray();
    QCOMPARE(annotations.size(), 3);
    QCOMPARE(annotations[0]["image_id"].toInt(), 1);
    QCOMPARE(annotations[1]["image_id"].toInt(), 2);
    QCOMPARE(annotations[1]["category_id"].toInt(), 2); // cat
    QCOMPARE(annotations[2]["category_id"].toInt(), 1); // dog again
    QCOMPARE(annotations[2]["id"].toInt(), 3);
}

void TestFolderBatch::progressAndEta() {
    const florence::BatchProgress start = florence::batchProgress(0, 10, 0);
    QCOMPARE(start.etaSeconds, -1.0);
    QCOMPARE(QString::fromStdString(start.summary()), QString("0/10"));
    const florence::BatchProgress p = florence::batchProgress(4, 10, 8);
    QCOMPARE(p.imagesPerSecond, 0.5);
    QCOMPARE(p.etaSeconds, 12.0);
    QCOMPARE(QString::fromStdString(p.summary()), QString("4/10  0.50 images/s  ETA 0:12"));
}

QTEST_GUILESS_MAIN(TestFolderBatch)
#include "TestFolderBatch.moc"
