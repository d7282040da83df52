// The real main window, driven as a user would: widgets found by objectName, QTest key and mouse
// events, waits on signals. Runs the bundled (demo) model end to end; where an
// assertion needs a known answer, the answer goes through the same token/finish path a run
// takes (MainWindow::showAnswerText).
#include "widgets/CompareView.h"
#include "run/EngineWorker.h"
#include "widgets/ImageView.h"
#include "dialogs/ImportDialog.h"
#include "widgets/LatencyChart.h"
#include "MainWindow.h"
#include <florence/paths.h>
#include "widgets/ResultsPanel.h"
#include <florence/tasks.h>

#include <QAbstractButton>
#include <QApplication>
#include <QChart>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
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
#include <QRadioButton>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QSemaphore>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <memory>

using florence::ui::EngineWorker;
using florence::ui::MainWindow;

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
    void runDisabledWhileModelLoads();
    void aboutExplainsBundledModel();
    void randomModelIsDescribedFromItsManifest();
    void firstRunImagePrefersSampleScenes();
    void firstRunCaptionsASampleScene();
    void importDialogCancelsAndImports();

private:
    std::unique_ptr<MainWindow> makeWindow();
    void setSpin(const char* name, int value);
    // The pier sample, `task`, end token ignored, 1024 new tokens: a run that lasts until
    // cancelled or replaced.
    bool prepareLongRun(const char* task);
    void pressKey(Qt::Key key, Qt::KeyboardModifiers mods = Qt::NoModifier);

    bool isDuration(const char* labelName);

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
    return w;
}

void TestMainWindow::setSpin(const char* name, int value) {
    auto* spin = child<QSpinBox>(m_w.get(), name);
    QVERIFY(spin);
    spin->setValue(value);
    QCOMPARE(spin->value(), value);
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
    QCOMPARE(tasks->count(), 15);
    QCOMPARE(tasks->itemText(tasks->findData("<OD>")), QString("Object detection"));
}

void TestMainWindow::captionRunStreamsTokensEndToEnd() {
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
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
    QVERIFY2(raw->toPlainText().startsWith("</s><s>"), qPrintable(raw->toPlainText()));
    // The chart holds one point per step the engine reported.
    QCOMPARE(m_w->latencyChart()->pointCount(), tokens.count());
    // "12.3 ms" or, on a busy machine, "12.34 s": a measured duration, not the placeholder.
    const QRegularExpression duration("^\\d+(\\.\\d+)? m?s$");
    for (const char* name : {"ttftLabel", "preprocessLabel", "visionLabel", "textEncoderLabel",
                             "totalLabel", "medianLabel"})
        QVERIFY2(duration.match(child<QLabel>(m_w.get(), name)->text()).hasMatch(),
                 qPrintable(QString(name) + ": " + child<QLabel>(m_w.get(), name)->text()));
    QVERIFY(child<QLabel>(m_w.get(), "tpsLabel")->text() != "–");
    QVERIFY(child<QLabel>(m_w.get(), "p95Label")->text() != "–");
    QVERIFY(!m_w->isRunning());
}

void TestMainWindow::detectionRunFillsTableAndOverlayEndToEnd() {
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
    m_w->setTask("<OD>");
    setSpin("maxTokensSpin", 40);
    setSpin("beamsSpin", 1);
    m_w->setIgnoreEos(true);
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
}

void TestMainWindow::knownAnswerFillsTableHighlightsAndExports() {
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
    const QSize size = m_w->imageSize();
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    m_w->showAnswerText("<OD>", "</s><s>car<loc_52><loc_333><loc_932><loc_774>person<loc_10>"
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

    const QString png = m_tmp.filePath("annotated.png");
    QVERIFY2(m_w->saveAnnotatedImage(png), qPrintable(m_w->messageText()));
    QImage saved(png);
    QCOMPARE(saved.size(), size);
}

bool TestMainWindow::prepareLongRun(const char* task) {
    if (!m_w->openImageFile(samplePath("pier.png")))
        return false;
    m_w->setTask(QString::fromLatin1(task));
    m_w->setIgnoreEos(true);
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
    QVERIFY(child<QLabel>(m_w.get(), "resultSummary")->text().startsWith("<CAPTION>"));
    // The window still works after a cancel.
    m_w->setIgnoreEos(false);
    setSpin("maxTokensSpin", 5);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kRunTimeoutMs);
    QCOMPARE(done.at(1).at(0).toBool(), false);
}

void TestMainWindow::cancelBeforeFirstTokenKeepsResults() {
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
    m_w->showAnswerText("<OD>", "</s><s>car<loc_52><loc_333><loc_932><loc_774></s>");
    auto* table = child<QTableWidget>(m_w.get(), "itemsTable");
    auto* raw = child<QPlainTextEdit>(m_w.get(), "rawText");
    auto* status = child<QLabel>(m_w.get(), "statusRun");
    auto resultsKept = [&] {
        return table->rowCount() == 1 && m_w->imageView()->overlayItemCount() == 1 &&
               raw->toPlainText().contains("car<loc_52>") &&
               child<QLabel>(m_w.get(), "resultSummary")->text().startsWith("<OD>");
    };
    QVERIFY(resultsKept());
    m_w->setTask("<CAPTION>");
    setSpin("maxTokensSpin", 5);
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);

    EngineWorker* worker = m_w->engineWorker();
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
    QTRY_VERIFY_WITH_TIMEOUT(isDuration("visionLabel"), 5'000);
    QVERIFY(isDuration("preprocessLabel"));
    QVERIFY(isDuration("textEncoderLabel"));
    QVERIFY(isDuration("ttftLabel"));
    QVERIFY2(m_w->isRunning(), "the stages must show while generating, not only at the end");
    m_w->cancelRun();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30'000);

    // The same image again: the engine reuses its features and the split says so at once.
    QVERIFY(m_w->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(m_w->tokensReceived() >= 1, kRunTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(child<QLabel>(m_w.get(), "visionLabel")->text().contains("reused"),
                             5'000);
    QVERIFY(isDuration("textEncoderLabel"));
    QVERIFY(m_w->isRunning());
    m_w->cancelRun();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, 30'000);
}

void TestMainWindow::precisionSwitchReloadsModel() {
    auto* combo = child<QComboBox>(m_w.get(), "precisionCombo");
    auto* label = child<QLabel>(m_w.get(), "modelLabel");
    QVERIFY(combo);
    QCOMPARE(combo->currentText(), QString("float32"));
    QCOMPARE(m_w->modelInfo().precision, QString("float32"));
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
    QCOMPARE(m_w->modelInfo().precision, QString("bfloat16"));
    QVERIFY2(label->text().contains("bfloat16"), qPrintable(label->text()));
    QVERIFY(child<QLabel>(m_w.get(), "statusModel")->text().contains("bfloat16"));

    // The bfloat16 model runs to the end.
    m_w->setIgnoreEos(false);
    setSpin("maxTokensSpin", 8);
    const int before = tokens.count();
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kRunTimeoutMs);
    QCOMPARE(done.at(1).at(0).toBool(), false);
    QVERIFY(tokens.count() > before);
    QVERIFY(!child<QPlainTextEdit>(m_w.get(), "rawText")->toPlainText().isEmpty());

    // And back: float32 again, without a run in flight.
    m_w->setPrecision(florence::Precision::Float32);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 2, 60'000);
    QCOMPARE(m_w->modelInfo().precision, QString("float32"));
    QVERIFY2(label->text().contains("float32"), qPrintable(label->text()));
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
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
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
    // Shown as typed, not as HTML (zero-width spaces only allow line breaks).
    QCOMPARE(child<QLabel>(m_w.get(), "promptLabel")->text().remove(QChar(0x200B)), prompt);
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
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
    m_w->showAnswerText("<CAPTION>", "</s><s>an earlier answer</s>");
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
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
    m_w->setTask("<CAPTION>");
    m_w->setIgnoreEos(true);
    setSpin("maxTokensSpin", 16);
    QSignalSpy compared(m_w.get(), &MainWindow::comparisonCompleted);
    QTest::mouseClick(child<QAbstractButton>(m_w.get(), "compareButton"), Qt::LeftButton);
    QVERIFY(m_w->isRunning());
    QTRY_COMPARE_WITH_TIMEOUT(compared.count(), 1, kRunTimeoutMs);
    const bool identical = compared.at(0).at(0).toBool();
    const QList<QAbstractSeries*> series = m_w->compareView()->chart()->series();
    QCOMPARE(series.size(), 2);
    for (QAbstractSeries* s : series)
        QCOMPARE(static_cast<QLineSeries*>(s)->count(), 16);
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
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
    m_w->showAnswerText("<CAPTION>", "</s><s>kept</s>");
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
    QVERIFY(!m_w->openImageFile(m_tmp.filePath("does-not-exist.jpg")));
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

    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(samplePath("coffee.png"))});
    const QPoint at = m_w->imageView()->geometry().center();
    QDragEnterEvent enter(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_w.get(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(at), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_w.get(), &drop);
    QVERIFY(m_w->imagePath().endsWith("coffee.png"));
    QCOMPARE(m_w->imageSize(), QSize(600, 400));
}

void TestMainWindow::badModelFolderKeepsCurrentModel() {
    const QString name = m_w->modelInfo().name;
    QSignalSpy failed(m_w.get(), &MainWindow::modelFailed);
    m_w->openModelPackage(m_tmp.path()); // no manifest.json
    QCOMPARE(failed.count(), 1);
    QVERIFY(m_w->messageText().contains("manifest"));
    QVERIFY(m_w->isModelReady());
    QCOMPARE(m_w->modelInfo().name, name);
    // The model still runs.
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
    setSpin("maxTokensSpin", 3);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
}

void TestMainWindow::zoomShortcuts() {
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
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
    QVERIFY(m_w->openImageFile(samplePath("coffee.png")));
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
    QCOMPARE(m_w->modelInfo().precision, QString("bfloat16"));
    QVERIFY(m_w->imagePath().endsWith("coffee.png"));
    QVERIFY(m_w->recentFiles().value(0).endsWith("coffee.png"));
}

void TestMainWindow::imageThatFrozeIsNotReopened() {
    // A start that began to open the last image and never finished (a hostile image froze or
    // crashed the app) leaves its mark; the next start does not open that image again.
    QVERIFY(m_w->openImageFile(samplePath("coffee.png")));
    m_w->close();
    m_w.reset();
    const QString coffee = QFileInfo(samplePath("coffee.png")).absoluteFilePath();
    QCOMPARE(QSettings().value("files/lastImage").toString(), coffee);
    QSettings().setValue("files/openingImage", coffee);
    m_w = makeWindow();
    QVERIFY2(!m_w->imagePath().endsWith("coffee.png"), qPrintable(m_w->imagePath()));
    // An image that opens clears the mark, and is reopened as usual.
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
    m_w->close();
    m_w.reset();
    m_w = makeWindow();
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
    QVERIFY(!QSettings().contains("files/openingImage"));
}

void TestMainWindow::runDisabledWhileModelLoads() {
    // A run started during a load would use the old model and its defaults.
    QVERIFY(m_w->openImageFile(samplePath("pier.png")));
    auto* run = child<QAbstractButton>(m_w.get(), "runButton");
    QVERIFY(run->isEnabled());
    QSignalSpy reloaded(m_w.get(), &MainWindow::modelReady);
    m_w->setPrecision(florence::Precision::BFloat16);
    QVERIFY(!run->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(reloaded.count(), 1, 60'000);
    QVERIFY(run->isEnabled());
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
    QVERIFY(about.contains("florence-studio-cli import --hf DIR --out PKG"));
    QVERIFY(about.contains("python3-torch"));
    QVERIFY(about.contains("LibTorch"));
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
    QCOMPARE(m_w->modelInfo().name, QString("florence2-tiny (random weights, seed 1234)"));
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
    QVERIFY(m_w->hasImage());
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
    QVERIFY(m_w->openImageFile(first));
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

QTEST_MAIN(TestMainWindow)
#include "TestMainWindow.moc"
