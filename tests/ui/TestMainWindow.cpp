// The real main window running the bundled (demo) model end to end, driven as a user would:
// widgets found by objectName, QTest key and mouse events, waits on signals. Runs: streaming,
// tables and overlays, cancelling, replacing, region tasks, comparisons. Where an assertion needs
// a known answer, the answer goes through the same token/finish path a run takes
// (MainWindowTester::showAnswerText, a test-only friend of the window).
#include "MainWindow.h"
#include "MainWindowTester.h"
#include "Ops.h"
#include "WindowFixture.h"
#include "controllers/EngineWorker.h"
#include "history/History.h"
#include "presentation/CompareVerdict.h"
#include "widgets/CompareView.h"
#include "widgets/CumulativeChart.h"
#include "widgets/ImageView.h"
#include "widgets/LatencyChart.h"
#include <florence/machine.h>
#include <florence/tasks.h>

#include "engine/FileSizeLimit.h"

#include <QAbstractButton>
#include <QApplication>
#include <QChart>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QRegularExpression>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>

#include <cmath>
#include <memory>
#include <vector>

using florence::ui::EngineWorker;
using florence::ui::MainWindow;
using florence::ui::MainWindowTester;

class TestMainWindow : public QObject, protected WindowFixture {
    Q_OBJECT

private slots:
    void initTestCase() { setUpTestCase(); }
    void init() { setUpWindow(); }
    void cleanup() { m_w.reset(); }

    void startsWithModelAndShowsIt();
    void captionRunStreamsTokensEndToEnd();
    void detectionRunFillsTableAndOverlayEndToEnd();
    void knownAnswerFillsTableHighlightsAndExports();
    void cancelMidRunWithEscape();
    void cancelBeforeFirstTokenKeepsResults();
    void stageTimingsShowFromFirstToken();
    void runPressedWhileEncodingCountsTheWait();
    void precisionSwitchReloadsModel();
    void newRunWhileRunningReplacesTheOldOne();
    void closeMidRunDoesNotHang();
    void regionTaskByMouseDrag();
    void textInputFollowsTask_data();
    void textInputFollowsTask();
    void missingTaskInputShowsMessage();
    void comparisonShowsTwoCurvesAndVerdict();
    void compareRepeatsOnABusyMachine();
};

void TestMainWindow::startsWithModelAndShowsIt() {
    QVERIFY(m_w->isModelReady());
    // The model list names the model; the line under it what it weighs and runs in.
    auto* models = child<QComboBox>(m_w.get(), "modelCombo");
    QVERIFY2(models->currentText().contains("florence2-demo-shapes"),
             qPrintable(models->currentText()));
    auto* label = child<QLabel>(m_w.get(), "modelLabel");
    QVERIFY(label);
    QVERIFY2(label->text().contains("parameters"), qPrintable(label->text()));
    QVERIFY(label->text().contains("float32"));
    QVERIFY(label->text().contains("loaded\u00A0in"));
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
    // Run once the encoders started on open have ended (runPressedWhileEncodingCountsTheWait:
    // Run pressed before).
    QTRY_VERIFY_WITH_TIMEOUT(!m_w->isEncodingImage(), 30'000);
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

    // Replacing it on a full disk (a file size limit stands in for one): the save fails with the
    // reason, the file the user had stays whole, and nothing half-written is left beside it.
    QFile old(png);
    QVERIFY(old.open(QIODevice::ReadOnly));
    const QByteArray before = old.readAll();
    old.close();
    const QStringList filesBefore = QDir(m_tmp.path()).entryList(QDir::Files | QDir::Hidden);
    {
        const florence::test::FileSizeLimit limit(before.size() / 2);
        QVERIFY(!m_w->saveAnnotatedImage(png));
    }
    QVERIFY2(m_w->messageText().contains("cannot write") &&
                 m_w->messageText().contains("annotated.png"),
             qPrintable(m_w->messageText()));
    QVERIFY(old.open(QIODevice::ReadOnly));
    QCOMPARE(old.readAll(), before);
    QCOMPARE(QDir(m_tmp.path()).entryList(QDir::Files | QDir::Hidden), filesBefore);
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
    // With a region dragged, Esc mid-run stops the run and leaves the region; only with
    // nothing running does it clear the region.
    m_w->setTask("<REGION_TO_DESCRIPTION>");
    m_w->setRegion(QRectF(40, 30, 200, 150));
    setIgnoreEos(true);
    setSpin("maxTokensSpin", 1024);
    const int before = tokens.count();
    QVERIFY(m_w->startRun());
    QTRY_VERIFY_WITH_TIMEOUT(tokens.count() >= before + 3, kRunTimeoutMs);
    pressKey(Qt::Key_Escape);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 3, 30'000);
    QCOMPARE(done.at(2).at(0).toBool(), true);
    QVERIFY(m_w->region().has_value());
    pressKey(Qt::Key_Escape);
    QTRY_VERIFY(!m_w->region().has_value());
}

void TestMainWindow::cancelBeforeFirstTokenKeepsResults() {
    QVERIFY(openImage(samplePath("pier.png")));
    MainWindowTester(m_w.get()).showAnswerText("<OD>",
                                               "</s><s>car<loc_52><loc_333><loc_932><loc_774></s>");
    auto* table = child<QTableWidget>(m_w.get(), "itemsTable");
    auto* raw = child<QPlainTextEdit>(m_w.get(), "rawText");
    auto* status = child<QLabel>(m_w.get(), "statusRun");
    auto* summary = child<QLabel>(m_w.get(), "resultSummary");
    auto resultsKept = [&] {
        return table->rowCount() == 1 && m_w->imageView()->overlayItemCount() == 1 &&
               raw->toPlainText().contains("car<loc_52>") &&
               summary->text().contains("Object detection · ");
    };
    // After a cancel the kept answer says it is from before, and why, first.
    auto keptSaysSo = [&] {
        return summary->text().startsWith("From before (last run: cancel") &&
               summary->text().contains(") · Object detection · ");
    };
    QVERIFY(resultsKept());
    QVERIFY(summary->text().startsWith("Object detection · "));
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
    QVERIFY2(keptSaysSo(), qPrintable(summary->text()));
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
    QVERIFY2(keptSaysSo(), qPrintable(summary->text()));

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
    QTRY_VERIFY_WITH_TIMEOUT(!m_w->isEncodingImage(), 30'000); // Run after the encoders ended
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

void TestMainWindow::runPressedWhileEncodingCountsTheWait() {
    // Run pressed while the encoders started on opening the image still run: the run waits for
    // them, so its first token counts from Run, and they show as started before it, not as
    // work done before Run.
    QVERIFY(openImage(samplePath("pier.png")));
    m_w->setTask("<CAPTION>");
    setSpin("maxTokensSpin", 8);
    const bool encoding = m_w->isEncodingImage();
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    if (!encoding)
        QSKIP("the encoders ended before Run could be pressed");
    const QString vision = child<QLabel>(m_w.get(), "visionLabel")->text();
    QVERIFY2(vision.endsWith(", started on open"), qPrintable(vision));
    auto* ttft = child<QLabel>(m_w.get(), "ttftLabel");
    QVERIFY2(ttft->toolTip().startsWith("From Run: "), qPrintable(ttft->toolTip()));
    QVERIFY(isDuration("ttftLabel"));
    // The total counts from Run too: never less than the first token.
    const auto ms = [&](const char* name) {
        const QString t = child<QLabel>(m_w.get(), name)->text();
        return t.endsWith(" ms") ? t.chopped(3).toDouble() : t.chopped(2).toDouble() * 1000;
    };
    QVERIFY2(ms("totalLabel") >= ms("ttftLabel"),
             qPrintable(child<QLabel>(m_w.get(), "totalLabel")->text()));
    // Replayed from the history, the same.
    const QString first = ttft->text(), text = child<QLabel>(m_w.get(), "textEncoderLabel")->text();
    const QString total = child<QLabel>(m_w.get(), "totalLabel")->text();
    QVERIFY(m_w->history()->entry(0).waitedForEncodersMs > 0);
    m_w->showHistoryEntry(0);
    QCOMPARE(child<QLabel>(m_w.get(), "visionLabel")->text(), vision);
    QCOMPARE(child<QLabel>(m_w.get(), "textEncoderLabel")->text(), text);
    QCOMPARE(ttft->text(), first);
    QCOMPARE(child<QLabel>(m_w.get(), "totalLabel")->text(), total);
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
    // model reloads, says its encoders run in float32 and why, and runs to the end. On the own
    // int8 GEMM (the AVX2 class, AVX-512 with VNNI) the demo model's encoder products of both
    // sides >= 128 still run in int8: its encoders report int8, and the note says the rest is
    // float32.
    const bool int8Encoders = florence::ops::ownInt8Gemm();
    qputenv("FLORENCE_BFLOAT16_PRODUCTS", "inaccurate");
    QTest::keyClick(combo, Qt::Key_Down);
    QCOMPARE(combo->currentText(), QString("int8"));
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 2, 60'000);
    qunsetenv("FLORENCE_BFLOAT16_PRODUCTS");
    QCOMPARE(m_w->modelInfo().precision(), QString("int8"));
    QVERIFY2(label->text().contains("int8") &&
                 label->text().contains("(encoders float32)") == !int8Encoders,
             qPrintable(label->text()));
    // First, in a paragraph of its own (the tooltip wraps).
    QVERIFY2(label->toolTip().startsWith(int8Encoders
                                             ? "<p>Precision: the encoders run in float32 except"
                                             : "<p>Precision: the encoders run in float32 and"),
             qPrintable(label->toolTip()));
    QCOMPARE(m_w->modelInfo().encoderPrecision,
             int8Encoders ? florence::Precision::Int8 : florence::Precision::Float32);
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
    // As narrow as the window goes (2x on a 1080p screen comes close): the figures wrap to
    // several lines each, none drawn over another (a form layout gave them one line's height
    // there and drew them over each other).
    m_w->resize(m_w->minimumSizeHint().width(), 540);
    QTest::qWait(100);
    QList<QLabel*> figures;
    for (const char* name :
         {"compareHeadline", "speedupLabel", "speedupMarksLabel", "compareFirstTokenLabel",
          "verdictLabel", "compareNoteLabel", "cachedTotalLabel", "uncachedTotalLabel"})
        figures << child<QLabel>(m_w.get(), name);
    QVERIFY(figures.at(1)->height() > figures.at(1)->fontMetrics().height() * 2); // wrapped
    for (QLabel* l : figures) {
        QVERIFY2(l->height() >= l->heightForWidth(l->width()), qPrintable(l->objectName()));
        for (QLabel* other : figures)
            QVERIFY2(l == other || !l->geometry().intersects(other->geometry()),
                     qPrintable(l->objectName() + " / " + other->objectName()));
    }
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
    // 160 tokens: the uncached passes (their cost grows with the square of the length) stand
    // apart from the cached ones under a busy core. At 48, passes of 100-700 ms, the repeats
    // overlapped and no verdict came in 2 of about 10 runs on a 2-core AMD Zen 5.
    setSpin("maxTokensSpin", 160);
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
    QVERIFY(!o.measured.cancelled);
    // Three repeats of each, and up to two more while the busy core keeps them from agreeing;
    // two when those already put the two kinds of pass far apart (comparisonSettled).
    const florence::CompareResult& m = o.measured;
    const size_t repeats = m.cached.totalsMs.size();
    const bool settledEarly = repeats == 2;
    QVERIFY2((repeats >= 3 && repeats <= 5) ||
                 (settledEarly && florence::comparisonSettled(m)),
             qPrintable(QString::number(repeats)));
    QCOMPARE(m.uncached.totalsMs.size(), repeats);
    QCOMPARE(m.cached.processorMs.size(), repeats);
    QCOMPARE(m.uncached.processorMs.size(), repeats);
    for (double cpu : m.cached.processorMs)
        QVERIFY(cpu > 0);
    // A warm-up and the measured passes, and the bar filled at once when it settled early.
    const int passes = 1 + 2 * int(repeats);
    QVERIFY2(progress == passes ||
                 (progress == passes + 1 && florence::comparisonSettled(m)),
             qPrintable(QString::number(progress)));
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
