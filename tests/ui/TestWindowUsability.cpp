// The real main window as a new user meets it: no model tokens in what a person reads, charts
// with readable ticks, keyboard order, messages, stale state cleared, exports named after the
// task.
#include "MainWindow.h"
#include "MainWindowTester.h"
#include "WindowFixture.h"
#include "controllers/EngineWorker.h"
#include "widgets/CompareView.h"
#include "widgets/ElidingStatusBar.h"
#include "widgets/ImageView.h"
#include "widgets/LatencyChart.h"
#include <florence/paths.h>
#include <florence/tasks.h>

#include <QAction>
#include <QApplication>
#include <QChart>
#include <QClipboard>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTableWidget>
#include <QTest>
#include <QValueAxis>

#include <cmath>

using florence::ui::ElidingStatusBar;
using florence::ui::EngineWorker;
using florence::ui::MainWindow;
using florence::ui::MainWindowTester;

class TestWindowUsability : public QObject, protected WindowFixture {
    Q_OBJECT

private slots:
    void initTestCase() { setUpTestCase(); }
    void init() { setUpWindow(); }
    void cleanup() { m_w.reset(); }

    void knownAnswersShowNoSpecialTokens();
    void allTasksShowCleanLabels_data();
    void allTasksShowCleanLabels();
    void chartsUseNiceTicks();
    void tabOrderLeavesTheTable();
    void regionHintClearAndMessages();
    void staleStateIsCleared();
    void exportsRememberFolderAndNameTheTask();
    void aCutMessageShowsWholeOnHover();
};

void TestWindowUsability::knownAnswersShowNoSpecialTokens() {
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

void TestWindowUsability::allTasksShowCleanLabels_data() {
    QTest::addColumn<QString>("task");
    for (const auto& t : florence::allTasks())
        QTest::newRow(t.token.c_str()) << QString::fromStdString(t.token);
}

void TestWindowUsability::allTasksShowCleanLabels() {
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

void TestWindowUsability::chartsUseNiceTicks() {
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

void TestWindowUsability::tabOrderLeavesTheTable() {
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
    // Esc for both of its meanings, though only one action holds it at a time.
    QVERIFY2(help.contains("Esc\tCancel the run or comparison") &&
                 help.contains("Esc\tClear Region (when nothing runs)"),
             qPrintable(help));
}

void TestWindowUsability::regionHintClearAndMessages() {
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
    // Cancel stops runs only: with nothing running it is off, even with a region to clear.
    QVERIFY(!m_w->findChild<QAction*>("cancelAction")->isEnabled());
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

void TestWindowUsability::staleStateIsCleared() {
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

void TestWindowUsability::exportsRememberFolderAndNameTheTask() {
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

void TestWindowUsability::aCutMessageShowsWholeOnHover() {
    // The status bar cuts a long message at its edge (the panel shows it wrapped): the bar's
    // tooltip holds it whole while it shows, and nothing for one that fits.
    m_w->resize(1280, 680);
    QStatusBar* bar = m_w->statusBar();
    const QString longText = QStringLiteral("Cannot open /tmp/") + QString(300, QLatin1Char('x')) +
                             QStringLiteral(".png: not a regular file (a FIFO)");
    m_w->showMessage(longText, true);
    QCOMPARE(bar->toolTip(), longText);
    // Drawn cut with "…", within the bar's room before the run state.
    auto* eliding = qobject_cast<ElidingStatusBar*>(bar);
    QVERIFY(eliding);
    const QString shown = eliding->shownMessage();
    QVERIFY2(shown.endsWith(QChar(0x2026)) && shown.size() < longText.size(), qPrintable(shown));
    const QWidget* run = m_w->findChild<QWidget*>(QStringLiteral("statusRun"));
    QVERIFY2(bar->fontMetrics().horizontalAdvance(shown) < run->x(),
             qPrintable(QString("%1 px of message before the run state at %2")
                            .arg(bar->fontMetrics().horizontalAdvance(shown))
                            .arg(run->x())));
    QVERIFY(!m_w->grab().isNull()); // painted cut
    m_w->showMessage(QStringLiteral("Ready"));
    QCOMPARE(bar->toolTip(), QString());
    QCOMPARE(eliding->shownMessage(), QStringLiteral("Ready"));
    m_w->showMessage(longText, true);
    bar->clearMessage();
    QCOMPARE(bar->toolTip(), QString());
}

QTEST_MAIN(TestWindowUsability)
#include "TestWindowUsability.moc"
