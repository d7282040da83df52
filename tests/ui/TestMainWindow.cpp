// The real main window, driven as a user would: widgets found by objectName, QTest key and mouse
// events, waits on signals. Runs the bundled (demo) model end to end; where an
// assertion needs a known answer, the answer goes through the same token/finish path a run
// takes (MainWindowTester::showAnswerText, a test-only friend of the window).
#include "MainWindow.h"
#include "MainWindowTester.h"
#include "ModelCatalog.h"
#include "dialogs/AboutDialog.h"
#include "dialogs/ImportDialog.h"
#include "run/AnswerDisplay.h"
#include "run/CompareMarks.h"
#include "run/CompareVerdict.h"
#include "run/EngineWorker.h"
#include "widgets/ChartStyle.h"
#include "widgets/CompareView.h"
#include "widgets/CumulativeChart.h"
#include "widgets/ImageView.h"
#include "widgets/LatencyChart.h"
#include "widgets/ResultsPanel.h"
#include <florence/machine.h>
#include <florence/paths.h>
#include <florence/tasks.h>

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QRadioButton>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QSemaphore>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QUrl>
#include <QValueAxis>

#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <sys/stat.h>
#include <thread>
#include <vector>

using florence::ui::EngineWorker;
using florence::ui::MainWindow;
using florence::ui::MainWindowTester;

namespace {

constexpr int kRunTimeoutMs = 180'000; // two shared cores, colleagues compiling

template <typename T> T* child(QWidget* w, const char* name) {
    T* c = w->findChild<T*>(QString::fromLatin1(name));
    if (!c)
        qWarning("no child %s", name);
    return c;
}

QString samplePath(const char* name) {
    return QString::fromStdString(florence::samplesDir()) + QLatin1Char('/') + QLatin1String(name);
}

// The offscreen platform warns on every top-level resize; that noise would hide real warnings.
QtMessageHandler g_defaultHandler = nullptr;
void filterMessages(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
    if (msg.contains(QLatin1String("propagateSizeHints")))
        return;
    g_defaultHandler(type, ctx, msg);
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void cleanup();

    void startsWithModelAndShowsIt();
    void captionRunStreamsTokensEndToEnd();
    void detectionRunFillsTableAndOverlayEndToEnd();
    void knownAnswerFillsTableHighlightsAndExports();
    void cancelMidRunWithEscape();
    void cancelBeforeFirstTokenKeepsResults();
    void stageTimingsShowFromFirstToken();
    void precisionSwitchReloadsModel();
    void newRunWhileRunningReplacesTheOldOne();
    void closeMidRunDoesNotHang();
    void regionTaskByMouseDrag();
    void textInputFollowsTask_data();
    void textInputFollowsTask();
    void missingTaskInputShowsMessage();
    void comparisonShowsTwoCurvesAndVerdict();
    void brokenImageKeepsPreviousImage();
    void pasteAndDropOpenImages();
    void badModelFolderKeepsCurrentModel();
    void zoomShortcuts();
    void settingsPersist();
    void imageThatFrozeIsNotReopened();
    void imagesDecodeOffTheGuiThreadNewestWins();
    void hostileImagesGiveOneClearMessage_data();
    void hostileImagesGiveOneClearMessage();
    void runDisabledWhileModelLoads();
    void oldModelReleasedOnlyForAPackageThatPassedItsChecks();
    void encodeOnOpenAndRunReusesIt();
    void newerImageCancelsAnOlderEncode();
    void closeDuringASlowModelLoadStopsIt();
    void aboutExplainsBundledModel();
    void speedDemoModelsListed();
    void ignoreEosFollowsTheModel();
    void randomModelIsDescribedFromItsManifest();
    void firstRunImagePrefersSampleScenes();
    void firstRunCaptionsASampleScene();
    void importDialogCancelsAndImports();

    // The app as a new user meets it.
    void cleanAnswerTextDropsModelTokens_data();
    void cleanAnswerTextDropsModelTokens();
    void knownAnswersShowNoSpecialTokens();
    void allTasksShowCleanLabels_data();
    void allTasksShowCleanLabels();
    void niceTicks_data();
    void niceTicks();
    void chartsUseNiceTicks();
    void tabOrderLeavesTheTable();
    void regionHintClearAndMessages();
    void staleStateIsCleared();
    void exportsRememberFolderAndNameTheTask();
    void compareVerdictWording_data();
    void compareVerdictWording();
    void compareRepeatsOnABusyMachine();
    void compareConcludesOnProcessorTime();
    void compareMarksAlongTheAnswer_data();
    void compareMarksAlongTheAnswer();

private:
    std::unique_ptr<MainWindow> makeWindow();
    // Opens `path` and waits until it is shown or has failed; true when it is shown.
    bool openImage(const QString& path);
    void setSpin(const char* name, int value);
    // Ticks or clears the Generation option "Ignore the end token" as a user would.
    void setIgnoreEos(bool on);
    // The pier sample, `task`, end token ignored, 1024 new tokens: a run that lasts until
    // cancelled or replaced.
    bool prepareLongRun(const char* task);
    void pressKey(Qt::Key key, Qt::KeyboardModifiers mods = Qt::NoModifier);

    bool isDuration(const char* labelName);
    // Fails the test when `text` holds a model token a person should not see.
    static bool hasModelToken(const QString& text);

    QTemporaryDir m_tmp;
    std::unique_ptr<MainWindow> m_w;
    QString m_nextChosenFile;
};

void TestMainWindow::initTestCase() {
    QVERIFY(m_tmp.isValid());
    g_defaultHandler = qInstallMessageHandler(filterMessages);
    // Imported packages go to the user's data folder: keep them in the temporary home.
    qputenv("HOME", m_tmp.filePath("home").toUtf8());
    QDir().mkpath(m_tmp.filePath("home"));
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_tmp.filePath("settings"));
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_tmp.filePath("settings"));
    QCoreApplication::setOrganizationName("FlorenceStudioTest");
    QCoreApplication::setApplicationName("florence-studio-test");
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    QVERIFY2(!florence::bundledModelDir().empty(), "build the florence_data target first");
    QVERIFY(QFile::exists(samplePath("pier.png")));
}

void TestMainWindow::init() {
    QSettings().clear();
    m_w = makeWindow();
}

void TestMainWindow::cleanup() {
    m_w.reset();
}

std::unique_ptr<MainWindow> TestMainWindow::makeWindow() {
    auto w = std::make_unique<MainWindow>();
    // No modal dialog in tests: the file chooser answers with whatever the test set.
    w->setFileChooser([this](MainWindow::FileChoice, const QString&, const QString&,
                             const QString&) { return m_nextChosenFile; });
    w->resize(1280, 860);
    w->show();
    w->activateWindow();
    if (!QTest::qWaitForWindowActive(w.get()))
        qWarning("window not active; shortcuts may not fire");
    QSignalSpy ready(w.get(), &MainWindow::modelReady);
    w->loadDefaultModel();
    if (!ready.wait(60'000))
        qWarning("model did not load");
    // The last session's image, decoded off the GUI thread.
    if (!QTest::qWaitFor([&] { return !w->isOpeningImage(); }, 60'000))
        qWarning("the last image did not open");
    return w;
}

bool TestMainWindow::openImage(const QString& path) {
    if (!m_w->openImageFile(path))
        return false;
    if (!QTest::qWaitFor([this] { return !m_w->isOpeningImage(); }, 60'000))
        return false;
    return m_w->hasImage() && m_w->imagePath() == QFileInfo(path).absoluteFilePath();
}

void TestMainWindow::setSpin(const char* name, int value) {
    auto* spin = child<QSpinBox>(m_w.get(), name);
    QVERIFY(spin);
    spin->setValue(value);
    QCOMPARE(spin->value(), value);
}

void TestMainWindow::setIgnoreEos(bool on) {
    auto* check = child<QCheckBox>(m_w.get(), "ignoreEosCheck");
    QVERIFY(check);
    if (check->isChecked() != on)
        check->click();
    QCOMPARE(check->isChecked(), on);
}

bool TestMainWindow::isDuration(const char* labelName) {
    // "12.3 ms" or, on a busy machine, "12.34 s": a measured duration, not the placeholder.
    static const QRegularExpression duration("^\\d+(\\.\\d+)? m?s$");
    auto* label = child<QLabel>(m_w.get(), labelName);
    return label && duration.match(label->text()).hasMatch();
}

void TestMainWindow::pressKey(Qt::Key key, Qt::KeyboardModifiers mods) {
    m_w->activateWindow();
    QTest::keyClick(m_w.get(), key, mods);
}

void TestMainWindow::startsWithModelAndShowsIt() {
    QVERIFY(m_w->isModelReady());
    auto* label = child<QLabel>(m_w.get(), "modelLabel");
    QVERIFY(label);
    QVERIFY2(label->text().contains("florence2-demo-shapes"), qPrintable(label->text()));
    QVERIFY(label->text().contains("parameters"));
    QVERIFY(label->text().contains("float32"));
    auto* status = child<QLabel>(m_w.get(), "statusModel");
    QVERIFY(status->text().contains("florence2-demo-shapes"));
    auto* tasks = child<QComboBox>(m_w.get(), "taskCombo");
    // Florence-2's 15 tasks, then Custom prompt… (the bundled model has no tasks of its own).
    QCOMPARE(tasks->count(), 16);
    QCOMPARE(tasks->itemData(15).toString(), QString::fromLatin1(florence::kCustomPromptTask));
    QCOMPARE(tasks->itemText(tasks->findData("<OD>")), QString("Object detection"));
}

void TestMainWindow::captionRunStreamsTokensEndToEnd() {
    QVERIFY(openImage(samplePath("pier.png")));
    auto* tasks = child<QComboBox>(m_w.get(), "taskCombo");
    tasks->setCurrentIndex(tasks->findData("<CAPTION>"));
    setSpin("maxTokensSpin", 24);
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    pressKey(Qt::Key_R, Qt::ControlModifier);
    QVERIFY(m_w->isRunning());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    QCOMPARE(done.at(0).at(0).toBool(), false); // not cancelled
    QVERIFY(tokens.count() >= 1);
    QVERIFY(tokens.count() <= 24);
    QCOMPARE(m_w->lastPrompt(), QString("What does the image describe?"));
    auto* raw = child<QPlainTextEdit>(m_w.get(), "rawText");
    QVERIFY(!raw->toPlainText().isEmpty());
    // Shown with word joiners that keep "</s>" on one line; copied without them.
    QVERIFY2(raw->toPlainText().startsWith(QStringLiteral("</\u2060s><s>")),
             qPrintable(raw->toPlainText()));
    // The chart holds one point per step the engine reported.
    QCOMPARE(m_w->latencyChart()->pointCount(), tokens.count());
    // "12.3 ms" or, on a busy machine, "12.34 s": a measured duration, not the placeholder.
    const QRegularExpression duration("^\\d+(\\.\\d+)? m?s$");
    for (const char* name : {"ttftLabel", "totalLabel", "medianLabel"})
        QVERIFY2(duration.match(child<QLabel>(m_w.get(), name)->text()).hasMatch(),
                 qPrintable(QString(name) + ": " + child<QLabel>(m_w.get(), name)->text()));
    // <CAPTION> is the task shown when the image opened: its prompt was encoded with the image,
    // before Run, and the label says so with the time it took.
    const QString text = child<QLabel>(m_w.get(), "textEncoderLabel")->text();
    QVERIFY2(text.endsWith(" before Run") && duration.match(text.chopped(11)).hasMatch(),
             qPrintable(text));
    QVERIFY(child<QLabel>(m_w.get(), "tpsLabel")->text() != "–");
    QVERIFY(child<QLabel>(m_w.get(), "p95Label")->text() != "–");
    // The vision encoder ran when the image was opened before Run.
    const QString vision = child<QLabel>(m_w.get(), "visionLabel")->text();
    QVERIFY2(vision.endsWith(" on open") && duration.match(vision.chopped(8)).hasMatch(),
             qPrintable(vision));
    QVERIFY(child<QLabel>(m_w.get(), "visionLabel")->toolTip().contains("before Run"));
    QVERIFY(!m_w->isRunning());
}

void TestMainWindow::detectionRunFillsTableAndOverlayEndToEnd() {
    QVERIFY(openImage(samplePath("pier.png")));
    m_w->setTask("<OD>");
    setSpin("maxTokensSpin", 40);
    setSpin("beamsSpin", 1);
    setIgnoreEos(true);
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QTest::mouseClick(child<QAbstractButton>(m_w.get(), "runButton"), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    // With ignoreEos the run lasts exactly maxNewTokens steps.
    QCOMPARE(tokens.count(), 40);
    QCOMPARE(m_w->lastOptions().numBeams, 1);
    // Whatever the model said, the table and the overlay show exactly the parsed items.
    const int items = static_cast<int>(m_w->answer().items.size());
    QCOMPARE(child<QTableWidget>(m_w.get(), "itemsTable")->rowCount(), items);
    QCOMPARE(m_w->imageView()->overlayItemCount(), items);
    QCOMPARE(m_w->answer().task, std::string("<OD>"));

    // The export is the CLI's answer document (docs/answer-json.md) for this run.
    const QString json = m_tmp.filePath("run.json");
    QVERIFY2(m_w->exportJson(json), qPrintable(m_w->messageText()));
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(doc["format"].toString(), QString("florence-studio-answer"));
    QCOMPARE(doc["format_version"].toInt(), 1);
    QCOMPARE(doc["task"].toString(), QString("<OD>"));
    QCOMPARE(doc["answer_type"].toString(), QString("description_with_bboxes"));
    QCOMPARE(doc["prompt"].toString(), m_w->lastPrompt());
    QCOMPARE(doc["model"].toString(), m_w->modelInfo().name());
    QCOMPARE(doc["image"]["file"].toString(), m_w->imagePath());
    QCOMPARE(doc["image"]["width"].toInt(), m_w->imageSize().width());
    QCOMPARE(doc["coco"]["images"][0]["file_name"].toString(), QString("pier.png"));
    QCOMPARE(doc["native"]["items"].toArray().size(), items);
    QVERIFY(doc["raw_text"].toString().startsWith("</s><s>"));
    // The run's own numbers: the decoder start and 40 tokens, each with its log-probability.
    QCOMPARE(doc["generated_ids"].toArray().size(), 41);
    QCOMPARE(doc["token_logprobs"].toArray().size(), 40);
    QCOMPARE(doc["timings"]["step_ms"].toArray().size(), 40);
    QVERIFY(doc["timings"]["load_ms"].toDouble() > 0);
    QCOMPARE(doc["generation"]["beams"].toInt(), 1);
    QCOMPARE(doc["generation"]["max_new_tokens"].toInt(), 40);
    QCOMPARE(doc["generation"]["ignore_eos"].toBool(), true);
    QCOMPARE(doc["generation"]["precision"].toString(), QString("float32"));
    QVERIFY(doc["runtime"].toString().startsWith("LibTorch"));
    for (const QString& key : doc.keys())
        QVERIFY2(key == key.toLower(), qPrintable(key)); // snake_case, as the CLI writes
}

void TestMainWindow::knownAnswerFillsTableHighlightsAndExports() {
    QVERIFY(openImage(samplePath("pier.png")));
    const QSize size = m_w->imageSize();
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    MainWindowTester(m_w.get()).showAnswerText(
        "<OD>", "</s><s>car<loc_52><loc_333><loc_932><loc_774>person<loc_10>"
                "<loc_10><loc_100><loc_200></s>");
    QCOMPARE(done.count(), 1);
    auto* table = child<QTableWidget>(m_w.get(), "itemsTable");
    QCOMPARE(table->rowCount(), 2);
    QCOMPARE(table->item(0, 1)->text(), QString("car"));
    QCOMPARE(table->item(1, 1)->text(), QString("person"));
    QVERIFY(table->item(0, 3)->text().startsWith(
        QString::number(florence::binToPixel(52, size.width()), 'f', 1)));
    QCOMPARE(m_w->imageView()->overlayItemCount(), 2);
    auto* raw = child<QPlainTextEdit>(m_w.get(), "rawText");
    QVERIFY(raw->toPlainText().contains("<loc_932>")); // location tokens stay visible

    // Selecting a row highlights its shape.
    const QRect cell = table->visualItemRect(table->item(1, 1));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
    QCOMPARE(m_w->imageView()->highlightedItem(), 1);

    // Ctrl+C on the table copies the selected row.
    table->setFocus();
    QTest::keyClick(table, Qt::Key_C, Qt::ControlModifier);
    QTRY_VERIFY(QApplication::clipboard()->text().contains("person"));

    const QString json = m_tmp.filePath("answer.json");
    m_nextChosenFile = json;
    pressKey(Qt::Key_E, Qt::ControlModifier);
    QTRY_VERIFY(QFile::exists(json));
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(root["huggingface"].toObject()["<OD>"].toObject()["labels"].toArray().size(), 2);
    QCOMPARE(root["native"].toObject()["items"].toArray().size(), 2);
    QCOMPARE(root["coco"].toObject()["annotations"].toArray().size(), 2);
    QCOMPARE(root["raw_text"].toString(),
             QString("</s><s>car<loc_52><loc_333><loc_932><loc_774>person<loc_10><loc_10>"
                     "<loc_100><loc_200></s>"));
    QCOMPARE(root["image"]["height"].toInt(), size.height());

    const QString png = m_tmp.filePath("annotated.png");
    QVERIFY2(m_w->saveAnnotatedImage(png), qPrintable(m_w->messageText()));
    QImage saved(png);
    QCOMPARE(saved.size(), size);
}

bool TestMainWindow::prepareLongRun(const char* task) {
    if (!openImage(samplePath("pier.png")))
        return false;
    m_w->setTask(QString::fromLatin1(task));
    setIgnoreEos(true);
    setSpin("maxTokensSpin", 1024);
    return true;
}

void TestMainWindow::cancelMidRunWithEscape() {
    QVERIFY(prepareLongRun("<CAPTION>"));
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(tokens.count() >= 3, kRunTimeoutMs);
    QVERIFY(child<QAbstractButton>(m_w.get(), "cancelButton")->isEnabled());
    pressKey(Qt::Key_Escape);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30'000);
    QCOMPARE(done.at(0).at(0).toBool(), true);
    QVERIFY(tokens.count() < 1024);
    QVERIFY(!m_w->isRunning());
    QVERIFY(!child<QAbstractButton>(m_w.get(), "cancelButton")->isEnabled());
    QVERIFY(child<QLabel>(m_w.get(), "statusRun")->text().contains("Cancelled"));
    QVERIFY(child<QLabel>(m_w.get(), "resultSummary")->text().startsWith("Caption · "));
    // The window still works after a cancel.
    setIgnoreEos(false);
    setSpin("maxTokensSpin", 5);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kRunTimeoutMs);
    QCOMPARE(done.at(1).at(0).toBool(), false);
}

void TestMainWindow::cancelBeforeFirstTokenKeepsResults() {
    QVERIFY(openImage(samplePath("pier.png")));
    MainWindowTester(m_w.get()).showAnswerText("<OD>",
                                               "</s><s>car<loc_52><loc_333><loc_932><loc_774></s>");
    auto* table = child<QTableWidget>(m_w.get(), "itemsTable");
    auto* raw = child<QPlainTextEdit>(m_w.get(), "rawText");
    auto* status = child<QLabel>(m_w.get(), "statusRun");
    auto resultsKept = [&] {
        return table->rowCount() == 1 && m_w->imageView()->overlayItemCount() == 1 &&
               raw->toPlainText().contains("car<loc_52>") &&
               child<QLabel>(m_w.get(), "resultSummary")->text().startsWith("Object detection · ");
    };
    QVERIFY(resultsKept());
    m_w->setTask("<CAPTION>");
    setSpin("maxTokensSpin", 5);
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);

    EngineWorker* worker = MainWindowTester(m_w.get()).engineWorker();
    QVERIFY(worker);
    // Keeps the engine thread busy until released, so a request sent meanwhile stays queued.
    auto holdEngine = [worker] {
        auto gate = std::make_shared<QSemaphore>(0);
        QMetaObject::invokeMethod(
            worker, [gate] { gate->acquire(); }, Qt::QueuedConnection);
        return qScopeGuard([gate] { gate->release(); });
    };

    // Esc right after Run, while the request is still queued for the engine thread.
    {
        auto release = holdEngine();
        QVERIFY(m_w->startRun());
        pressKey(Qt::Key_Escape);
    }
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30'000);
    QCOMPARE(done.at(0).at(0).toBool(), true);
    QCOMPARE(tokens.count(), 0);
    QVERIFY2(status->text().contains("Cancelled"), qPrintable(status->text()));
    QVERIFY(resultsKept());
    QVERIFY(!m_w->isRunning());
    QVERIFY(child<QAbstractButton>(m_w.get(), "runButton")->isEnabled());

    // Cancelled inside the engine, before its first stage ends: the cancel lands as soon as the
    // worker has taken the request (it has checked the flag and announced the run), so the
    // engine itself returns a cancelled result without tokens.
    MainWindow* window = m_w.get();
    const QMetaObject::Connection hook = connect(
        worker, &EngineWorker::runStarted, worker,
        [window](quint64) {
            QMetaObject::invokeMethod(window, &MainWindow::cancelRun, Qt::BlockingQueuedConnection);
        },
        Qt::DirectConnection);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kRunTimeoutMs);
    disconnect(hook);
    QCOMPARE(done.at(1).at(0).toBool(), true);
    QCOMPARE(tokens.count(), 0);
    QVERIFY2(status->text().contains("Cancelled"), qPrintable(status->text()));
    QVERIFY(resultsKept());

    // The same for a comparison cancelled while queued.
    QSignalSpy compared(m_w.get(), &MainWindow::comparisonCompleted);
    {
        auto release = holdEngine();
        QVERIFY(m_w->startComparison());
        pressKey(Qt::Key_Escape);
    }
    QTRY_COMPARE_WITH_TIMEOUT(compared.count(), 1, 30'000);
    QVERIFY(!m_w->isRunning());
    QVERIFY2(status->text().contains("cancelled"), qPrintable(status->text()));
    QVERIFY(resultsKept());

    // The window still runs afterwards, and the new answer replaces the kept one.
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 3, kRunTimeoutMs);
    QCOMPARE(done.at(2).at(0).toBool(), false);
    QVERIFY(tokens.count() >= 1);
    QVERIFY(!raw->toPlainText().contains("car<loc_52>"));
}

void TestMainWindow::stageTimingsShowFromFirstToken() {
    QVERIFY(prepareLongRun("<CAPTION>"));
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QCOMPARE(child<QLabel>(m_w.get(), "visionLabel")->text(), QString("–"));
    QTRY_VERIFY_WITH_TIMEOUT(tokens.count() >= 1, kRunTimeoutMs);
    // The vision encoder ran when the image was opened: its time, marked as such.
    QTRY_VERIFY_WITH_TIMEOUT(child<QLabel>(m_w.get(), "visionLabel")->text().endsWith(" on open"),
                             5'000);
    QVERIFY(child<QLabel>(m_w.get(), "preprocessLabel")->text().contains("reused"));
    // The prompt too was encoded on open (the task did not change), and the label says so.
    QVERIFY2(child<QLabel>(m_w.get(), "textEncoderLabel")->text().endsWith(" before Run"),
             qPrintable(child<QLabel>(m_w.get(), "textEncoderLabel")->text()));
    QVERIFY(isDuration("ttftLabel"));
    QVERIFY2(m_w->isRunning(), "the stages must show while generating, not only at the end");
    m_w->cancelRun();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30'000);

    // The same image again: the engine reuses the features computed on open again, and the
    // split says so at once.
    QVERIFY(m_w->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(m_w->tokensReceived() >= 1, kRunTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(child<QLabel>(m_w.get(), "visionLabel")->text().endsWith(" on open"),
                             5'000);
    QVERIFY(child<QLabel>(m_w.get(), "preprocessLabel")->text().contains("reused"));
    QVERIFY(child<QLabel>(m_w.get(), "textEncoderLabel")->text().endsWith(" before Run"));
    QVERIFY(m_w->isRunning());
    m_w->cancelRun();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, 30'000);

    // Run at once after choosing another task, before its prompt could be encoded ahead: the
    // run encodes it itself, and the label shows that time as part of the run.
    m_w->setTask("<DETAILED_CAPTION>");
    QVERIFY(m_w->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(m_w->tokensReceived() >= 1, kRunTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(isDuration("textEncoderLabel"), 5'000);
    m_w->cancelRun();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 3, 30'000);
}

void TestMainWindow::precisionSwitchReloadsModel() {
    auto* combo = child<QComboBox>(m_w.get(), "precisionCombo");
    auto* label = child<QLabel>(m_w.get(), "modelLabel");
    QVERIFY(combo);
    QCOMPARE(combo->currentText(), QString("float32"));
    QCOMPARE(m_w->modelInfo().precision(), QString("float32"));
    QVERIFY(prepareLongRun("<CAPTION>"));
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QSignalSpy ready(m_w.get(), &MainWindow::modelReady);
    QVERIFY(m_w->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(tokens.count() >= 2, kRunTimeoutMs);

    // Switching mid-run, from the keyboard: the run is cancelled, then the model reloads.
    combo->setFocus();
    QTest::keyClick(combo, Qt::Key_Down);
    QCOMPARE(combo->currentText(), QString("bfloat16"));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30'000);
    QCOMPARE(done.at(0).at(0).toBool(), true);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 60'000);
    QCOMPARE(m_w->modelInfo().precision(), QString("bfloat16"));
    QVERIFY2(label->text().contains("bfloat16"), qPrintable(label->text()));
    QVERIFY(child<QLabel>(m_w.get(), "statusModel")->text().contains("bfloat16"));
    // Where this CPU's bfloat16 products sum in bfloat16, the encoders stay float32, and the
    // model's label says so.
    const bool accurate = florence::bfloat16ProductsAccurate();
    QCOMPARE(label->text().contains("(encoders float32)"), !accurate);
    QCOMPARE(m_w->modelInfo().precisionNote.isEmpty(), accurate);

    // The bfloat16 model runs to the end.
    setIgnoreEos(false);
    setSpin("maxTokensSpin", 8);
    const int before = tokens.count();
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kRunTimeoutMs);
    QCOMPARE(done.at(1).at(0).toBool(), false);
    QVERIFY(tokens.count() > before);
    QVERIFY(!child<QPlainTextEdit>(m_w.get(), "rawText")->toPlainText().isEmpty());

    // int8, the next entry, loaded as on a CPU whose bfloat16 products are inaccurate: the
    // model reloads, says its encoders run in float32 and why, and runs to the end.
    qputenv("FLORENCE_BFLOAT16_PRODUCTS", "inaccurate");
    QTest::keyClick(combo, Qt::Key_Down);
    QCOMPARE(combo->currentText(), QString("int8"));
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 2, 60'000);
    qunsetenv("FLORENCE_BFLOAT16_PRODUCTS");
    QCOMPARE(m_w->modelInfo().precision(), QString("int8"));
    QVERIFY2(label->text().contains("int8") && label->text().contains("(encoders float32)"),
             qPrintable(label->text()));
    QVERIFY2(label->toolTip().startsWith("Precision: the encoders run in float32"),
             qPrintable(label->toolTip()));
    QCOMPARE(m_w->modelInfo().encoderPrecision, florence::Precision::Float32);
    const int beforeInt8 = tokens.count();
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 3, kRunTimeoutMs);
    QCOMPARE(done.at(2).at(0).toBool(), false);
    QVERIFY(tokens.count() > beforeInt8);

    // And back: float32 again, without a run in flight.
    m_w->setPrecision(florence::Precision::Float32);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 3, 60'000);
    QCOMPARE(m_w->modelInfo().precision(), QString("float32"));
    QVERIFY2(label->text().contains("float32"), qPrintable(label->text()));
    QVERIFY2(!label->text().contains("(encoders"), qPrintable(label->text()));
}

void TestMainWindow::newRunWhileRunningReplacesTheOldOne() {
    QVERIFY(prepareLongRun("<CAPTION>"));
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(tokens.count() >= 2, kRunTimeoutMs);
    const quint64 firstRun = tokens.at(0).at(0).toULongLong();
    setSpin("maxTokensSpin", 6);
    QVERIFY(m_w->startRun()); // cancels the first, queues the second
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    QTest::qWait(200);
    QCOMPARE(done.count(), 1); // the replaced run does not report
    QCOMPARE(done.at(0).at(0).toBool(), false);
    QCOMPARE(m_w->tokensReceived(), 6);
    QCOMPARE(m_w->latencyChart()->pointCount(), 6);
    // No token of the first run arrived after the second had started.
    bool second = false;
    for (const auto& t : tokens) {
        const bool isFirst = t.at(0).toULongLong() == firstRun;
        QVERIFY(!(second && isFirst));
        second = second || !isFirst;
    }
}

void TestMainWindow::closeMidRunDoesNotHang() {
    QVERIFY(prepareLongRun("<OD>"));
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QVERIFY(m_w->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(tokens.count() >= 2, kRunTimeoutMs);
    QVERIFY(m_w->isRunning());
    QElapsedTimer clock;
    clock.start();
    m_w->close();
    m_w.reset(); // joins the engine thread
    QVERIFY2(clock.elapsed() < 20'000, qPrintable(QString::number(clock.elapsed())));
    // A fresh window (and engine thread) works afterwards.
    m_w = makeWindow();
    QVERIFY(m_w->isModelReady());
}

void TestMainWindow::regionTaskByMouseDrag() {
    QVERIFY(openImage(samplePath("pier.png")));
    m_w->setTask("<REGION_TO_CATEGORY>");
    auto* view = m_w->imageView();
    QVERIFY(view->regionSelectionEnabled());
    QVERIFY(child<QLabel>(m_w.get(), "regionLabel")->isVisible());
    QWidget* vp = view->viewport();
    const QPoint a = view->viewportPointOf(QPointF(100, 80));
    const QPoint b = view->viewportPointOf(QPointF(400, 300));
    QTest::mousePress(vp, Qt::LeftButton, {}, a);
    QTest::mouseMove(vp, (a + b) / 2);
    QTest::mouseMove(vp, b);
    QTest::mouseRelease(vp, Qt::LeftButton, {}, b);
    QVERIFY(view->region().has_value());
    const QRectF r = *view->region();
    QVERIFY2(
        std::abs(r.left() - 100) < 5 && std::abs(r.bottom() - 300) < 5,
        qPrintable(QString("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height())));
    QVERIFY(child<QLabel>(m_w.get(), "regionLabel")->text().contains("Region:"));

    setSpin("maxTokensSpin", 5);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    const QString prompt = m_w->lastPrompt();
    QCOMPARE(prompt.count(QRegularExpression("<loc_\\d+>")), 4);
    const QSize size = m_w->imageSize();
    const std::string expected = florence::regionToLocTokens(
        florence::Box{r.left(), r.top(), r.right(), r.bottom()}, size.width(), size.height());
    QVERIFY2(prompt.contains(QString::fromStdString(expected)), qPrintable(prompt));
    // Shown with the region in pixels, not the location tokens the model gets.
    QCOMPARE(child<QLabel>(m_w.get(), "promptLabel")->text().remove(QChar(0x200B)),
             florence::ui::readablePrompt(prompt.toStdString(), size.width(), size.height()));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);

    // Other tasks pan instead of selecting.
    m_w->setTask("<CAPTION>");
    QVERIFY(!view->regionSelectionEnabled());
}

void TestMainWindow::textInputFollowsTask_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<bool>("takesText");
    for (const auto& t : florence::allTasks())
        QTest::newRow(t.token.c_str())
            << QString::fromStdString(t.token) << (t.input == florence::TaskInput::Text);
}

void TestMainWindow::textInputFollowsTask() {
    QFETCH(QString, task);
    QFETCH(bool, takesText);
    m_w->setTask(task);
    auto* edit = child<QLineEdit>(m_w.get(), "inputEdit");
    auto* label = child<QLabel>(m_w.get(), "inputLabel");
    QCOMPARE(edit->isEnabled(), takesText);
    if (takesText)
        QVERIFY2(label->text() != "Text input:", qPrintable(label->text()));
}

void TestMainWindow::missingTaskInputShowsMessage() {
    QVERIFY(openImage(samplePath("pier.png")));
    MainWindowTester(m_w.get()).showAnswerText("<CAPTION>", "</s><s>an earlier answer</s>");
    m_w->setTask("<CAPTION_TO_PHRASE_GROUNDING>");
    m_w->setTaskText("");
    QVERIFY(!m_w->startRun());
    QVERIFY(!m_w->isRunning());
    QVERIFY2(m_w->messageText().contains("caption", Qt::CaseInsensitive),
             qPrintable(m_w->messageText()));
    // Nothing was lost.
    QVERIFY(m_w->hasImage());
    QVERIFY(
        child<QPlainTextEdit>(m_w.get(), "rawText")->toPlainText().contains("an earlier answer"));
}

void TestMainWindow::comparisonShowsTwoCurvesAndVerdict() {
    QVERIFY(openImage(samplePath("pier.png")));
    m_w->setTask("<CAPTION>");
    setIgnoreEos(true);
    setSpin("maxTokensSpin", 40);
    QSignalSpy compared(m_w.get(), &MainWindow::comparisonCompleted);
    QTest::mouseClick(child<QAbstractButton>(m_w.get(), "compareButton"), Qt::LeftButton);
    QVERIFY(m_w->isRunning());
    QVERIFY(child<QProgressBar>(m_w.get(), "compareProgressBar")->isVisibleTo(m_w.get()));
    QTRY_COMPARE_WITH_TIMEOUT(compared.count(), 1, kRunTimeoutMs);
    const bool identical = compared.at(0).at(0).toBool();
    const QList<QAbstractSeries*> series = m_w->compareView()->chart()->series();
    QCOMPARE(series.size(), 2);
    for (QAbstractSeries* s : series)
        QCOMPARE(static_cast<QLineSeries*>(s)->count(), 40);
    // Beside it the decoding time so far: one point per token, never going down.
    const QList<QAbstractSeries*> cumulative =
        m_w->compareView()->cumulativeChart()->chart()->series();
    QCOMPARE(cumulative.size(), 2);
    for (QAbstractSeries* s : cumulative) {
        const QList<QPointF> points = static_cast<QLineSeries*>(s)->points();
        QCOMPARE(points.size(), 40);
        QCOMPARE(points.front().x(), 1.0);
        QCOMPARE(points.back().x(), 40.0);
        for (int i = 1; i < points.size(); ++i)
            QVERIFY(points[i].y() >= points[i - 1].y());
    }
    // The speedup at the 32-token mark and at the end, and the time to first token apart.
    const QString marks = child<QLabel>(m_w.get(), "speedupMarksLabel")->text();
    QVERIFY2(QRegularExpression("^32 tokens: \\d+\\.\\d+× · 40 \\(end\\): \\d+\\.\\d+×$")
                 .match(marks)
                 .hasMatch(),
             qPrintable(marks));
    const QString first = child<QLabel>(m_w.get(), "compareFirstTokenLabel")->text();
    QVERIFY2(first.contains("cache on") && first.contains("cache off"), qPrintable(first));
    QVERIFY(!child<QProgressBar>(m_w.get(), "compareProgressBar")->isVisibleTo(m_w.get()));
    const QString verdict = child<QLabel>(m_w.get(), "verdictLabel")->text();
    QVERIFY2(verdict.startsWith(identical ? "identical" : "different"), qPrintable(verdict));
    // The cache must not change the answer.
    QVERIFY2(identical, qPrintable(verdict));
    QVERIFY(child<QLabel>(m_w.get(), "speedupLabel")->text().contains("×"));
    QVERIFY(child<QLabel>(m_w.get(), "cachedTotalLabel")->text().contains("total"));
    QVERIFY(child<QLabel>(m_w.get(), "uncachedTotalLabel")->text().contains("total"));
    QVERIFY(!m_w->isRunning());
}

void TestMainWindow::brokenImageKeepsPreviousImage() {
    QVERIFY(openImage(samplePath("pier.png")));
    MainWindowTester(m_w.get()).showAnswerText("<CAPTION>", "</s><s>kept</s>");
    const QString broken = m_tmp.filePath("broken.png");
    {
        QFile f(broken);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("\x89PNG\r\n\x1a\n this is not really a png");
    }
    // Through the Open action (Ctrl+O) with the test's file chooser.
    m_nextChosenFile = broken;
    pressKey(Qt::Key_O, Qt::ControlModifier);
    QTRY_VERIFY(m_w->messageText().contains("broken.png"));
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
    QVERIFY(m_w->imageView()->hasImage());
    QCOMPARE(m_w->imageView()->imageSize(), m_w->imageSize());
    QVERIFY(child<QPlainTextEdit>(m_w.get(), "rawText")->toPlainText().contains("kept"));
    QVERIFY(!openImage(m_tmp.filePath("does-not-exist.jpg")));
    QVERIFY2(m_w->messageText().contains("does-not-exist.jpg"), qPrintable(m_w->messageText()));
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
}

void TestMainWindow::pasteAndDropOpenImages() {
    QImage red(64, 48, QImage::Format_RGB32);
    red.fill(Qt::red);
    QApplication::clipboard()->setImage(red);
    pressKey(Qt::Key_V, Qt::ControlModifier);
    QTRY_COMPARE(m_w->imageSize(), QSize(64, 48));
    QVERIFY(m_w->imagePath().isEmpty()); // pasted, not a file
    QCOMPARE(m_w->imageView()->imageSize(), QSize(64, 48));
    // Its export names no file, but keeps the image's size.
    MainWindowTester(m_w.get()).showAnswerText("<OD>",
                                               "</s><s>red<loc_0><loc_0><loc_999><loc_999></s>");
    const QString json = m_tmp.filePath("pasted.json");
    QVERIFY2(m_w->exportJson(json), qPrintable(m_w->messageText()));
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
    QVERIFY(!doc["image"].toObject().contains("file"));
    QCOMPARE(doc["image"]["width"].toInt(), 64);
    QCOMPARE(doc["coco"]["images"][0]["height"].toInt(), 48);
    QCOMPARE(doc["coco"]["annotations"].toArray().size(), 1);

    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(samplePath("coffee.png"))});
    const QPoint at = m_w->imageView()->geometry().center();
    QDragEnterEvent enter(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_w.get(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(at), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_w.get(), &drop);
    QTRY_VERIFY(m_w->imagePath().endsWith("coffee.png"));
    QCOMPARE(m_w->imageSize(), QSize(600, 400));
}

void TestMainWindow::badModelFolderKeepsCurrentModel() {
    const QString name = m_w->modelInfo().name();
    QSignalSpy failed(m_w.get(), &MainWindow::modelFailed);
    m_w->openModelPackage(m_tmp.path()); // no manifest.json
    QCOMPARE(failed.count(), 1);
    QVERIFY(m_w->messageText().contains("manifest"));
    QVERIFY(m_w->isModelReady());
    QCOMPARE(m_w->modelInfo().name(), name);
    // The model still runs.
    QVERIFY(openImage(samplePath("pier.png")));
    setSpin("maxTokensSpin", 3);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
}

void TestMainWindow::zoomShortcuts() {
    QVERIFY(openImage(samplePath("pier.png")));
    auto* view = m_w->imageView();
    QVERIFY(view->isFitMode());
    const double fit = view->zoomFactor();
    pressKey(Qt::Key_Plus, Qt::ControlModifier);
    QTRY_VERIFY(view->zoomFactor() > fit * 1.1);
    QVERIFY(!view->isFitMode());
    pressKey(Qt::Key_Minus, Qt::ControlModifier);
    pressKey(Qt::Key_Minus, Qt::ControlModifier);
    QTRY_VERIFY(view->zoomFactor() < fit);
    pressKey(Qt::Key_0, Qt::ControlModifier);
    QTRY_VERIFY(view->isFitMode());
    QVERIFY(std::abs(view->zoomFactor() - fit) < 1e-6);
    // Wheel zooms in.
    QWheelEvent wheel(QPointF(50, 50), view->viewport()->mapToGlobal(QPointF(50, 50)), QPoint(),
                      QPoint(0, 120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(view->viewport(), &wheel);
    QVERIFY(view->zoomFactor() > fit * 1.1);
}

void TestMainWindow::settingsPersist() {
    QVERIFY(openImage(samplePath("coffee.png")));
    m_w->setTask("<OD>");
    setSpin("beamsSpin", 2);
    setSpin("maxTokensSpin", 77);
    child<QAbstractButton>(m_w.get(), "cacheCheck")->setChecked(false);
    QSignalSpy reloaded(m_w.get(), &MainWindow::modelReady);
    m_w->setPrecision(florence::Precision::BFloat16);
    QTRY_COMPARE_WITH_TIMEOUT(reloaded.count(), 1, 60'000);
    m_w->close();
    m_w.reset();
    m_w = makeWindow();
    QCOMPARE(m_w->currentTask(), QString("<OD>"));
    QCOMPARE(child<QSpinBox>(m_w.get(), "beamsSpin")->value(), 2);
    QCOMPARE(child<QSpinBox>(m_w.get(), "maxTokensSpin")->value(), 77);
    QVERIFY(!child<QAbstractButton>(m_w.get(), "cacheCheck")->isChecked());
    // The model is loaded in the saved precision from the start.
    QCOMPARE(child<QComboBox>(m_w.get(), "precisionCombo")->currentText(), QString("bfloat16"));
    QCOMPARE(m_w->modelInfo().precision(), QString("bfloat16"));
    QVERIFY(m_w->imagePath().endsWith("coffee.png"));
    QVERIFY(m_w->recentFiles().value(0).endsWith("coffee.png"));
}

void TestMainWindow::imageThatFrozeIsNotReopened() {
    // A start that began to open the last image and never finished (a hostile image froze or
    // crashed the app) leaves its mark; the next start does not open that image again.
    QVERIFY(openImage(samplePath("coffee.png")));
    m_w->close();
    m_w.reset();
    const QString coffee = QFileInfo(samplePath("coffee.png")).absoluteFilePath();
    QCOMPARE(QSettings().value("files/lastImage").toString(), coffee);
    QSettings().setValue("files/openingImage", coffee);
    m_w = makeWindow();
    QVERIFY2(!m_w->imagePath().endsWith("coffee.png"), qPrintable(m_w->imagePath()));
    // An image that opens clears the mark, and is reopened as usual.
    QVERIFY(openImage(samplePath("pier.png")));
    m_w->close();
    m_w.reset();
    m_w = makeWindow();
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
    QVERIFY(!QSettings().contains("files/openingImage"));
}

void TestMainWindow::imagesDecodeOffTheGuiThreadNewestWins() {
    // A slow decode must not freeze the window, and the image opened last is the one
    // shown. The decoding thread is held (as a huge or hostile file would hold it) while two
    // images are asked for.
    QVERIFY(openImage(samplePath("pier.png")));
    MainWindowTester(m_w.get()).showAnswerText("<CAPTION>", "</s><s>about the pier</s>");
    QSemaphore holding, release;
    auto releaseAtExit = qScopeGuard([&] { release.release(); });
    QMetaObject::invokeMethod(
        MainWindowTester(m_w.get()).imageLoader(),
        [&] {
            holding.release();
            release.acquire();
        },
        Qt::QueuedConnection);
    QVERIFY(holding.tryAcquire(1, 30'000));
    QSignalSpy opened(m_w.get(), &MainWindow::imageOpened);
    const QString scene = QString::fromStdString(florence::samplesDir()) + "/scenes/scene_00.png";
    QVERIFY(m_w->openImageFile(samplePath("coffee.png")));
    QVERIFY(m_w->openImageFile(scene));
    QVERIFY(m_w->isOpeningImage());
    // The window still works: events are handled, zoom answers, and what is shown stays until
    // the new image is there; Run waits for it.
    bool handled = false;
    QTimer::singleShot(0, m_w.get(), [&] { handled = true; });
    QTRY_VERIFY(handled);
    const double zoom = m_w->imageView()->zoomFactor();
    pressKey(Qt::Key_Plus, Qt::ControlModifier);
    QTRY_VERIFY(m_w->imageView()->zoomFactor() > zoom);
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
    QVERIFY(child<QPlainTextEdit>(m_w.get(), "rawText")->toPlainText().contains("about the pier"));
    QVERIFY(!child<QAbstractButton>(m_w.get(), "runButton")->isEnabled());
    QVERIFY2(m_w->statusBar()->currentMessage().contains("scene_00.png"),
             qPrintable(m_w->statusBar()->currentMessage()));
    QCOMPARE(opened.count(), 0);

    release.release();
    QTRY_VERIFY_WITH_TIMEOUT(!m_w->isOpeningImage(), 60'000);
    // The newer image wins; the older one was never shown.
    QCOMPARE(opened.count(), 1);
    QCOMPARE(opened.at(0).at(0).toString(), QString("scene_00.png"));
    QVERIFY(m_w->imagePath().endsWith("scene_00.png"));
    QCOMPARE(m_w->imageView()->imageSize(), m_w->imageSize());
    QVERIFY(child<QAbstractButton>(m_w.get(), "runButton")->isEnabled());
    QVERIFY(!m_w->recentFiles().join(' ').contains("coffee.png"));
}

void TestMainWindow::hostileImagesGiveOneClearMessage_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("problem");
    QTest::newRow("FIFO") << "fifo"
                          << "FIFO";
    QTest::newRow("GIF") << "gif"
                         << "GIF images are not read";
    QTest::newRow("PNG declaring 50000x50000") << "bomb"
                                               << "too large";
}

void TestMainWindow::hostileImagesGiveOneClearMessage() {
    // Through the same path the Open action takes: the message names the file, and the image
    // and answer on screen stay.
    QFETCH(QString, kind);
    QFETCH(QString, problem);
    QVERIFY(openImage(samplePath("pier.png")));
    const QString path = m_tmp.filePath("hostile-" + kind);
    QFile::remove(path);
    if (kind == "fifo") {
        QCOMPARE(::mkfifo(QFile::encodeName(path).constData(), 0600), 0);
    } else {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        if (kind == "gif") // the 1×1 GIF of countless web pages
            f.write(QByteArray("GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00"
                               "!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00"
                               "\x01\x00\x00\x02\x02D\x01\x00;",
                               43));
        else // PNG signature and an IHDR chunk declaring 50000×50000, nothing else
            f.write(QByteArray("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\xc3\x50"
                               "\x00\x00\xc3\x50\x08\x02\x00\x00\x00",
                               29));
    }
    QSignalSpy failed(m_w.get(), &MainWindow::imageFailed);
    QVERIFY(!openImage(path));
    QCOMPARE(failed.count(), 1);
    const QString message = failed.at(0).at(0).toString();
    QVERIFY2(message.contains(path) && message.contains(problem), qPrintable(message));
    QVERIFY2(!message.contains('\n'), qPrintable(message));
    QVERIFY2(m_w->messageText().contains(problem), qPrintable(m_w->messageText()));
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
}

// A copy of the bundled package in the test's folder, with `edit` applied to its manifest.
static QString copyBundledPackage(const QString& to,
                                  const std::function<void(QJsonObject& files)>& edit) {
    QDir(to).removeRecursively();
    QDir().mkpath(to);
    const QString bundled = QString::fromStdString(florence::bundledModelDir());
    for (const QFileInfo& fi : QDir(bundled).entryInfoList(QDir::Files))
        QFile::copy(fi.filePath(), to + "/" + fi.fileName());
    QFile file(to + "/manifest.json");
    file.open(QIODevice::ReadOnly);
    QJsonObject manifest = QJsonDocument::fromJson(file.readAll()).object();
    file.close();
    QJsonObject files = manifest["files"].toObject();
    edit(files);
    manifest["files"] = files;
    file.open(QIODevice::WriteOnly | QIODevice::Truncate);
    file.write(QJsonDocument(manifest).toJson());
    return to;
}

void TestMainWindow::oldModelReleasedOnlyForAPackageThatPassedItsChecks() {
    // Loading a model keeps one model in memory, not two; a package its checks refuse
    // leaves the model in use working.
    EngineWorker* worker = MainWindowTester(m_w.get()).engineWorker();
    QObject context; // the connections end with this test
    QStringList events;
    connect(worker, &EngineWorker::modelReleased, &context, [&] { events << "released"; });
    connect(worker, &EngineWorker::modelLoaded, &context, [&] { events << "loaded"; });
    connect(worker, &EngineWorker::modelFailed, &context, [&] { events << "failed"; });
    const QString damaged = copyBundledPackage(m_tmp.filePath("damaged-package"), [](auto&) {});
    {
        QFile decoder(damaged + "/decoder.pt");
        QVERIFY(decoder.open(QIODevice::ReadWrite));
        QVERIFY(decoder.seek(decoder.size() / 2));
        const char byte = decoder.peek(1).at(0);
        QCOMPARE(decoder.write(QByteArray(1, char(byte ^ 0x5a))), 1);
    }
    m_w->openModelPackage(damaged);
    QTRY_COMPARE_WITH_TIMEOUT(events, QStringList{"failed"}, 60'000);
    QVERIFY2(m_w->messageText().contains("checksum"), qPrintable(m_w->messageText()));
    QVERIFY(m_w->isModelReady());

    events.clear();
    m_w->setPrecision(florence::Precision::BFloat16);
    QTRY_COMPARE_WITH_TIMEOUT(events, (QStringList{"released", "loaded"}), 60'000);
    QTRY_VERIFY(m_w->isModelReady());
    QCOMPARE(m_w->modelInfo().precision(), QString("bfloat16"));
    QVERIFY(openImage(samplePath("pier.png")));
    setSpin("maxTokensSpin", 3);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    QCOMPARE(done.at(0).at(0).toBool(), false);
}

void TestMainWindow::encodeOnOpenAndRunReusesIt() {
    // Opening an image starts the vision encoder; Run, clicked at once, waits for it
    // on the engine thread and reuses its features rather than encoding a second time.
    EngineWorker* worker = MainWindowTester(m_w.get()).engineWorker();
    QObject context;
    QStringList events;
    std::vector<florence::ui::RunOutcome> outcomes;
    connect(worker, &EngineWorker::imageEncoded, &context,
            [&](const florence::ui::EncodeOutcome& o) {
                if (!o.encoding.cancelled)
                    events << "encoded";
            });
    connect(worker, &EngineWorker::runStarted, &context, [&] { events << "run"; });
    connect(worker, &EngineWorker::runFinished, &context,
            [&](const florence::ui::RunOutcome& o) { outcomes.push_back(o); });
    QSignalSpy ready(m_w.get(), &MainWindow::imageReady);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(openImage(samplePath("pier.png")));
    setSpin("maxTokensSpin", 3);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    QCOMPARE(events, (QStringList{"encoded", "run"}));
    QCOMPARE(ready.count(), 1);
    const double visionMs = ready.at(0).at(0).toDouble();
    QVERIFY(visionMs > 0);
    QCOMPARE(outcomes.size(), size_t(1));
    QVERIFY(outcomes[0].result.timings.featuresReused);
    QCOMPARE(outcomes[0].result.timings.visionMs, 0.0);
    const QString vision = child<QLabel>(m_w.get(), "visionLabel")->text();
    QVERIFY2(vision.endsWith(" on open"), qPrintable(vision));
    // The task shown (the first start's <CAPTION>) had its prompt encoded with the image, and
    // the run reused that too: it started decoding at once.
    QVERIFY(ready.at(0).at(1).toDouble() > 0);
    QVERIFY(outcomes[0].result.timings.promptReused);
    QCOMPARE(outcomes[0].result.timings.textEncoderMs, 0.0);
    QVERIFY(child<QLabel>(m_w.get(), "textEncoderLabel")->text().endsWith(" before Run"));

    // Another task: its prompt is encoded once the choice has settled, without the vision
    // encoder again, and Run reuses both.
    m_w->setTask("<OD>");
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 2, kRunTimeoutMs);
    QCOMPARE(ready.at(1).at(0).toDouble(), visionMs); // the time measured on open stands
    QVERIFY(ready.at(1).at(1).toDouble() > 0);
    QVERIFY2(m_w->statusBar()->currentMessage().startsWith("Image and task ready"),
             qPrintable(m_w->statusBar()->currentMessage()));
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kRunTimeoutMs);
    QCOMPARE(outcomes.size(), size_t(2));
    QVERIFY(outcomes[1].result.timings.featuresReused);
    QVERIFY(outcomes[1].result.timings.promptReused);
    QCOMPARE(events, (QStringList{"encoded", "run", "encoded", "run"}));

    // The status bar says when the next image is ready; a model reload encodes it again.
    QVERIFY(openImage(samplePath("coffee.png")));
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 3, kRunTimeoutMs);
    QVERIFY2(m_w->statusBar()->currentMessage().startsWith("Image and task ready"),
             qPrintable(m_w->statusBar()->currentMessage()));
    m_w->setPrecision(florence::Precision::BFloat16);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 4, kRunTimeoutMs);
    QCOMPARE(events.count("encoded"), 4);

    // An image opened while a model loads, and Run at once (as the first start does): the
    // encode waits for the model, the run for the encode, and reuses it.
    events.clear();
    m_w->setPrecision(florence::Precision::Float32);
    QVERIFY(openImage(samplePath("pier.png")));
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 3, kRunTimeoutMs);
    QCOMPARE(outcomes.size(), size_t(3));
    QVERIFY2(outcomes[2].result.timings.featuresReused, qPrintable(events.join(' ')));
    QVERIFY(outcomes[2].result.timings.promptReused);
    QCOMPARE(events.last(), QString("run"));
}

void TestMainWindow::newerImageCancelsAnOlderEncode() {
    EngineWorker* worker = MainWindowTester(m_w.get()).engineWorker();
    QObject context;
    std::vector<florence::ui::EncodeOutcome> encodes;
    connect(worker, &EngineWorker::imageEncoded, &context,
            [&](const florence::ui::EncodeOutcome& o) { encodes.push_back(o); });
    QSignalSpy ready(m_w.get(), &MainWindow::imageReady);
    // The engine thread is busy (as with a run or a load) while two images are opened.
    QSemaphore holding, release;
    auto releaseAtExit = qScopeGuard([&] { release.release(); });
    QMetaObject::invokeMethod(
        worker,
        [&] {
            holding.release();
            release.acquire();
        },
        Qt::QueuedConnection);
    QVERIFY(holding.tryAcquire(1, 30'000));
    QVERIFY(openImage(samplePath("pier.png")));
    QVERIFY(openImage(samplePath("coffee.png")));
    release.release();
    QTRY_COMPARE_WITH_TIMEOUT(encodes.size(), size_t(2), kRunTimeoutMs);
    QVERIFY2(encodes[0].encoding.cancelled, "the older image's encode ran");
    QVERIFY(!encodes[1].encoding.cancelled && encodes[1].encoding.visionMs > 0);
    QTRY_COMPARE(ready.count(), 1);
}

void TestMainWindow::closeDuringASlowModelLoadStopsIt() {
    // A package whose vision.pt is 256 GB (sparse: nothing is written); hashing it would take
    // minutes. Closing the window stops the load, which ends at once with "cancelled": the
    // wait below fails if it does not stop.
    const qint64 huge = qint64(256) << 30;
    const QString slow =
        copyBundledPackage(m_tmp.filePath("slow-package"), [huge](QJsonObject& files) {
            QJsonObject vision = files["vision"].toObject();
            vision["size"] = huge;
            vision["sha256"] = QString(64, QLatin1Char('0'));
            files["vision"] = vision;
        });
    {
        QFile vision(slow + "/vision.pt");
        QVERIFY(vision.open(QIODevice::ReadWrite));
        QVERIFY(vision.resize(huge));
    }
    QSignalSpy failed(m_w.get(), &MainWindow::modelFailed);
    m_w->openModelPackage(slow);
    // The engine thread has started on it.
    QTRY_VERIFY_WITH_TIMEOUT(
        child<QLabel>(m_w.get(), "statusModel")->text().startsWith("Loading model"), 60'000);
    m_w->close();
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60'000);
    QVERIFY2(failed.at(0).at(0).toString().contains("cancelled"),
             qPrintable(failed.at(0).at(0).toString()));
    m_w.reset();
    QFile::remove(slow + "/vision.pt");
}

void TestMainWindow::runDisabledWhileModelLoads() {
    // A run started during a load would use the old model and its defaults.
    QVERIFY(openImage(samplePath("pier.png")));
    auto* run = child<QAbstractButton>(m_w.get(), "runButton");
    QVERIFY(run->isEnabled());
    QSignalSpy reloaded(m_w.get(), &MainWindow::modelReady);
    m_w->setPrecision(florence::Precision::BFloat16);
    QVERIFY(!run->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(reloaded.count(), 1, 60'000);
    QVERIFY(run->isEnabled());
}

void TestMainWindow::speedDemoModelsListed() {
    // The build installs Florence-2-base and -large as speed demos (weights generated at load):
    // the model list offers them next to the bundled model, named and explained as such.
    auto* combo = child<QComboBox>(m_w.get(), "modelCombo");
    QStringList speedDemos;
    for (int i = 0; i < combo->count(); ++i)
        if (combo->itemText(i).contains("speed demo"))
            speedDemos << combo->itemText(i);
    QCOMPARE(speedDemos.size(), 2);
    QVERIFY2(speedDemos[0].startsWith("Florence-2-base"), qPrintable(speedDemos.join(", ")));
    QVERIFY2(speedDemos[1].startsWith("Florence-2-large"), qPrintable(speedDemos.join(", ")));
    const QString why = florence::ui::ModelCatalog::explainModelWeights(speedDemos[0], QString());
    QVERIFY2(why.contains("published size") && why.contains("noise") && why.contains("Compare"),
             qPrintable(why));
    QVERIFY(!why.contains("synthetic scenes"));
}

void TestMainWindow::ignoreEosFollowsTheModel() {
    auto* check = child<QCheckBox>(m_w.get(), "ignoreEosCheck");
    QVERIFY(!check->isChecked()); // off by default, with the bundled model
    // A package whose manifest asks for it, as the speed demos' do: a copy of the bundled model
    // (it loads in a moment) with "ignore_eos" set.
    const QDir bundled(QString::fromStdString(florence::bundledModelDir()));
    const QString speedLike = m_tmp.filePath("speed-like");
    QVERIFY(QDir().mkpath(speedLike));
    for (const QString& f : bundled.entryList(QDir::Files | QDir::Hidden)) {
        QFile::remove(speedLike + "/" + f);
        QVERIFY(QFile::copy(bundled.filePath(f), speedLike + "/" + f));
    }
    QFile manifest(speedLike + "/manifest.json");
    QVERIFY(manifest.open(QIODevice::ReadOnly));
    QJsonObject root = QJsonDocument::fromJson(manifest.readAll()).object();
    manifest.close();
    QJsonObject generation = root["generation"].toObject();
    generation["ignore_eos"] = true;
    root["generation"] = generation;
    QVERIFY(manifest.open(QIODevice::WriteOnly | QIODevice::Truncate));
    manifest.write(QJsonDocument(root).toJson());
    manifest.close();

    const auto load = [this](const QString& dir) {
        QSignalSpy ready(m_w.get(), &MainWindow::modelReady);
        m_w->openModelPackage(dir);
        return ready.wait(60'000);
    };
    QVERIFY(load(speedLike));
    QVERIFY(check->isChecked());
    // The run lasts exactly Max new tokens.
    QVERIFY(openImage(samplePath("pier.png")));
    setSpin("maxTokensSpin", 6);
    setSpin("beamsSpin", 1);
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    QCOMPARE(tokens.count(), 6);
    QVERIFY(m_w->lastOptions().ignoreEos);

    // Another model: the user's choice (off) again.
    QVERIFY(load(bundled.path()));
    QVERIFY(!check->isChecked());
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kRunTimeoutMs);
    QVERIFY(!m_w->lastOptions().ignoreEos);
    // The user's choice for real models outlives a speed demo, whatever was done with it there.
    setIgnoreEos(true);
    QVERIFY(load(speedLike));
    setIgnoreEos(false);
    QVERIFY(load(bundled.path()));
    QVERIFY(check->isChecked());
}

void TestMainWindow::aboutExplainsBundledModel() {
    // The bundled model is the demo model: the About box and the model panel say what it was
    // trained on, what not to expect, and how to get a real checkpoint.
    const QString about = m_w->aboutText();
    QVERIFY(about.contains(QStringLiteral(FLORENCE_VERSION_FOR_TEST)));
    QVERIFY(about.contains("The bundled model"));
    QVERIFY2(about.contains("florence2-demo-shapes"), qPrintable(about));
    QVERIFY(about.contains("trained only on synthetic scenes of simple shapes"));
    QVERIFY(about.contains("meaningless"));
    QVERIFY(!about.contains("random weights"));
    QVERIFY(about.contains("Import Hugging Face Model"));
    QVERIFY(about.contains("python3-torch"));
    // The runtime and the command line are behind Show Details.
    QVERIFY(!about.contains("LibTorch"));
    QVERIFY(florence::ui::AboutDialog::details().contains(
        "florence-studio-cli import --hf DIR --out PKG"));
    QVERIFY(florence::ui::AboutDialog::details().contains("LibTorch"));
    // The model panel says the same where the model is shown.
    const QString tip = child<QLabel>(m_w.get(), "modelLabel")->toolTip();
    QVERIFY2(tip.contains("trained only on synthetic scenes"), qPrintable(tip));
    QVERIFY(tip.contains("photographs"));
    QVERIFY(tip.contains("florence-studio-cli import --hf DIR --out PKG"));
    QVERIFY(tip.contains("python3-torch"));
}

void TestMainWindow::randomModelIsDescribedFromItsManifest() {
    // The bundled package's files under a manifest that names random weights, as the exporter's
    // --random-init packages do.
    const QDir bundled(QString::fromStdString(florence::bundledModelDir()));
    const QString dir = m_tmp.filePath("random-package");
    QVERIFY(QDir().mkpath(dir));
    for (const QString& f : bundled.entryList(QDir::Files))
        if (f != "manifest.json")
            QVERIFY(QFile::link(bundled.filePath(f), QDir(dir).filePath(f)));
    QFile in(bundled.filePath("manifest.json"));
    QVERIFY(in.open(QIODevice::ReadOnly));
    QJsonObject manifest = QJsonDocument::fromJson(in.readAll()).object();
    manifest["name"] = "florence2-tiny (random weights, seed 1234)";
    manifest["source"] = "random init, seed 1234";
    QFile out(QDir(dir).filePath("manifest.json"));
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(QJsonDocument(manifest).toJson());
    out.close();

    QSignalSpy ready(m_w.get(), &MainWindow::modelReady);
    m_w->openModelPackage(dir);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 60'000);
    QCOMPARE(m_w->modelInfo().name(), QString("florence2-tiny (random weights, seed 1234)"));
    const QString tip = child<QLabel>(m_w.get(), "modelLabel")->toolTip();
    QVERIFY2(tip.contains("random weights"), qPrintable(tip));
    QVERIFY(tip.contains("nonsense"));
    QVERIFY(!tip.contains("synthetic scenes"));
    QVERIFY(tip.contains("florence-studio-cli import --hf DIR --out PKG"));
    const QString about = m_w->aboutText();
    QVERIFY(about.contains("The loaded model"));
    QVERIFY(about.contains("nonsense"));
    QVERIFY(!about.contains("synthetic scenes"));
    QVERIFY(about.contains("Import Hugging Face Model"));
}

void TestMainWindow::firstRunCaptionsASampleScene() {
    // The shipped samples and the bundled model: a first start opens scene_00 and captions it,
    // and the caption is the right one (the scene's ground truth, as tools/demo/scenes.py wrote
    // it).
    const QString samples = QString::fromStdString(florence::samplesDir());
    QFile truth(samples + QStringLiteral("/scenes/ground_truth.json"));
    QVERIFY(truth.open(QIODevice::ReadOnly));
    const QString caption = QJsonDocument::fromJson(truth.readAll())
                                .object()["scenes"]
                                .toArray()
                                .at(0)
                                .toObject()["caption"]
                                .toString();
    QVERIFY(!caption.isEmpty());
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->openFirstRunSample(samples));
    QTRY_VERIFY(m_w->hasImage());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    QCOMPARE(done.at(0).at(0).toBool(), false);
    QVERIFY(tokens.count() >= 3); // streamed, not delivered at the end
    QCOMPARE(QString::fromStdString(m_w->answer().task), QStringLiteral("<CAPTION>"));
    // Right means the demo model's measure: the same (colour, shape) pairs, in any order (two
    // shapes whose centres are nearly level may be named either way round).
    auto pairs = [](const QString& text) {
        static const QRegularExpression re(QStringLiteral(
            "(red|green|blue|yellow|orange|purple|black|white) (circle|square|triangle|star)"));
        QStringList found;
        for (auto it = re.globalMatch(text.toLower()); it.hasNext();)
            found << it.next().captured(0);
        found.sort();
        return found;
    };
    const QString answer = QString::fromStdString(m_w->answer().text);
    QVERIFY2(!pairs(caption).isEmpty(), qPrintable(caption));
    QCOMPARE(pairs(answer), pairs(caption));
    // Without sample scenes (a photograph only) nothing runs.
    const QDir photos(m_tmp.filePath("photos-only"));
    QVERIFY(QDir().mkpath(photos.path()));
    QVERIFY(QFile::copy(samplePath("pier.png"), photos.filePath("pier.png")));
    QVERIFY(m_w->openFirstRunSample(photos.path()));
    QTest::qWait(200);
    QVERIFY(!m_w->isRunning());
    QCOMPARE(done.count(), 1);
    QVERIFY(!m_w->openFirstRunSample(m_tmp.filePath("no-such-folder")));
}

void TestMainWindow::firstRunImagePrefersSampleScenes() {
    const QDir samples(m_tmp.filePath("samples"));
    QVERIFY(QDir().mkpath(samples.path()));
    QCOMPARE(MainWindow::firstRunImage(samples.path()), QString());
    QCOMPARE(MainWindow::firstRunImage(QString()), QString());
    QVERIFY(QFile::copy(samplePath("pier.png"), samples.filePath("pier.png")));
    QCOMPARE(MainWindow::firstRunImage(samples.path()), samples.filePath("pier.png"));
    // A scenes folder without PNGs changes nothing.
    QVERIFY(samples.mkdir("scenes"));
    QFile notes(samples.filePath("scenes/ground_truth.json"));
    QVERIFY(notes.open(QIODevice::WriteOnly));
    notes.close();
    QCOMPARE(MainWindow::firstRunImage(samples.path()), samples.filePath("pier.png"));
    // With scenes: the first by name.
    QVERIFY(QFile::copy(samplePath("coffee.png"), samples.filePath("scenes/scene_01.png")));
    QVERIFY(QFile::copy(samplePath("pier.png"), samples.filePath("scenes/scene_00.png")));
    const QString first = MainWindow::firstRunImage(samples.path());
    QCOMPARE(first, samples.filePath("scenes/scene_00.png"));
    QVERIFY(openImage(first));
    // The app's own samples folder has the scenes the bundled model was trained on.
    const QString shipped =
        MainWindow::firstRunImage(QString::fromStdString(florence::samplesDir()));
    QVERIFY2(shipped.endsWith("/samples/scenes/scene_00.png"), qPrintable(shipped));
}

void TestMainWindow::importDialogCancelsAndImports() {
    QVERIFY(QString::fromStdString(florence::userModelsDir()).startsWith(m_tmp.path()));
    florence::ui::ImportDialog* dlg = m_w->showImportDialog();
    QVERIFY(dlg);
    QTRY_VERIFY(dlg->isVisible());
    child<QRadioButton>(dlg, "randomRadio")->setChecked(true);
    auto* name = child<QLineEdit>(dlg, "packageNameEdit");
    auto* start = child<QAbstractButton>(dlg, "importStartButton");

    // Cancel: the exporter stops, nothing is left behind, the dialog says so.
    name->setText("cancelled-import");
    QTest::mouseClick(start, Qt::LeftButton);
    QVERIFY(dlg->isRunning());
    QTest::mouseClick(child<QAbstractButton>(dlg, "importCancelButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!dlg->isRunning(), 60'000);
    QVERIFY2(dlg->lastMessage().contains("cancelled"), qPrintable(dlg->lastMessage()));
    QVERIFY(!QFileInfo::exists(QString::fromStdString(florence::userModelsDir()) +
                               "/cancelled-import"));
    QVERIFY(dlg->isVisible()); // cancelling the job does not close the dialog

    // Import: the new package is loaded and selectable.
    name->setText("imported-tiny");
    QSignalSpy imported(dlg, &florence::ui::ImportDialog::imported);
    QSignalSpy ready(m_w.get(), &MainWindow::modelReady);
    QTest::mouseClick(start, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(imported.count(), 1, 600'000);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 120'000);
    const QString dir = imported.at(0).at(0).toString();
    QVERIFY(dir.endsWith("imported-tiny"));
    QCOMPARE(QDir::cleanPath(m_w->modelInfo().dir), QDir::cleanPath(dir));
    auto* combo = child<QComboBox>(m_w.get(), "modelCombo");
    QVERIFY(combo->count() >= 2);
    QCOMPARE(QDir::cleanPath(combo->currentData().toString()), QDir::cleanPath(dir));
}

bool TestMainWindow::hasModelToken(const QString& text) {
    static const QRegularExpression token("<(/?s|pad|unk|loc_\\d+|poly|sep|[A-Z_]+)>");
    return token.match(text).hasMatch();
}

void TestMainWindow::cleanAnswerTextDropsModelTokens_data() {
    QTest::addColumn<QString>("raw");
    QTest::addColumn<QString>("clean");
    QTest::newRow("caption") << "</s><s>A yellow star.</s>"
                             << "A yellow star.";
    QTest::newRow("ocr box label") << "</s>PARK"
                                   << "PARK";
    QTest::newRow("region category") << "green star<loc_146><loc_10><loc_300><loc_400>"
                                     << "green star";
    QTest::newRow("pad") << "<pad><pad>red circle</s><pad>"
                         << "red circle";
    QTest::newRow("tokens between words") << "red circle<loc_1>blue square"
                                          << "red circle blue square";
    QTest::newRow("text with brackets") << "a < b and c > d"
                                        << "a < b and c > d";
    QTest::newRow("empty") << "</s><s></s>"
                           << "";
}

void TestMainWindow::cleanAnswerTextDropsModelTokens() {
    QFETCH(QString, raw);
    QFETCH(QString, clean);
    QCOMPARE(QString::fromStdString(florence::ui::cleanAnswerText(raw.toStdString())), clean);
}

void TestMainWindow::knownAnswersShowNoSpecialTokens() {
    // The three answers a user met: a caption with </s><s>, an OCR box labelled "</s>PARK",
    // and a region category with location tokens and an empty table.
    QVERIFY(openImage(samplePath("pier.png")));
    MainWindowTester t(m_w.get());
    auto* table = child<QTableWidget>(m_w.get(), "itemsTable");
    auto copied = [&] {
        QApplication::clipboard()->clear();
        pressKey(Qt::Key_C, Qt::ControlModifier | Qt::ShiftModifier);
        return QApplication::clipboard()->text();
    };
    t.showAnswerText("<CAPTION>", "</s><s>A yellow star and a red circle.</s>");
    QTRY_COMPARE(copied(), QString("A yellow star and a red circle."));

    t.showAnswerText("<OCR_WITH_REGION>", "</s><s></s>PARK<loc_100><loc_100><loc_300><loc_100>"
                                          "<loc_300><loc_200><loc_100><loc_200></s>");
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(table->item(0, 1)->text(), QString("PARK"));
    QCOMPARE(m_w->imageView()->overlayLabels(), QStringList{"PARK"});
    QVERIFY(!hasModelToken(copied()));
    // The Hugging Face form (exports) stays as the original post-processor returns it.
    QVERIFY(QString::fromStdString(m_w->answer().items.at(0).label).contains("</s>"));

    m_w->setTask("<REGION_TO_CATEGORY>");
    m_w->setRegion(QRectF(100, 80, 200, 150));
    t.showAnswerText("<REGION_TO_CATEGORY>",
                     "</s><s>green star<loc_146><loc_120><loc_420><loc_350></s>");
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(table->item(0, 1)->text(), QString("green star"));
    QCOMPARE(m_w->imageView()->overlayLabels(), QStringList{"green star"});
    QTRY_COMPARE(copied(), QString("green star"));
}

void TestMainWindow::allTasksShowCleanLabels_data() {
    QTest::addColumn<QString>("task");
    for (const auto& t : florence::allTasks())
        QTest::newRow(t.token.c_str()) << QString::fromStdString(t.token);
}

void TestMainWindow::allTasksShowCleanLabels() {
    // Every task, run by the bundled model on a sample scene: whatever it says, no special token
    // reaches the table, the overlay or the copied text.
    QFETCH(QString, task);
    const QString scene = QString::fromStdString(florence::samplesDir()) + "/scenes/scene_00.png";
    QVERIFY(openImage(scene));
    m_w->setTask(task);
    const auto input = florence::taskInfo(task.toStdString()).input;
    if (input == florence::TaskInput::Text)
        m_w->setTaskText("A red circle.");
    if (input == florence::TaskInput::Region)
        m_w->setRegion(QRectF(QPointF(10, 10), QPointF(m_w->imageSize().width() / 2.0,
                                                       m_w->imageSize().height() / 2.0)));
    setSpin("beamsSpin", 1);
    setSpin("maxTokensSpin", 64);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY2(m_w->startRun(), qPrintable(m_w->messageText()));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    auto* table = child<QTableWidget>(m_w.get(), "itemsTable");
    for (int r = 0; r < table->rowCount(); ++r)
        for (int c = 0; c < table->columnCount(); ++c)
            if (table->item(r, c))
                QVERIFY2(!hasModelToken(table->item(r, c)->text()),
                         qPrintable(table->item(r, c)->text()));
    for (const QString& label : m_w->imageView()->overlayLabels())
        QVERIFY2(!hasModelToken(label), qPrintable(label));
    QApplication::clipboard()->clear();
    pressKey(Qt::Key_C, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY(!QApplication::clipboard()->text().isNull());
    QVERIFY2(!hasModelToken(QApplication::clipboard()->text()),
             qPrintable(QApplication::clipboard()->text()));
    // A region task's answer is a labelled row for the region asked about.
    if (input == florence::TaskInput::Region && !m_w->answer().text.empty() &&
        m_w->answer().type == florence::AnswerType::PureText)
        QCOMPARE(table->rowCount(), 1);
}

void TestMainWindow::niceTicks_data() {
    QTest::addColumn<double>("max");
    QTest::addColumn<bool>("integer");
    QTest::addColumn<double>("step");
    QTest::addColumn<double>("top");
    QTest::addColumn<int>("decimals");
    QTest::newRow("10 tokens") << 10.0 << true << 2.0 << 10.0 << 0;
    QTest::newRow("7 tokens") << 7.0 << true << 2.0 << 8.0 << 0;
    QTest::newRow("3 tokens: no half steps") << 3.0 << true << 1.0 << 3.0 << 0;
    QTest::newRow("137 tokens") << 137.0 << true << 50.0 << 150.0 << 0;
    QTest::newRow("24.5 ms") << 24.5 << false << 5.0 << 25.0 << 0;
    QTest::newRow("18.4 ms") << 18.4 << false << 5.0 << 20.0 << 0;
    QTest::newRow("3665 ms") << 3665.0 << false << 1000.0 << 4000.0 << 0;
    QTest::newRow("0.84 ms") << 0.84 << false << 0.2 << 1.0 << 1;
}

void TestMainWindow::niceTicks() {
    QFETCH(double, max);
    QFETCH(bool, integer);
    QFETCH(double, step);
    QFETCH(double, top);
    QFETCH(int, decimals);
    const florence::ui::NiceScale n = florence::ui::niceScale(max, integer);
    QCOMPARE(n.step, step);
    QCOMPARE(n.max, top);
    QCOMPARE(n.decimals, decimals);
}

void TestMainWindow::chartsUseNiceTicks() {
    // After a real run, both axes of both charts tick at 1, 2 or 5 times a power of ten from 0,
    // and the token axis prints whole numbers.
    QVERIFY(openImage(samplePath("pier.png")));
    m_w->setTask("<CAPTION>");
    setIgnoreEos(true);
    setSpin("maxTokensSpin", 13);
    setSpin("beamsSpin", 1);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    auto isNice = [](double step) {
        const double mant = step / std::pow(10.0, std::floor(std::log10(step)));
        return std::abs(mant - 1) < 1e-9 || std::abs(mant - 2) < 1e-9 || std::abs(mant - 5) < 1e-9;
    };
    for (QChart* chart : {m_w->latencyChart()->chart(), m_w->compareView()->chart()}) {
        const auto xs = chart->axes(Qt::Horizontal);
        const auto ys = chart->axes(Qt::Vertical);
        QCOMPARE(xs.size(), 1);
        QCOMPARE(ys.size(), 1);
        auto* x = static_cast<QValueAxis*>(xs.at(0));
        auto* y = static_cast<QValueAxis*>(ys.at(0));
        for (QValueAxis* a : {x, y}) {
            QCOMPARE(a->tickType(), QValueAxis::TicksDynamic);
            QCOMPARE(a->tickAnchor(), 0.0);
            QVERIFY2(isNice(a->tickInterval()), qPrintable(QString::number(a->tickInterval())));
            const double ticks = a->max() / a->tickInterval();
            QVERIFY(std::abs(ticks - std::round(ticks)) < 1e-9);
        }
        QVERIFY(x->tickInterval() >= 1);
        QCOMPARE(x->labelFormat(), QString("%d"));
    }
    auto* x = static_cast<QValueAxis*>(m_w->latencyChart()->chart()->axes(Qt::Horizontal).at(0));
    QVERIFY(x->max() >= 13);
}

void TestMainWindow::tabOrderLeavesTheTable() {
    QVERIFY(openImage(samplePath("pier.png")));
    MainWindowTester(m_w.get()).showAnswerText(
        "<OD>", "</s><s>car<loc_52><loc_333><loc_932><loc_774>person<loc_10><loc_10><loc_100>"
                "<loc_200></s>");
    m_w->setTask("<CAPTION_TO_PHRASE_GROUNDING>");
    m_w->activateWindow();
    m_w->imageView()->setFocus();
    QTRY_VERIFY(m_w->imageView()->hasFocus());
    QStringList order;
    for (int i = 0; i < 16; ++i) {
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_Tab);
        QWidget* f = QApplication::focusWidget();
        order << (f ? f->objectName() : QString("(none)"));
    }
    auto at = [&](const char* name) { return order.indexOf(QString::fromLatin1(name)); };
    const QString seen = order.join(' ');
    for (const char* name : {"modelCombo", "taskCombo", "inputEdit", "beamsSpin", "maxTokensSpin",
                             "runButton", "itemsTable"})
        QVERIFY2(at(name) >= 0, qPrintable(QString(name) + " not reached: " + seen));
    QVERIFY2(at("modelCombo") < at("taskCombo") && at("taskCombo") < at("inputEdit") &&
                 at("inputEdit") < at("beamsSpin") && at("beamsSpin") < at("maxTokensSpin") &&
                 at("maxTokensSpin") < at("runButton") && at("runButton") < at("itemsTable"),
             qPrintable(seen));
    // One Tab leaves the table (it used to cycle its cells).
    const int table = at("itemsTable");
    QVERIFY2(table + 1 < order.size() && order.at(table + 1) != "itemsTable", qPrintable(seen));
    // Help > Keyboard Shortcuts lists the keys.
    const QString help = m_w->shortcutsText();
    for (const char* key : {"Ctrl+R", "Ctrl+O", "Esc", "Ctrl+Shift+R", "Tab"})
        QVERIFY2(help.contains(key), qPrintable(help));
}

void TestMainWindow::regionHintClearAndMessages() {
    QVERIFY(openImage(samplePath("pier.png")));
    m_w->setTask("<REGION_TO_CATEGORY>");
    auto* hint = child<QLabel>(m_w.get(), "regionLabel");
    QVERIFY(hint->wordWrap());
    // The task says what it needs and whether the loaded (demo) model was trained for it.
    auto* taskHint = child<QLabel>(m_w.get(), "taskHintLabel");
    QVERIFY2(taskHint->text().contains("region dragged on the image"),
             qPrintable(taskHint->text()));
    QVERIFY(taskHint->text().contains("was trained for it"));
    m_w->setTask("<OPEN_VOCABULARY_DETECTION>");
    QVERIFY2(taskHint->text().contains("typed in the text field"), qPrintable(taskHint->text()));
    QVERIFY(taskHint->text().contains("not trained for it"));
    m_w->setTask("<REGION_TO_CATEGORY>");
    // Run without a region: the user is told to drag one, not given the CLI's wording.
    QVERIFY(!m_w->startRun());
    QVERIFY2(m_w->messageText().contains("Drag a rectangle"), qPrintable(m_w->messageText()));
    QVERIFY(!m_w->messageText().contains("<loc_N>"));
    // The prompt line shows the task that is selected, not the last run's.
    auto* prompt = child<QLabel>(m_w.get(), "promptLabel");
    m_w->setTask("<OD>");
    QCOMPARE(prompt->text(), QString("Locate the objects with category name in the image."));
    m_w->setTask("<REGION_TO_CATEGORY>");
    m_w->setRegion(QRectF(100, 80, 200, 150));
    QVERIFY2(prompt->text().contains("[box ") && !prompt->text().contains("<loc_"),
             qPrintable(prompt->text()));
    setSpin("maxTokensSpin", 5);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    // The error line and the status bar no longer show the earlier error.
    QVERIFY(m_w->messageText().isEmpty());
    QVERIFY(!m_w->statusBar()->currentMessage().contains("Drag a rectangle"));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    // A non-region task does not draw the rectangle over its answer.
    m_w->setTask("<CAPTION>");
    QVERIFY(!m_w->imageView()->region().has_value());
    m_w->setTask("<REGION_TO_CATEGORY>");
    QVERIFY(m_w->imageView()->region().has_value());
    // Esc (nothing running) clears it; so does View > Clear Region.
    pressKey(Qt::Key_Escape);
    QTRY_VERIFY(!m_w->region().has_value());
    QVERIFY(!m_w->imageView()->region().has_value());
    m_w->setRegion(QRectF(10, 10, 50, 50));
    auto* clear = m_w->findChild<QAction*>("clearRegionAction");
    QVERIFY(clear && clear->isEnabled());
    clear->trigger();
    QVERIFY(!m_w->region().has_value());
    QVERIFY(hint->text().contains("Drag a rectangle"));
}

void TestMainWindow::staleStateIsCleared() {
    QVERIFY(prepareLongRun("<CAPTION>"));
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(tokens.count() >= 2, kRunTimeoutMs);
    // Switching the task mid-run: the prompt line follows the new task at once.
    m_w->setTask("<OD>");
    QCOMPARE(child<QLabel>(m_w.get(), "promptLabel")->text(),
             QString("Locate the objects with category name in the image."));
    // A new image mid-run: the run ends, nothing of the old image's result stays.
    QVERIFY(openImage(samplePath("coffee.png")));
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30'000);
    QVERIFY(!m_w->isRunning());
    QVERIFY(!m_w->latencyChart()->chart()->title().contains("running"));
    QCOMPARE(m_w->latencyChart()->pointCount(), 0);
    QCOMPARE(child<QLabel>(m_w.get(), "statusRun")->text(), QString("Idle"));
    QVERIFY(child<QPlainTextEdit>(m_w.get(), "rawText")->toPlainText().isEmpty());
    QTest::qWait(200); // the old run's late tokens are dropped
    QCOMPARE(m_w->latencyChart()->pointCount(), 0);
    // The header counts the answer's tokens, the chart the decoding steps, and says so.
    setIgnoreEos(false);
    m_w->setTask("<CAPTION>");
    setSpin("maxTokensSpin", 12);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kRunTimeoutMs);
    QVERIFY2(child<QLabel>(m_w.get(), "resultSummary")->text().contains("answer tokens"),
             qPrintable(child<QLabel>(m_w.get(), "resultSummary")->text()));
    auto* steps = child<QLabel>(m_w.get(), "tokensLabel");
    QVERIFY(steps);
}

void TestMainWindow::exportsRememberFolderAndNameTheTask() {
    QVERIFY(openImage(samplePath("pier.png")));
    MainWindowTester(m_w.get()).showAnswerText("<OD>",
                                               "</s><s>car<loc_52><loc_333><loc_932><loc_774></s>");
    QStringList offered;
    m_w->setFileChooser(
        [&](MainWindow::FileChoice, const QString&, const QString& dir, const QString&) {
            offered << dir;
            return m_nextChosenFile;
        });
    const QString folder = m_tmp.filePath("exports");
    QVERIFY(QDir().mkpath(folder));
    m_nextChosenFile = folder + "/mine.json";
    pressKey(Qt::Key_E, Qt::ControlModifier);
    QTRY_VERIFY(QFile::exists(m_nextChosenFile));
    QVERIFY2(offered.value(0).endsWith("pier-OD.json"), qPrintable(offered.value(0)));
    QVERIFY(!offered.value(0).contains("/samples/"));
    // The next export starts where this one went, named after its own task.
    MainWindowTester(m_w.get()).showAnswerText("<CAPTION>", "</s><s>A pier.</s>");
    m_nextChosenFile = folder + "/caption.png";
    pressKey(Qt::Key_S, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY(QFile::exists(m_nextChosenFile));
    QCOMPARE(offered.value(1), QDir(folder).filePath("pier-CAPTION-annotated.png"));
    // COCO numbers are rounded (no float noise like 101.37600000000002).
    QFile f(folder + "/mine.json");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonArray ann =
        QJsonDocument::fromJson(f.readAll()).object()["coco"].toObject()["annotations"].toArray();
    QCOMPARE(ann.size(), 1);
    for (const QJsonValue& v : ann.at(0).toObject()["bbox"].toArray()) {
        const double x = v.toDouble();
        QVERIFY2(std::abs(x * 100 - std::round(x * 100)) < 1e-6,
                 qPrintable(QString::number(x, 'g', 17)));
    }
}

void TestMainWindow::compareVerdictWording_data() {
    QTest::addColumn<std::vector<double>>("cached");
    QTest::addColumn<std::vector<double>>("uncached");
    QTest::addColumn<bool>("conclusive");
    QTest::addColumn<QString>("says");
    QTest::newRow("steady") << std::vector<double>{400, 410, 405}
                            << std::vector<double>{1200, 1190, 1230} << true << "faster";
    QTest::newRow("steady, explains length")
        << std::vector<double>{400, 410, 405} << std::vector<double>{1200, 1190, 1230} << true
        << "the longer the answer";
    QTest::newRow("one cached pass hit by a busy spell")
        << std::vector<double>{43, 3665, 45} << std::vector<double>{120, 118, 125} << false
        << "the machine was busy; run again";
    // Noisy, but every uncached repeat was slower than every cached one.
    QTest::newRow("uncached noisy, still ordered")
        << std::vector<double>{40, 41, 42} << std::vector<double>{120, 300, 125} << true
        << "faster";
    QTest::newRow("short answer, no gain")
        << std::vector<double>{100, 101, 102} << std::vector<double>{95, 96, 97} << true
        << "too short for the cache to pay off";
}

void TestMainWindow::compareConcludesOnProcessorTime() {
    // Another program took the cores during two passes: the wall-clock totals disagree, the
    // processor time each pass used does not, and the verdict rests on it and says so.
    florence::ui::CompareOutcome o;
    o.cachedTotalsMs = o.cachedDecodeMs = {3100, 9800, 3150};
    o.uncachedTotalsMs = o.uncachedDecodeMs = {31000, 30500, 72000};
    o.cachedCpuMs = {5950, 6000, 6100};
    o.uncachedCpuMs = {60000, 59500, 61000};
    o.cached.result.generatedIds.assign(257, 0);
    o.identical = true;
    QVERIFY(florence::ui::comparisonConcludes(o));
    const florence::ui::CompareVerdict v = florence::ui::judgeComparison(o);
    QVERIFY(v.conclusive);
    QCOMPARE(v.basis, florence::ui::CompareVerdict::Basis::ProcessorTime);
    QCOMPARE(v.speedup, 10.0);
    QCOMPARE(v.headline, QString("With the cache, 256 tokens took 6.0 s instead of 60 s: 10× "
                                 "faster. Same answer."));
    QVERIFY2(v.conclusion.contains("processor time"), qPrintable(v.conclusion));
    // Both disagree and overlap: no verdict, and the worker measures again.
    o.cachedCpuMs = {6000, 66000, 6050};
    o.cachedTotalsMs = {3100, 98000, 3150};
    QVERIFY(!florence::ui::comparisonConcludes(o));
    const florence::ui::CompareVerdict none = florence::ui::judgeComparison(o);
    QVERIFY(!none.conclusive);
    QVERIFY2(none.headline.startsWith("No verdict"), qPrintable(none.headline));
}

void TestMainWindow::compareVerdictWording() {
    QFETCH(std::vector<double>, cached);
    QFETCH(std::vector<double>, uncached);
    QFETCH(bool, conclusive);
    QFETCH(QString, says);
    florence::ui::CompareOutcome o;
    o.cachedTotalsMs = o.cachedDecodeMs = cached;
    o.uncachedTotalsMs = o.uncachedDecodeMs = uncached;
    o.cached.result.generatedIds.assign(9, 0);
    const florence::ui::CompareVerdict v = florence::ui::judgeComparison(o);
    QCOMPARE(v.conclusive, conclusive);
    QVERIFY2(v.conclusion.contains(says), qPrintable(v.conclusion));
    QVERIFY(v.speedupText.contains("×"));
    // Medians, not means or single passes.
    QCOMPARE(v.cached.medianMs, florence::ui::spreadOf(cached).medianMs);
    QCOMPARE(v.cached.count, 3);
}

void TestMainWindow::compareMarksAlongTheAnswer_data() {
    QTest::addColumn<int>("tokens");
    QTest::addColumn<QString>("expected");
    // Cached steps of 1 ms; uncached step n takes n ms (it runs the n tokens so far), so after
    // n tokens the uncached pass took n(n+1)/2 ms: (n+1)/2 times the cached one.
    QTest::newRow("short") << 20 << "20 tokens (end): 10.5×";
    QTest::newRow("to a mark") << 256 << "32 tokens: 16.5× · 128: 64.5× · 256 (end): 128.5×";
    QTest::newRow("past the marks") << 300
                                    << "32 tokens: 16.5× · 128: 64.5× · 256: 128.5× · "
                                       "300 (end): 150.5×";
    QTest::newRow("one token") << 1 << "1 token (end): 1.00×";
}

void TestMainWindow::compareMarksAlongTheAnswer() {
    QFETCH(int, tokens);
    QFETCH(QString, expected);
    florence::ui::CompareOutcome o;
    // Three repeats each; one uncached repeat was slowed by a busy machine, and the median
    // leaves it out.
    for (const double slowdown : {1.0, 5.0, 1.0}) {
        std::vector<double> cached(static_cast<size_t>(tokens), 1.0), uncached;
        for (int n = 1; n <= tokens; ++n)
            uncached.push_back(n * slowdown);
        o.cachedStepMs.push_back(cached);
        o.uncachedStepMs.push_back(uncached);
        o.cachedFirstTokenMs.push_back(50);
        o.uncachedFirstTokenMs.push_back(51 * slowdown);
    }
    const florence::ui::CompareMarks m = florence::ui::compareMarks(o);
    QCOMPARE(m.speedupText, expected);
    QCOMPARE(m.marks.back().tokens, tokens);
    QVERIFY(m.marks.back().end);
    QCOMPARE(m.cachedFirstTokenMs, 50.0);
    QCOMPARE(m.uncachedFirstTokenMs, 51.0);
    QCOMPARE(m.firstTokenText, QString("cache on 50.0 ms, cache off 51.0 ms"));
    // Nothing to say without a repeat of each.
    QVERIFY(florence::ui::compareMarks(florence::ui::CompareOutcome()).speedupText.isEmpty());
}

void TestMainWindow::compareRepeatsOnABusyMachine() {
    // Another program keeps a core busy the whole time, as a colleague's build or a browser
    // would. Compare must still warm up, alternate three passes of each kind (more while the
    // busy spell spoils them), and say what its numbers allow.
    QProcess busy;
    busy.start(QStringLiteral("/bin/sh"),
               {QStringLiteral("-c"), QStringLiteral("while :; do :; done")});
    QVERIFY(busy.waitForStarted());
    auto stopBusy = qScopeGuard([&] {
        busy.kill();
        busy.waitForFinished();
    });
    QVERIFY(openImage(samplePath("pier.png")));
    m_w->setTask("<CAPTION>");
    MainWindowTester t(m_w.get());
    setIgnoreEos(true);
    setSpin("maxTokensSpin", 48);
    setSpin("beamsSpin", 1);
    std::vector<florence::ui::CompareOutcome> outcomes;
    int progress = 0;
    connect(
        t.engineWorker(), &EngineWorker::compareFinished, this,
        [&](const florence::ui::CompareOutcome& o) { outcomes.push_back(o); },
        Qt::QueuedConnection);
    connect(
        t.engineWorker(), &EngineWorker::compareProgress, this,
        [&](quint64, int, int) { ++progress; }, Qt::QueuedConnection);
    QSignalSpy compared(m_w.get(), &MainWindow::comparisonCompleted);
    QVERIFY(m_w->startComparison());
    QTRY_COMPARE_WITH_TIMEOUT(compared.count(), 1, kRunTimeoutMs);
    QTRY_COMPARE(outcomes.size(), size_t(1));
    const florence::ui::CompareOutcome& o = outcomes.front();
    QVERIFY(!o.cancelled);
    // Three repeats of each, and up to two more while the busy core keeps them from agreeing.
    const size_t repeats = o.cachedTotalsMs.size();
    QVERIFY2(repeats >= 3 && repeats <= 5, qPrintable(QString::number(repeats)));
    QCOMPARE(o.uncachedTotalsMs.size(), repeats);
    QCOMPARE(o.cachedCpuMs.size(), repeats);
    QCOMPARE(o.uncachedCpuMs.size(), repeats);
    for (double cpu : o.cachedCpuMs)
        QVERIFY(cpu > 0);
    QCOMPARE(progress, 1 + 2 * int(repeats)); // a warm-up and the measured passes
    QVERIFY(compared.at(0).at(0).toBool());   // identical in every repeat
    // The window says exactly what the collected numbers allow.
    const florence::ui::CompareVerdict v = florence::ui::judgeComparison(o);
    const QString note = child<QLabel>(m_w.get(), "compareNoteLabel")->text();
    QVERIFY2(note.startsWith(v.conclusion), qPrintable(note));
    // Fair: neither kind of pass used the features computed when the image was opened.
    QVERIFY2(note.endsWith("Both passes ran the vision encoder (no precomputed features)."),
             qPrintable(note));
    QCOMPARE(child<QLabel>(m_w.get(), "speedupLabel")->text(), v.speedupText);
    // The point of the processor-time basis: a busy neighbour no longer stops a verdict.
    QVERIFY2(v.conclusive, qPrintable(note));
    QVERIFY(!note.contains("the machine was busy; run again"));
    QVERIFY(child<QLabel>(m_w.get(), "cachedTotalLabel")
                ->text()
                .contains(QString("over %1 runs").arg(repeats)));
    QCOMPARE(child<QLabel>(m_w.get(), "compareHeadline")->text(), v.headline);
    qInfo("verdict on a busy machine: %s (cpu spread %.2f/%.2f, wall %.2f/%.2f)",
          qPrintable(v.headline), v.cachedCpu.relative(), v.uncachedCpu.relative(),
          v.cached.relative(), v.uncached.relative());
}

QTEST_MAIN(TestMainWindow)
#include "TestMainWindow.moc"
