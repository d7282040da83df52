// The answer as people read it, for every kind of task: the clean text above the table, one
// table row per item (a caption or an OCR answer is one text row), raw tokens only on request.
#include "presentation/AnswerDisplay.h"
#include "widgets/ResultsPanel.h"

#include <florence/answer.h>

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
    QCOMPARE(rawPane->toPlainText(), QString::fromStdString(raw));
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

QTEST_MAIN(TestResultsPanel)
#include "TestResultsPanel.moc"
