// The answer as people read it, for every kind of task: the clean text above the table, one
// table row per item (a caption or an OCR answer is one text row), raw tokens only on request.
#include "presentation/AnswerDisplay.h"
#include "widgets/ResultsPanel.h"

#include <florence/answer.h>

#include <QClipboard>
#include <QGuiApplication>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTableWidget>
#include <QToolButton>
#include <QtTest>

using namespace florence;
using florence::ui::ResultsPanel;

class TestResultsPanel : public QObject {
    Q_OBJECT

private slots:
    void answerTextIsClean_data();
    void answerTextIsClean();
    void rawTokensBehindToggle();
    void textRowBecomesItemsWhenTheTaskChanges();
    void pendingGreysThePreviousAnswer();
    void scoresSayWhatTheyAre();
    void ocrCornersFitTheColumn();
};

void TestResultsPanel::answerTextIsClean_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("generated");
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("items");
    QTest::newRow("caption") << "<CAPTION>"
                             << "</s><s>A red circle and a blue square.</s>"
                             << "A red circle and a blue square." << 1 << 0;
    QTest::newRow("ocr") << "<OCR>"
                         << "</s><s>HELLO WORLD</s><pad><pad>"
                         << "HELLO WORLD" << 1 << 0;
    QTest::newRow("od") << "<OD>"
                        << "</s><s>circle<loc_10><loc_10><loc_200><loc_200>square<loc_300>"
                           "<loc_300><loc_500><loc_500></s>"
                        << "circle square" << 2 << 2;
    QTest::newRow("ocr with region") << "<OCR_WITH_REGION>"
                                     << "</s><s>2024<loc_1><loc_2><loc_30><loc_2><loc_30><loc_20>"
                                        "<loc_1><loc_20></s>"
                                     << "2024" << 1 << 1;
    QTest::newRow("empty") << "<CAPTION>"
                           << "</s><s></s>"
                           << "" << 0 << 0;
}

void TestResultsPanel::answerTextIsClean() {
    QFETCH(QString, task);
    QFETCH(QString, generated);
    QFETCH(QString, text);
    QFETCH(int, rows);
    QFETCH(int, items);
    ResultsPanel panel;
    const ParsedAnswer parsed = parseAnswer(task.toStdString(), generated.toStdString(), 640, 480);
    panel.setRawText(generated.toStdString());
    panel.setAnswer(ui::displayAnswer(parsed, std::nullopt));
    QCOMPARE(panel.answerText(), text);
    QCOMPARE(panel.rowCount(), rows);
    QCOMPARE(panel.itemCount(), items);
    auto* table = panel.findChild<QTableWidget*>(QStringLiteral("itemsTable"));
    for (int r = 0; r < table->rowCount(); ++r)
        QVERIFY2(!table->item(r, 1)->text().contains(QLatin1Char('<')),
                 qPrintable(table->item(r, 1)->text()));
    panel.clear();
    QCOMPARE(panel.answerText(), QString());
    QCOMPARE(panel.rowCount(), 0);
}

void TestResultsPanel::rawTokensBehindToggle() {
    ResultsPanel panel;
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    const std::string raw = "</s><s>A green star.</s>";
    panel.setRawText(raw);
    panel.setAnswer(ui::displayAnswer(parseAnswer("<CAPTION>", raw, 10, 10), std::nullopt));
    auto* rawPane = panel.findChild<QPlainTextEdit*>(QStringLiteral("rawText"));
    auto* toggle = panel.findChild<QToolButton*>(QStringLiteral("rawToggle"));
    QVERIFY(rawPane && toggle);
    QVERIFY(!rawPane->isVisible());
    QCOMPARE(panel.rawText(), QString::fromStdString(raw));
    toggle->click();
    QVERIFY(rawPane->isVisible());
    // "</s>" is never split across lines: a word joiner follows "</" on screen, and a copy
    // leaves it out.
    QCOMPARE(rawPane->toPlainText(), QStringLiteral("</\u2060s><s>A green star.</\u2060s>"));
    rawPane->selectAll();
    rawPane->copy();
    QCOMPARE(QGuiApplication::clipboard()->text(), QString::fromStdString(raw));
    toggle->click();
    QVERIFY(!rawPane->isVisible());
}

void TestResultsPanel::textRowBecomesItemsWhenTheTaskChanges() {
    ResultsPanel panel;
    panel.setAnswer(
        ui::displayAnswer(parseAnswer("<CAPTION>", "</s><s>A star.</s>", 100, 100), std::nullopt));
    QCOMPARE(panel.rowCount(), 1);
    panel.setAnswer(ui::displayAnswer(
        parseAnswer("<OD>", "</s><s>star<loc_1><loc_1><loc_500><loc_500></s>", 100, 100),
        std::nullopt));
    QCOMPARE(panel.rowCount(), 1);
    QCOMPARE(panel.itemCount(), 1);
    auto* table = panel.findChild<QTableWidget*>(QStringLiteral("itemsTable"));
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("star"));
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("box"));
}

void TestResultsPanel::pendingGreysThePreviousAnswer() {
    ResultsPanel panel;
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setAnswer(
        ui::displayAnswer(parseAnswer("<CAPTION>", "</s><s>A star.</s>", 100, 100), std::nullopt));
    panel.setSummary(QStringLiteral("Caption · 4 answer tokens"));
    auto* summary = panel.findChild<QLabel*>(QStringLiteral("resultSummary"));
    auto* answer = panel.findChild<QPlainTextEdit*>(QStringLiteral("answerText"));
    auto* busy = panel.findChild<QWidget*>(QStringLiteral("runProgress"));
    QVERIFY(summary && answer && busy);
    QVERIFY(!busy->isVisible());

    panel.showPending(QStringLiteral("Reading the image…"));
    QVERIFY(panel.isPending());
    QVERIFY(busy->isVisible());
    QCOMPARE(panel.pendingPhase(), QStringLiteral("Reading the image…"));
    QVERIFY(!answer->isEnabled());
    QCOMPARE(panel.answerText(), QStringLiteral("A star."));
    QVERIFY(summary->text().contains(QLatin1String("Previous answer")));
    panel.showPending(QStringLiteral("Writing the first word…")); // the next phase
    QCOMPARE(panel.pendingPhase(), QStringLiteral("Writing the first word…"));

    // Ended before the first token (cancelled, failed): the previous answer is current again.
    panel.endPending();
    QVERIFY(!panel.isPending());
    QVERIFY(!busy->isVisible());
    QVERIFY(answer->isEnabled());
    QCOMPARE(summary->text(), QStringLiteral("Caption · 4 answer tokens"));
    // With the reason the run gave no answer: the answer shown says it is from before.
    panel.showPending(QStringLiteral("Reading the image…"));
    panel.endPending(QStringLiteral("Failed"));
    QVERIFY(answer->isEnabled());
    QCOMPARE(summary->text(),
             QStringLiteral("From before (last run: failed) · Caption · 4 answer tokens"));

    // The first token: the old answer goes.
    panel.showPending(QStringLiteral("Reading the image…"));
    panel.clear();
    QVERIFY(!panel.isPending());
    QVERIFY(answer->isEnabled());
    QCOMPARE(panel.answerText(), QString());

    // Nothing shown yet: nothing is called previous.
    panel.showPending(QStringLiteral("Reading the image…"));
    QVERIFY(!summary->text().contains(QLatin1String("Previous")));
}

void TestResultsPanel::scoresSayWhatTheyAre() {
    ResultsPanel panel;
    ParsedAnswer od =
        parseAnswer("<OD>", "</s><s>star<loc_1><loc_1><loc_500><loc_500></s>", 100, 100);
    od.items.at(0).score = 0.318;
    panel.setAnswer(ui::displayAnswer(od, std::nullopt));
    auto* table = panel.findChild<QTableWidget*>(QStringLiteral("itemsTable"));
    const QString header = table->horizontalHeaderItem(4)->toolTip();
    // What the number is, and what it is not.
    QVERIFY2(header.contains(QLatin1String("mean probability")), qPrintable(header));
    QVERIFY(header.contains(QLatin1String("not an IoU")));
    const QString cell = table->item(0, 4)->toolTip();
    QVERIFY2(cell.startsWith(QLatin1String("0.318")) && cell.contains(QLatin1String("not an IoU")),
             qPrintable(cell));
    // A caption's one row: the score of its words.
    ParsedAnswer caption = parseAnswer("<CAPTION>", "</s><s>A star.</s>", 100, 100);
    caption.score = 0.9;
    panel.setAnswer(ui::displayAnswer(caption, std::nullopt));
    QVERIFY2(table->item(0, 4)->toolTip().contains(QLatin1String("words of its answer")),
             qPrintable(table->item(0, 4)->toolTip()));
    // The controls above the table say it too.
    auto* slider = panel.findChild<QWidget*>(QStringLiteral("minScoreSlider"));
    QVERIFY(slider->toolTip().contains(QLatin1String("not an IoU")));
}

void TestResultsPanel::ocrCornersFitTheColumn() {
    ResultsPanel panel;
    panel.setAnswer(ui::displayAnswer(
        parseAnswer("<OCR_WITH_REGION>",
                    "</s><s>2024<loc_10><loc_20><loc_300><loc_20><loc_300><loc_200><loc_10>"
                    "<loc_200></s>",
                    640, 480),
        std::nullopt));
    auto* table = panel.findChild<QTableWidget*>(QStringLiteral("itemsTable"));
    QCOMPARE(table->rowCount(), 1);
    // Four corners in whole pixels: short enough for the column beside the text.
    QCOMPARE(table->item(0, 3)->text(), QStringLiteral("(7, 10) (192, 10) (192, 96) (7, 96)"));
}

QTEST_MAIN(TestResultsPanel)
#include "TestResultsPanel.moc"
