// What the window says while and around a run, as a newcomer reads it: a busy bar and a phase
// between Run and the first token (the previous answer greyed, not passed off as the new one),
// task names instead of task tokens in the Prompt line and messages, the About box in plain
// words with the details behind a disclosure, the Keyboard Shortcuts as a table, and the model
// Process Folder will use. The real MainWindow offscreen, with the bundled model.
#include "MainWindow.h"
#include "WindowFixture.h"
#include "controllers/TaskPrompt.h"
#include "dialogs/AboutDialog.h"
#include "dialogs/ProcessFolderDialog.h"
#include "widgets/ResultsPanel.h"

#include <florence/paths.h>
#include <florence/tasks.h>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QRadioButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <memory>

using florence::ui::MainWindow;
using florence::ui::ResultsPanel;

namespace {

// The text of the message box `name` that `action` opens (modal: read, then closed).
QString boxText(QAction* action, const char* name, QString* details = nullptr) {
    QString text;
    QTimer::singleShot(0, [&] {
        for (QWidget* w : QApplication::topLevelWidgets()) {
            if (auto* box = qobject_cast<QMessageBox*>(w);
                box && box->objectName() == QLatin1String(name)) {
                text = box->text();
                if (details)
                    *details = box->detailedText();
                box->close();
            }
        }
    });
    action->trigger();
    return text;
}

} // namespace

class TestRunFeedback : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();

    void previousAnswerGreyedUntilTheFirstToken();
    void phaseSaysWhatTheModelDoes();
    void readablePromptShowsPixels_data();
    void readablePromptShowsPixels();
    void promptLineAndMessagesNameTasks();
    void aboutInPlainWordsDetailsBehindDisclosure();
    void shortcutsAreATable();
    void processFolderNamesTheModel();

private:
    std::unique_ptr<MainWindow> makeWindow();
    // Opens `path` and waits until the encoders have run on it ahead of Run.
    bool openAndEncode(MainWindow* w, const QString& path);

    QTemporaryDir m_tmp;
};

void TestRunFeedback::initTestCase() {
    QVERIFY(m_tmp.isValid());
    isolateUserState(m_tmp, "florence-studio-feedback-test");
    QVERIFY2(!florence::bundledModelDir().empty(), "build the florence_data target first");
}

void TestRunFeedback::init() {
    QSettings().clear();
}

std::unique_ptr<MainWindow> TestRunFeedback::makeWindow() {
    auto w = std::make_unique<MainWindow>();
    w->resize(1280, 860);
    w->show();
    QSignalSpy ready(w.get(), &MainWindow::modelReady);
    w->loadDefaultModel();
    if (!ready.wait(60'000))
        qWarning("model did not load");
    return w;
}

bool TestRunFeedback::openAndEncode(MainWindow* w, const QString& path) {
    QSignalSpy encoded(w, &MainWindow::imageReady);
    if (!w->openImageFile(path))
        return false;
    if (!QTest::qWaitFor([w] { return !w->isOpeningImage(); }, 60'000))
        return false;
    // Encode on open: the vision encoder (and the task's text encoder) have run.
    return w->imagePath() == QFileInfo(path).absoluteFilePath() && encoded.wait(60'000);
}

void TestRunFeedback::previousAnswerGreyedUntilTheFirstToken() {
    auto w = makeWindow();
    QVERIFY(openAndEncode(w.get(), scenePath("scene_00.png")));
    w->setTask("<CAPTION>");
    child<QSpinBox>(w.get(), "beamsSpin")->setValue(1);
    QSignalSpy done(w.get(), &MainWindow::runCompleted);
    QVERIFY(w->startRun());
    QVERIFY(done.wait(kRunTimeoutMs));
    auto* panel = child<ResultsPanel>(w.get(), "resultsPanel");
    auto* answer = child<QPlainTextEdit>(w.get(), "answerText");
    const QString previous = panel->answerText();
    QVERIFY(!previous.isEmpty());
    QVERIFY(!panel->isPending());

    QSignalSpy tokens(w.get(), &MainWindow::tokenArrived);
    QVERIFY(w->startRun());
    // Before the engine thread has sent anything: the old answer is there but greyed and
    // called the previous one, and a busy bar says what happens.
    QVERIFY(panel->isPending());
    QVERIFY(child<QWidget>(w.get(), "runProgress")->isVisible());
    QCOMPARE(panel->answerText(), previous);
    QVERIFY(!answer->isEnabled());
    QVERIFY2(child<QLabel>(w.get(), "resultSummary")->text().contains("Previous answer"),
             qPrintable(child<QLabel>(w.get(), "resultSummary")->text()));
    // The status line names the task, never its token.
    const QString status = child<QLabel>(w.get(), "statusRun")->text();
    QVERIFY2(status.startsWith("Caption:") && !status.contains('<'), qPrintable(status));

    QVERIFY(tokens.wait(kRunTimeoutMs));
    QVERIFY(!panel->isPending());
    QVERIFY(answer->isEnabled());
    QVERIFY(done.wait(kRunTimeoutMs));
    QVERIFY(!panel->isPending());
    QVERIFY(answer->isEnabled());
    QVERIFY(!panel->answerText().isEmpty());
}

void TestRunFeedback::phaseSaysWhatTheModelDoes() {
    auto w = makeWindow();
    w->setTask("<CAPTION>");
    QVERIFY(openAndEncode(w.get(), scenePath("scene_01.png")));
    auto* panel = child<ResultsPanel>(w.get(), "resultsPanel");
    QSignalSpy done(w.get(), &MainWindow::runCompleted);
    // Image and prompt encoded on open: the first thing the run does is decode.
    QVERIFY(w->startRun());
    QCOMPARE(panel->pendingPhase(), QString("Writing the first word…"));
    QVERIFY(done.wait(kRunTimeoutMs));
    // Another task, run before its prompt was encoded ahead: the text encoder runs first.
    w->setTask("<OD>");
    QVERIFY(w->startRun());
    QCOMPARE(panel->pendingPhase(), QString("Reading the task (text encoder)…"));
    QVERIFY(done.wait(kRunTimeoutMs));
    // A comparison encodes the image again in every pass.
    QSignalSpy compared(w.get(), &MainWindow::comparisonCompleted);
    QVERIFY(w->startComparison());
    QCOMPARE(panel->pendingPhase(), QString("Reading the image (vision encoder)…"));
    w->cancelRun(); // before the engine took it up it ends at once, else at its next step
    QTRY_COMPARE_WITH_TIMEOUT(compared.count(), 1, kRunTimeoutMs);
    QVERIFY(!panel->isPending());
}

void TestRunFeedback::readablePromptShowsPixels_data() {
    QTest::addColumn<QString>("prompt");
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::addColumn<QString>("shown");
    QTest::newRow("region") << "What is the region <loc_100><loc_80><loc_300><loc_230>?" << 1000
                            << 1000 << "What is the region [box 101, 81 – 301, 231]?";
    QTest::newRow("scaled") << "<loc_0><loc_0><loc_999><loc_999>" << 640 << 480
                            << "[box 0, 0 – 640, 480]";
    QTest::newRow("no image") << "<loc_0><loc_0><loc_999><loc_999>" << 0 << 0
                              << "[box 1, 1 – 1000, 1000]";
    QTest::newRow("plain") << "What does the image describe?" << 640 << 480
                           << "What does the image describe?";
    // Fewer than four: nothing to turn into a box, shown as it is.
    QTest::newRow("three") << "<loc_1><loc_2><loc_3>" << 640 << 480 << "<loc_1><loc_2><loc_3>";
}

void TestRunFeedback::readablePromptShowsPixels() {
    QFETCH(QString, prompt);
    QFETCH(int, width);
    QFETCH(int, height);
    QFETCH(QString, shown);
    QCOMPARE(florence::ui::readablePrompt(prompt.toStdString(), width, height), shown);
}

void TestRunFeedback::promptLineAndMessagesNameTasks() {
    using florence::ui::withTaskNames;
    QCOMPARE(withTaskNames("<OD> takes no text"), QString("“Object detection” takes no text"));
    QCOMPARE(withTaskNames("<loc_5> and <FOO_BAR> stay"), QString("<loc_5> and <FOO_BAR> stay"));

    auto w = makeWindow();
    QVERIFY(openAndEncode(w.get(), scenePath("scene_00.png")));
    auto* prompt = child<QLabel>(w.get(), "promptLabel");
    w->setTask("<REGION_TO_CATEGORY>");
    w->setRegion(QRectF(100, 80, 200, 150));
    const QString shown = prompt->text().remove(QChar(0x200B));
    QVERIFY2(shown.contains("[box ") && !shown.contains('<'), qPrintable(shown));
    // The model still gets its location tokens.
    QVERIFY(florence::ui::promptFor("<REGION_TO_CATEGORY>", {}, QRectF(100, 80, 200, 150), nullptr,
                                    nullptr)
                ->find("<loc_") != std::string::npos);

    w->setTask("<CAPTION_TO_PHRASE_GROUNDING>");
    w->setTaskText(QString());
    QVERIFY2(!prompt->text().contains('<') &&
                 prompt->text().contains("Caption to phrase grounding"),
             qPrintable(prompt->text()));
    QVERIFY(!w->startRun());
    QVERIFY2(w->messageText().contains("Caption to phrase grounding") &&
                 !w->messageText().contains('<'),
             qPrintable(w->messageText()));
    // The task list's tooltips say what each task needs in words.
    auto* tasks = child<QComboBox>(w.get(), "taskCombo");
    QVERIFY(tasks->count() >= 15);
    for (int i = 0; i < tasks->count(); ++i) {
        const QString tip = tasks->itemData(i, Qt::ToolTipRole).toString();
        QVERIFY2(!tip.isEmpty() && !tip.contains('<'), qPrintable(tip));
    }
    // An engine message that names a task by token reaches the window with its name.
    w->showMessage("<OCR> failed on this image", true);
    QCOMPARE(w->messageText(), QString("“OCR” failed on this image"));
}

void TestRunFeedback::aboutInPlainWordsDetailsBehindDisclosure() {
    auto w = makeWindow();
    QString details;
    const QString text = boxText(w->findChild<QAction*>("aboutAction"), "aboutBox", &details);
    QVERIFY2(text.contains("florence2-demo-shapes"), qPrintable(text));
    QVERIFY(text.contains("Import Hugging Face Model"));
    for (const char* jargon : {"LibTorch", "OMP_", "bfloat16", "kernel", "BLAS", "threads"})
        QVERIFY2(!text.contains(QLatin1String(jargon), Qt::CaseInsensitive), jargon);
    QVERIFY2(details.contains("LibTorch"), qPrintable(details));
    QVERIFY(details.contains("florence-studio-cli import --hf DIR --out PKG"));
    QCOMPARE(details, florence::ui::AboutDialog::details());
}

void TestRunFeedback::shortcutsAreATable() {
    auto w = makeWindow();
    const QString html = boxText(w->findChild<QAction*>("shortcutsAction"), "shortcutsBox");
    // One row per action with keys: the keys in one column, the actions in the next, aligned
    // whatever the font (tab stops in a label were not).
    const int withKeys = static_cast<int>(w->shortcutsText().count(QLatin1Char('\t')));
    QVERIFY(withKeys >= 10);
    QCOMPARE(static_cast<int>(html.count(QLatin1String("<tr>"))), withKeys);
    QVERIFY(html.contains("<table"));
    QVERIFY(!html.contains(QLatin1Char('\t')));
    QVERIFY(html.contains("Shift+Tab goes back"));
}

void TestRunFeedback::processFolderNamesTheModel() {
    auto w = makeWindow();
    QVERIFY(w->isModelReady());
    florence::ui::ProcessFolderDialog* dialog = w->showProcessFolderDialog();
    QVERIFY(dialog);
    auto* model = child<QLabel>(dialog, "folderModelLabel");
    QCOMPARE(model->text(), w->modelInfo().name());
    QVERIFY(model->isVisible());
    // Every field starts at one left edge (a radio button as a row label once pushed some out).
    QVERIFY(QTest::qWaitForWindowExposed(dialog));
    const int left = model->mapTo(dialog, QPoint(0, 0)).x();
    for (const char* name : {"folderEdit", "recursiveCheck", "folderTaskCombo", "folderTextEdit",
                             "besideRadio", "elsewhereRadio", "formatTextCheck", "overwriteCheck"})
        QCOMPARE(child<QWidget>(dialog, name)->mapTo(dialog, QPoint(0, 0)).x(), left);
    // The two places for the results still exclude each other.
    auto* beside = child<QRadioButton>(dialog, "besideRadio");
    auto* elsewhere = child<QRadioButton>(dialog, "elsewhereRadio");
    elsewhere->setChecked(true);
    QVERIFY(!beside->isChecked());
    beside->setChecked(true);
    QVERIFY(!elsewhere->isChecked());
    dialog->close();
}

QTEST_MAIN(TestRunFeedback)
#include "TestRunFeedback.moc"
