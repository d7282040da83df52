// File › Process Folder… on the real main window (offscreen, bundled model): the dialog's form,
// the run on the engine thread with Run disabled meanwhile, the failures listed, resume and
// Overwrite, Cancel leaving whole files only, the formats remembered, and closing mid-run.
#include "MainWindow.h"
#include "dialogs/ProcessFolderDialog.h"

#include <florence/paths.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <memory>

using florence::ui::FolderOutcome;
using florence::ui::MainWindow;
using florence::ui::ProcessFolderDialog;

namespace {

constexpr int kRunTimeoutMs = 300'000; // two shared cores, colleagues compiling

template <typename T> T* child(QObject* w, const char* name) {
    T* c = w->findChild<T*>(QString::fromLatin1(name));
    if (!c)
        qWarning("no child %s", name);
    return c;
}

QString scene(int i) {
    return QString::fromStdString(florence::samplesDir()) +
           QString("/scenes/scene_%1.png").arg(i, 2, 10, QChar('0'));
}

QStringList filesUnder(const QString& dir) {
    QStringList files;
    QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
    while (it.hasNext())
        files << QDir(dir).relativeFilePath(it.next());
    files.sort();
    return files;
}

QJsonObject readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

QtMessageHandler g_defaultHandler = nullptr;
void filterMessages(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
    if (msg.contains(QLatin1String("propagateSizeHints")) ||
        msg.contains(QLatin1String("does not support raise()")))
        return;
    g_defaultHandler(type, ctx, msg);
}

} // namespace

class TestProcessFolder : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void cleanup();
    void processesFolderAndListsFailures();
    void rerunSkipsUnlessOverwrite();
    void cancelLeavesOnlyWholeFiles();
    void formIsCheckedAndRemembered();
    void closingWindowMidRunDoesNotHang();
    void captionFilesForTrainingSets();

private:
    // Opens the dialog from the menu action and fills the form for m_dir, <CAPTION>, text and
    // JSON sidecars next to the images, recursive.
    ProcessFolderDialog* openDialog();
    FolderOutcome runToEnd(ProcessFolderDialog* dlg);
    void makeFolder(int links = 0);

    QTemporaryDir m_tmp;
    QString m_dir;
    std::unique_ptr<MainWindow> m_w;
};

void TestProcessFolder::initTestCase() {
    QVERIFY(m_tmp.isValid());
    g_defaultHandler = qInstallMessageHandler(filterMessages);
    qputenv("HOME", m_tmp.filePath("home").toUtf8());
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_tmp.filePath("settings"));
    QCoreApplication::setOrganizationName("FlorenceStudioTest");
    QCoreApplication::setApplicationName("florence-studio-folder-test");
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    QVERIFY2(!florence::bundledModelDir().empty(), "build the florence_data target first");
}

void TestProcessFolder::init() {
    QSettings().clear();
    m_dir = m_tmp.filePath(QString::fromLatin1(QTest::currentTestFunction()));
    QDir(m_dir).removeRecursively();
    QVERIFY(QDir().mkpath(m_dir + "/sub"));
    m_w = std::make_unique<MainWindow>();
    m_w->resize(1280, 860);
    m_w->show();
    QSignalSpy ready(m_w.get(), &MainWindow::modelReady);
    m_w->loadDefaultModel();
    QVERIFY(ready.wait(60'000));
    QVERIFY(m_w->openImageFile(scene(0)));
    // Short answers: the folder run is what is tested, not the model.
    child<QSpinBox>(m_w.get(), "beamsSpin")->setValue(1);
    child<QSpinBox>(m_w.get(), "maxTokensSpin")->setValue(24);
}

void TestProcessFolder::cleanup() {
    m_w.reset();
}

void TestProcessFolder::makeFolder(int links) {
    for (int i = 0; i < 3; ++i)
        QVERIFY(QFile::copy(scene(i), m_dir + QString("/scene_%1.png").arg(i)));
    QVERIFY(QFile::copy(scene(3), m_dir + "/sub/scene_3.png"));
    QFile broken(m_dir + "/broken.jpg");
    QVERIFY(broken.open(QIODevice::WriteOnly));
    broken.write("\xff\xd8 not really a JPEG");
    broken.close();
    for (int i = 0; i < links; ++i)
        QVERIFY(
            QFile::link(scene(i % 6), m_dir + QString("/link_%1.png").arg(i, 2, 10, QChar('0'))));
}

ProcessFolderDialog* TestProcessFolder::openDialog() {
    auto* action = child<QAction>(m_w.get(), "processFolderAction");
    if (!action)
        return nullptr;
    action->trigger();
    auto* dlg = child<ProcessFolderDialog>(m_w.get(), "processFolderDialog");
    if (!dlg || !dlg->isVisible())
        return nullptr;
    child<QLineEdit>(dlg, "folderEdit")->setText(m_dir);
    child<QCheckBox>(dlg, "recursiveCheck")->setChecked(true);
    auto* task = child<QComboBox>(dlg, "folderTaskCombo");
    task->setCurrentIndex(task->findData("<CAPTION>"));
    child<QRadioButton>(dlg, "besideRadio")->setChecked(true);
    child<QCheckBox>(dlg, "formatTextCheck")->setChecked(true);
    child<QCheckBox>(dlg, "formatJsonCheck")->setChecked(true);
    return dlg;
}

FolderOutcome TestProcessFolder::runToEnd(ProcessFolderDialog* dlg) {
    QSignalSpy done(dlg, &ProcessFolderDialog::finished);
    QTest::mouseClick(child<QPushButton>(dlg, "folderStartButton"), Qt::LeftButton);
    if (!done.wait(kRunTimeoutMs))
        qWarning("the folder run did not finish");
    return dlg->lastOutcome();
}

void TestProcessFolder::processesFolderAndListsFailures() {
    makeFolder();
    ProcessFolderDialog* dlg = openDialog();
    QVERIFY(dlg);
    QSignalSpy done(dlg, &ProcessFolderDialog::finished);
    QTest::mouseClick(child<QPushButton>(dlg, "folderStartButton"), Qt::LeftButton);
    // While it runs: single-image Run is off, and so are the form and Start.
    QVERIFY(m_w->isProcessingFolder());
    QVERIFY(!child<QAction>(m_w.get(), "runAction")->isEnabled());
    QVERIFY(!m_w->startRun());
    QVERIFY(!child<QPushButton>(dlg, "folderStartButton")->isEnabled());
    QVERIFY(child<QPushButton>(dlg, "folderCancelButton")->isEnabled());
    QVERIFY(done.wait(kRunTimeoutMs));
    const FolderOutcome o = dlg->lastOutcome();
    QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
    QCOMPARE(o.answered, size_t(4));
    QCOMPARE(o.failures.size(), size_t(1));
    QVERIFY(o.failures[0].first.endsWith("broken.jpg"));
    // The sidecars, beside the images; no temporary file.
    QCOMPARE(
        filesUnder(m_dir),
        (QStringList{"broken.jpg", "scene_0.caption.txt", "scene_0.florence.json", "scene_0.png",
                     "scene_1.caption.txt", "scene_1.florence.json", "scene_1.png",
                     "scene_2.caption.txt", "scene_2.florence.json", "scene_2.png",
                     "sub/scene_3.caption.txt", "sub/scene_3.florence.json", "sub/scene_3.png"}));
    QCOMPARE(readJson(m_dir + "/sub/scene_3.florence.json")["task"].toString(),
             QString("<CAPTION>"));
    // What the user sees at the end: the failure with its reason, the counts, a thumbnail.
    auto* failed = child<QListWidget>(dlg, "failedList");
    QVERIFY(failed->isVisible());
    QCOMPARE(failed->count(), 1);
    QVERIFY2(failed->item(0)->text().startsWith("broken.jpg: not an image"),
             qPrintable(failed->item(0)->text()));
    const QString status = child<QLabel>(dlg, "folderStatus")->text();
    QVERIFY2(status.contains("4 answered") && status.contains("1 failed"), qPrintable(status));
    QVERIFY(!child<QLabel>(dlg, "folderThumbnail")->pixmap().isNull());
    QCOMPARE(child<QProgressBar>(dlg, "folderProgress")->value(), 1);
    // Run is back.
    QVERIFY(!m_w->isProcessingFolder());
    QVERIFY(child<QAction>(m_w.get(), "runAction")->isEnabled());
}

void TestProcessFolder::rerunSkipsUnlessOverwrite() {
    makeFolder();
    ProcessFolderDialog* dlg = openDialog();
    QVERIFY(dlg);
    QCOMPARE(runToEnd(dlg).answered, size_t(4));
    QVERIFY(QFile::remove(m_dir + "/scene_1.florence.json"));
    // A text file where the run's text goes, without its answer document, is the user's (a
    // captioning set's own): kept, the image listed with why.
    FolderOutcome again = runToEnd(dlg);
    QCOMPARE(again.answered, size_t(0));
    const QStringList texts = QDir(m_dir).entryList({"scene_1.*.txt"}, QDir::Files);
    QCOMPARE(texts.size(), 1);
    QVERIFY(std::any_of(again.failures.begin(), again.failures.end(), [&](const auto& f) {
        return f.second.contains(texts[0] + " is not a result of this run") &&
               f.second.contains("choose Overwrite or another output folder");
    }));
    QVERIFY(QFile::remove(m_dir + "/" + texts[0]));
    // Its results gone: only that image is answered again (the broken one fails again).
    again = runToEnd(dlg);
    QCOMPARE(again.answered, size_t(1));
    QCOMPARE(again.skipped, size_t(3));
    QVERIFY(QFile::exists(m_dir + "/scene_1.florence.json"));
    // Overwrite: every image.
    child<QCheckBox>(dlg, "overwriteCheck")->setChecked(true);
    again = runToEnd(dlg);
    QCOMPARE(again.answered, size_t(4));
    QCOMPARE(again.skipped, size_t(0));
}

void TestProcessFolder::cancelLeavesOnlyWholeFiles() {
    makeFolder(40);
    ProcessFolderDialog* dlg = openDialog();
    QVERIFY(dlg);
    QSignalSpy done(dlg, &ProcessFolderDialog::finished);
    QTest::mouseClick(child<QPushButton>(dlg, "folderStartButton"), Qt::LeftButton);
    // Cancel once the first answer has been written.
    QTRY_VERIFY_WITH_TIMEOUT(!QDir(m_dir).entryList({"*.florence.json"}, QDir::Files).isEmpty() ||
                                 !done.isEmpty(),
                             kRunTimeoutMs);
    QTest::mouseClick(child<QPushButton>(dlg, "folderCancelButton"), Qt::LeftButton);
    QVERIFY(done.wait(kRunTimeoutMs) || !done.isEmpty());
    const FolderOutcome o = dlg->lastOutcome();
    QVERIFY(o.cancelled);
    QVERIFY(o.answered >= 1);
    QVERIFY2(o.answered < 44, "the run ended before Cancel");
    // Each answer whole (its JSON parses, its text is there) or absent; nothing else.
    int answers = 0;
    for (const QString& f : filesUnder(m_dir)) {
        if (f.endsWith(".png") || f.endsWith(".jpg"))
            continue;
        QVERIFY2(f.endsWith(".florence.json") || f.endsWith(".caption.txt"), qPrintable(f));
        if (f.endsWith(".florence.json")) {
            QCOMPARE(readJson(m_dir + "/" + f)["task"].toString(), QString("<CAPTION>"));
            QVERIFY(QFile::exists(m_dir + "/" + f.chopped(13) + "caption.txt"));
            ++answers;
        }
    }
    QCOMPARE(size_t(answers), o.answered);
    QVERIFY(child<QLabel>(dlg, "folderStatus")->text().contains("cancelled"));
    QVERIFY(child<QAction>(m_w.get(), "runAction")->isEnabled());
}

void TestProcessFolder::formIsCheckedAndRemembered() {
    makeFolder();
    ProcessFolderDialog* dlg = openDialog();
    QVERIFY(dlg);
    // An incomplete form says what is missing and starts nothing.
    child<QLineEdit>(dlg, "folderEdit")->clear();
    QVERIFY(!dlg->start());
    QVERIFY(child<QLabel>(dlg, "folderStatus")->text().contains("folder of images"));
    child<QLineEdit>(dlg, "folderEdit")->setText(m_dir);
    auto* task = child<QComboBox>(dlg, "folderTaskCombo");
    task->setCurrentIndex(task->findData("<CAPTION_TO_PHRASE_GROUNDING>"));
    QVERIFY(child<QLineEdit>(dlg, "folderTextEdit")->isEnabled());
    QVERIFY(!child<QCheckBox>(dlg, "formatTextCheck")->isEnabled()); // boxes are not text
    QVERIFY(child<QCheckBox>(dlg, "formatCocoCheck")->isEnabled());
    QVERIFY(!dlg->start());
    QVERIFY(child<QLabel>(dlg, "folderStatus")->text().contains("phrase"));
    QCOMPARE(task->findData("<REGION_TO_CATEGORY>"), -1); // a region belongs to one image

    // Text typed for a text task stays in the field, greyed out, when the task changes to one
    // that takes none: it is not sent (every image would be refused for it).
    child<QLineEdit>(dlg, "folderTextEdit")->setText(QStringLiteral("A yellow star."));

    // Results in another folder, JSON only: remembered for the next dialog.
    task->setCurrentIndex(task->findData("<CAPTION>"));
    QVERIFY(!child<QLineEdit>(dlg, "folderTextEdit")->isEnabled());
    // A format the task's answers lack shows unticked as well as greyed (ticked, it read as "will
    // be written"); the tick comes back with a task that has it.
    auto* coco = child<QCheckBox>(dlg, "formatCocoCheck");
    QVERIFY(!coco->isEnabled() && !coco->isChecked());
    task->setCurrentIndex(task->findData("<OD>"));
    QVERIFY(coco->isEnabled() && coco->isChecked());
    task->setCurrentIndex(task->findData("<CAPTION>"));
    florence::FolderJobParams job;
    QString why;
    dlg->jobFromForm(&job, &why);
    QCOMPARE(QString::fromStdString(job.task.text), QString());
    const QString out = m_tmp.filePath("folder-out");
    child<QRadioButton>(dlg, "elsewhereRadio")->setChecked(true);
    child<QLineEdit>(dlg, "outFolderEdit")->setText(out);
    child<QCheckBox>(dlg, "formatTextCheck")->setChecked(false);
    const FolderOutcome o = runToEnd(dlg);
    QCOMPARE(o.answered, size_t(4));
    QCOMPARE(filesUnder(out), (QStringList{"scene_0.florence.json", "scene_1.florence.json",
                                           "scene_2.florence.json", "sub/scene_3.florence.json"}));
    m_w.reset(); // a new window and dialog read the settings again
    m_w = std::make_unique<MainWindow>();
    m_w->show();
    child<QAction>(m_w.get(), "processFolderAction")->trigger();
    dlg = child<ProcessFolderDialog>(m_w.get(), "processFolderDialog");
    QVERIFY(dlg);
    QCOMPARE(child<QLineEdit>(dlg, "folderEdit")->text(), m_dir);
    QVERIFY(child<QCheckBox>(dlg, "recursiveCheck")->isChecked());
    QVERIFY(child<QRadioButton>(dlg, "elsewhereRadio")->isChecked());
    QCOMPARE(child<QLineEdit>(dlg, "outFolderEdit")->text(), out);
    QVERIFY(!child<QCheckBox>(dlg, "formatTextCheck")->isChecked());
    QVERIFY(child<QCheckBox>(dlg, "formatJsonCheck")->isChecked());
    QVERIFY(!child<QCheckBox>(dlg, "overwriteCheck")->isChecked()); // never remembered
}

void TestProcessFolder::closingWindowMidRunDoesNotHang() {
    makeFolder(40);
    ProcessFolderDialog* dlg = openDialog();
    QVERIFY(dlg);
    QVERIFY(dlg->start());
    auto* progress = child<QProgressBar>(dlg, "folderProgress");
    QTRY_VERIFY_WITH_TIMEOUT(progress->value() >= 1, kRunTimeoutMs);
    m_w.reset(); // cancels the folder run and joins the engine thread after its current image
    int answers = 0;
    for (const QString& f : filesUnder(m_dir))
        answers += f.endsWith(".florence.json") ? 1 : 0;
    QVERIFY2(answers < 44, "the run was not stopped when the window closed");
}

void TestProcessFolder::captionFilesForTrainingSets() {
    makeFolder();
    ProcessFolderDialog* dlg = openDialog();
    QVERIFY(dlg);
    child<QCheckBox>(dlg, "formatTextCheck")->setChecked(false);
    child<QCheckBox>(dlg, "formatJsonCheck")->setChecked(false);
    child<QCheckBox>(dlg, "formatCaptionCheck")->setChecked(true);
    child<QLineEdit>(dlg, "captionPrefixEdit")->setText("shapestyle");
    child<QCheckBox>(dlg, "captionLowercaseCheck")->setChecked(true);
    // The preview shows what the options make of an answer before anything is written.
    const QString preview = child<QLabel>(dlg, "captionPreview")->text();
    QVERIFY2(preview.endsWith("shapestyle, a red car, street, trees, blue sky"),
             qPrintable(preview));
    const FolderOutcome o = runToEnd(dlg);
    QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
    QCOMPARE(o.answered, size_t(4));
    QVERIFY(child<QPushButton>(dlg, "folderOpenButton")->isEnabled());
    QCOMPARE(filesUnder(m_dir),
             (QStringList{"broken.jpg", "scene_0.png", "scene_0.txt", "scene_1.png", "scene_1.txt",
                          "scene_2.png", "scene_2.txt", "sub/scene_3.png", "sub/scene_3.txt"}));
    QFile caption(m_dir + "/sub/scene_3.txt");
    QVERIFY(caption.open(QIODevice::ReadOnly));
    const QString tags = QString::fromUtf8(caption.readAll());
    QVERIFY2(tags.startsWith("shapestyle, ") && tags == tags.toLower() && !tags.contains('<'),
             qPrintable(tags));
}

QTEST_MAIN(TestProcessFolder)
#include "TestProcessFolder.moc"
