// The task table, prompt construction and region quantization (shared/florence2/TASKS.md),
// checked against the prompts the original processor produced for the reference fixture.
#include <florence/tasks.h>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>

using namespace florence;

Q_DECLARE_METATYPE(florence::TaskInput)
Q_DECLARE_METATYPE(florence::AnswerType)
Q_DECLARE_METATYPE(florence::Box)
Q_DECLARE_METATYPE(std::optional<florence::Box>)

namespace {

// The message of the TaskError the call throws, or "no error".
template <typename F> QString errorOf(F&& call) {
    try {
        call();
    } catch (const TaskError& e) {
        return QString::fromStdString(e.what());
    }
    return QStringLiteral("no error");
}

} // namespace

class TestTasks : public QObject {
    Q_OBJECT

private slots:
    void table_data();
    void table();
    void tableOrderAndNames();
    void unknownTask();
    void prompts_data();
    void prompts();
    void referencePrompts();
    void refusals_data();
    void refusals();
    void binRoundTrip_data();
    void binRoundTrip();
    void pixelRoundTrip_data() { binRoundTrip_data(); }
    void pixelRoundTrip();
    void quantizationEdges();
    void regionClipping_data();
    void regionClipping();
    void emptyRegionRefused_data();
    void emptyRegionRefused();
    void regionText_data();
    void regionText();
};

void TestTasks::table_data() {
    QTest::addColumn<QString>("token");
    QTest::addColumn<QString>("prompt");
    QTest::addColumn<TaskInput>("input");
    QTest::addColumn<QString>("inputLabel");
    QTest::addColumn<AnswerType>("answerType");
    const auto row = [](const char* token, const char* prompt, TaskInput input, const char* label,
                        AnswerType type) {
        QTest::newRow(token) << token << prompt << input << label << type;
    };
    // Transcribed from TASKS.md.
    row("<CAPTION>", "What does the image describe?", TaskInput::None, "", AnswerType::PureText);
    row("<DETAILED_CAPTION>", "Describe in detail what is shown in the image.", TaskInput::None, "",
        AnswerType::PureText);
    row("<MORE_DETAILED_CAPTION>", "Describe with a paragraph what is shown in the image.",
        TaskInput::None, "", AnswerType::PureText);
    row("<OD>", "Locate the objects with category name in the image.", TaskInput::None, "",
        AnswerType::DescriptionWithBboxes);
    row("<DENSE_REGION_CAPTION>", "Locate the objects in the image, with their descriptions.",
        TaskInput::None, "", AnswerType::DescriptionWithBboxes);
    row("<REGION_PROPOSAL>", "Locate the region proposals in the image.", TaskInput::None, "",
        AnswerType::Bboxes);
    row("<OCR>", "What is the text in the image?", TaskInput::None, "", AnswerType::PureText);
    row("<OCR_WITH_REGION>", "What is the text in the image, with regions?", TaskInput::None, "",
        AnswerType::Ocr);
    row("<CAPTION_TO_PHRASE_GROUNDING>", "Locate the phrases in the caption: {input}",
        TaskInput::Text, "caption", AnswerType::PhraseGrounding);
    row("<REFERRING_EXPRESSION_SEGMENTATION>", "Locate {input} in the image with mask",
        TaskInput::Text, "phrase", AnswerType::Polygons);
    row("<REGION_TO_SEGMENTATION>", "What is the polygon mask of region {input}", TaskInput::Region,
        "region", AnswerType::Polygons);
    row("<OPEN_VOCABULARY_DETECTION>", "Locate {input} in the image.", TaskInput::Text, "phrase",
        AnswerType::DescriptionWithBboxesOrPolygons);
    row("<REGION_TO_CATEGORY>", "What is the region {input}?", TaskInput::Region, "region",
        AnswerType::PureText);
    row("<REGION_TO_DESCRIPTION>", "What does the region {input} describe?", TaskInput::Region,
        "region", AnswerType::PureText);
    row("<REGION_TO_OCR>", "What text is in the region {input}?", TaskInput::Region, "region",
        AnswerType::PureText);
}

void TestTasks::table() {
    QFETCH(QString, token);
    QFETCH(QString, prompt);
    QFETCH(TaskInput, input);
    QFETCH(QString, inputLabel);
    QFETCH(AnswerType, answerType);
    const std::string tokenString = token.toStdString(); // GCC 14: no reference from a temporary
    const TaskInfo& info = taskInfo(tokenString);
    QCOMPARE(QString::fromStdString(info.token), token);
    QCOMPARE(QString::fromStdString(info.promptFormat), prompt);
    QCOMPARE(info.input, input);
    QCOMPARE(QString::fromStdString(info.inputLabel), inputLabel);
    QCOMPARE(info.answerType, answerType);
    QVERIFY(!info.name.empty());
}

void TestTasks::tableOrderAndNames() {
    const std::vector<TaskInfo>& tasks = allTasks();
    QCOMPARE(tasks.size(), size_t(15));
    QCOMPARE(tasks.front().token, std::string("<CAPTION>"));
    QCOMPARE(tasks[7].token, std::string("<OCR_WITH_REGION>"));
    QCOMPARE(tasks.back().token, std::string("<REGION_TO_OCR>"));
    QSet<QString> names;
    for (const TaskInfo& t : tasks)
        names.insert(QString::fromStdString(t.name));
    QCOMPARE(names.size(), 15); // menus need distinct names
}

void TestTasks::unknownTask() {
    const QString message = errorOf([] { taskInfo("<FOO>"); });
    QVERIFY2(message.contains("<FOO>"), qPrintable(message));
    for (const TaskInfo& t : allTasks())
        QVERIFY2(message.contains(QString::fromStdString(t.token)), qPrintable(message));
    QVERIFY(errorOf([] {
                buildPrompt({"<caption>", "", std::nullopt}, 10, 10);
            }).contains("known tasks"));
}

void TestTasks::prompts_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("text");
    QTest::addColumn<std::optional<Box>>("region");
    QTest::addColumn<QString>("expected");
    const std::optional<Box> none;
    const QString locs = "<loc_350><loc_520><loc_700><loc_999>";
    QTest::newRow("CAPTION") << "<CAPTION>"
                             << "" << none << "What does the image describe?";
    QTest::newRow("DETAILED_CAPTION")
        << "<DETAILED_CAPTION>"
        << "" << none << "Describe in detail what is shown in the image.";
    QTest::newRow("MORE_DETAILED_CAPTION")
        << "<MORE_DETAILED_CAPTION>"
        << "" << none << "Describe with a paragraph what is shown in the image.";
    QTest::newRow("OD") << "<OD>"
                        << "" << none << "Locate the objects with category name in the image.";
    QTest::newRow("DENSE_REGION_CAPTION")
        << "<DENSE_REGION_CAPTION>"
        << "" << none << "Locate the objects in the image, with their descriptions.";
    QTest::newRow("REGION_PROPOSAL") << "<REGION_PROPOSAL>"
                                     << "  " << none << "Locate the region proposals in the image.";
    QTest::newRow("OCR") << "<OCR>"
                         << "" << none << "What is the text in the image?";
    QTest::newRow("OCR_WITH_REGION")
        << "<OCR_WITH_REGION>"
        << "" << none << "What is the text in the image, with regions?";
    QTest::newRow("CAPTION_TO_PHRASE_GROUNDING")
        << "<CAPTION_TO_PHRASE_GROUNDING>"
        << "A green car parked." << none
        << "Locate the phrases in the caption: A green car parked.";
    QTest::newRow("REFERRING_EXPRESSION_SEGMENTATION")
        << "<REFERRING_EXPRESSION_SEGMENTATION>"
        << "the left dog" << none << "Locate the left dog in the image with mask";
    QTest::newRow("REGION_TO_SEGMENTATION box") << "<REGION_TO_SEGMENTATION>"
                                                << "" << std::optional<Box>(Box{350, 520, 700, 999})
                                                << "What is the polygon mask of region " + locs;
    QTest::newRow("OPEN_VOCABULARY_DETECTION") << "<OPEN_VOCABULARY_DETECTION>"
                                               << "a car" << none << "Locate a car in the image.";
    QTest::newRow("REGION_TO_CATEGORY locs")
        << "<REGION_TO_CATEGORY>" << locs << none << "What is the region " + locs + "?";
    QTest::newRow("REGION_TO_DESCRIPTION locs") << "<REGION_TO_DESCRIPTION>" << locs << none
                                                << "What does the region " + locs + " describe?";
    QTest::newRow("REGION_TO_OCR box") << "<REGION_TO_OCR>"
                                       << "" << std::optional<Box>(Box{350, 520, 700, 1000})
                                       << "What text is in the region " + locs + "?";
    // Input text is used verbatim, as the original processor does.
    QTest::newRow("text verbatim") << "<OPEN_VOCABULARY_DETECTION>"
                                   << " a car " << none << "Locate  a car  in the image.";
    QTest::newRow("locs trimmed") << "<REGION_TO_OCR>"
                                  << " " + locs + "\n"
                                  << none << "What text is in the region " + locs + "?";
}

void TestTasks::prompts() {
    QFETCH(QString, task);
    QFETCH(QString, text);
    QFETCH(std::optional<Box>, region);
    QFETCH(QString, expected);
    const TaskRequest request{task.toStdString(), text.toStdString(), region};
    QCOMPARE(QString::fromStdString(buildPrompt(request, 1000, 1000)), expected);
}

void TestTasks::referencePrompts() {
    QFile file(
        QStringLiteral(FLORENCE_TEST_DATA_DIR "/florence2-tiny-random/reference.json"));
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QJsonObject tasks = QJsonDocument::fromJson(file.readAll())["tasks"].toObject();
    QCOMPARE(tasks.size(), 5);
    // The inputs the fixture was made with, recovered from its prompts.
    const QMap<QString, QString> inputs = {
        {"<CAPTION_TO_PHRASE_GROUNDING>", "A wooden pier on a calm lake."},
        {"<REGION_TO_DESCRIPTION>", "<loc_350><loc_520><loc_700><loc_999>"}};
    for (const QString& task : tasks.keys()) {
        const TaskRequest request{task.toStdString(), inputs.value(task).toStdString(),
                                  std::nullopt};
        QCOMPARE(QString::fromStdString(buildPrompt(request, 1000, 667)),
                 tasks[task]["prompt"].toString());
    }
}

void TestTasks::refusals_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("text");
    QTest::addColumn<std::optional<Box>>("region");
    QTest::addColumn<QString>("message");
    const std::optional<Box> none;
    const std::optional<Box> box(Box{10, 10, 100, 100});
    QTest::newRow("grounding without caption")
        << "<CAPTION_TO_PHRASE_GROUNDING>"
        << "" << none << "<CAPTION_TO_PHRASE_GROUNDING> needs a caption: pass the text to ground";
    QTest::newRow("segmentation blank phrase") << "<REFERRING_EXPRESSION_SEGMENTATION>"
                                               << " \t" << none << "needs a phrase";
    QTest::newRow("detection without phrase") << "<OPEN_VOCABULARY_DETECTION>"
                                              << "" << none << "needs a phrase";
    QTest::newRow("region task without region")
        << "<REGION_TO_CATEGORY>"
        << "" << none
        << "<REGION_TO_CATEGORY> needs a region: pass a box in pixels or four <loc_N> tokens";
    QTest::newRow("region task with words") << "<REGION_TO_OCR>"
                                            << "the sign" << none << "is not four <loc_N> tokens";
    QTest::newRow("three locs") << "<REGION_TO_SEGMENTATION>"
                                << "<loc_1><loc_2><loc_3>" << none << "is not four <loc_N> tokens";
    QTest::newRow("five locs") << "<REGION_TO_SEGMENTATION>"
                               << "<loc_1><loc_2><loc_3><loc_4><loc_5>" << none
                               << "is not four <loc_N> tokens";
    QTest::newRow("loc out of range")
        << "<REGION_TO_DESCRIPTION>"
        << "<loc_1><loc_2><loc_3><loc_1000>" << none << "is not four <loc_N> tokens";
    QTest::newRow("locs with words")
        << "<REGION_TO_DESCRIPTION>"
        << "<loc_1><loc_2><loc_3><loc_4> please" << none << "is not four <loc_N> tokens";
    QTest::newRow("box and text") << "<REGION_TO_DESCRIPTION>"
                                  << "<loc_1><loc_2><loc_3><loc_4>" << box
                                  << "both a region and text";
    QTest::newRow("caption with text") << "<CAPTION>"
                                       << "a dog" << none << "<CAPTION> takes no text";
    QTest::newRow("od with text") << "<OD>"
                                  << "cars" << none << "<OD> takes no text";
    QTest::newRow("ocr with box") << "<OCR>"
                                  << "" << box << "<OCR> takes no region";
    QTest::newRow("phrase task with box") << "<OPEN_VOCABULARY_DETECTION>"
                                          << "a car" << box << "not a region";
    QTest::newRow("task token in text")
        << "<OPEN_VOCABULARY_DETECTION>"
        << "a car <OD>" << none << "must not contain the task token <OD>";
    QTest::newRow("own token in text")
        << "<CAPTION_TO_PHRASE_GROUNDING>"
        << "<CAPTION_TO_PHRASE_GROUNDING>a dog" << none
        << "must not contain the task token <CAPTION_TO_PHRASE_GROUNDING>";
    QTest::newRow("unknown task") << "<DESCRIBE>"
                                  << "" << none << "unknown task '<DESCRIBE>'";
    // 120 KB pasted into a task without text: the message quotes a line of it, not all of it.
    QTest::newRow("huge text is not echoed")
        << "<CAPTION>" << QString(120000, 'x') << none << "got \"xxxxxxxxxx";
}

void TestTasks::refusals() {
    QFETCH(QString, task);
    QFETCH(QString, text);
    QFETCH(std::optional<Box>, region);
    QFETCH(QString, message);
    const TaskRequest request{task.toStdString(), text.toStdString(), region};
    const QString error = errorOf([&] { buildPrompt(request, 640, 480); });
    QVERIFY2(error.contains(message), qPrintable(error));
    QVERIFY2(error.size() < 600, qPrintable(QString::number(error.size()))); // one short line
}

void TestTasks::binRoundTrip_data() {
    QTest::addColumn<int>("size");
    QTest::newRow("1") << 1;
    QTest::newRow("333") << 333;
    QTest::newRow("577") << 577;
    QTest::newRow("667") << 667;
    QTest::newRow("1000") << 1000;
    QTest::newRow("3024") << 3024;
    QTest::newRow("4032") << 4032;
}

void TestTasks::binRoundTrip() {
    QFETCH(int, size);
    for (int bin = 0; bin < 1000; ++bin)
        QCOMPARE(pixelToBin(binToPixel(bin, size), size), bin);
}

void TestTasks::pixelRoundTrip() {
    QFETCH(int, size);
    const double binWidth = size / 1000.0;
    // Whole pixels, pixel centres and the far edge: a bin's centre is within one bin width.
    for (int step = 0; step <= 2 * size; ++step) {
        const double x = step / 2.0;
        const int bin = pixelToBin(x, size);
        QVERIFY(bin >= 0 && bin <= 999);
        const double back = binToPixel(bin, size);
        QVERIFY2(std::abs(back - x) <= binWidth,
                 qPrintable(QStringLiteral("%1 -> %2 -> %3").arg(x).arg(bin).arg(back)));
        QVERIFY(back > 0 && back < size);
    }
}

void TestTasks::quantizationEdges() {
    QCOMPARE(pixelToBin(-5, 100), 0);
    QCOMPARE(pixelToBin(100, 100), 999);
    QCOMPARE(pixelToBin(1e9, 100), 999);
    QCOMPARE(pixelToBin(0.0999, 100), 0);
    QCOMPARE(pixelToBin(0.1, 100), 1);
    QCOMPARE(pixelToBin(0.5, 1), 500);
    QCOMPARE(pixelToBin(std::nan(""), 100), 0);
    QCOMPARE(pixelToBin(5, 0), 0);
    QCOMPARE(binToPixel(0, 1000), 0.5);
    QCOMPARE(binToPixel(999, 4032), 999.5 * 4.032);
}

void TestTasks::regionClipping_data() {
    QTest::addColumn<Box>("box");
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::addColumn<QString>("locs");
    QTest::newRow("header example")
        << Box{10, 20, 200, 300} << 1000 << 667 << "<loc_10><loc_29><loc_200><loc_449>";
    QTest::newRow("whole image") << Box{0, 0, 4032, 3024} << 4032 << 3024
                                 << "<loc_0><loc_0><loc_999><loc_999>";
    QTest::newRow("clipped") << Box{-50, -60, 2000, 1500} << 1000 << 1000
                             << "<loc_0><loc_0><loc_999><loc_999>";
    QTest::newRow("partly outside")
        << Box{-50, 500, 100, 5000} << 1000 << 1000 << "<loc_0><loc_500><loc_100><loc_999>";
    QTest::newRow("swapped corners")
        << Box{200, 300, 10, 20} << 1000 << 667 << "<loc_10><loc_29><loc_200><loc_449>";
    QTest::newRow("odd size") << Box{1, 1, 332, 576} << 333 << 577
                              << "<loc_3><loc_1><loc_996><loc_998>";
    QTest::newRow("one pixel image")
        << Box{0, 0, 1, 1} << 1 << 1 << "<loc_0><loc_0><loc_999><loc_999>";
}

void TestTasks::regionClipping() {
    QFETCH(Box, box);
    QFETCH(int, width);
    QFETCH(int, height);
    QFETCH(QString, locs);
    QCOMPARE(QString::fromStdString(regionToLocTokens(box, width, height)), locs);
    const TaskRequest request{"<REGION_TO_CATEGORY>", "", box};
    QCOMPARE(QString::fromStdString(buildPrompt(request, width, height)),
             "What is the region " + locs + "?");
}

void TestTasks::emptyRegionRefused_data() {
    QTest::addColumn<Box>("box");
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::addColumn<QString>("message");
    QTest::newRow("zero width") << Box{10, 10, 10, 50} << 100 << 100 << "empty";
    QTest::newRow("left of image") << Box{-50, 10, -1, 50} << 100 << 100 << "empty";
    QTest::newRow("below image") << Box{10, 150, 50, 200} << 100 << 100 << "empty";
    QTest::newRow("touching edge only") << Box{100, 10, 150, 50} << 100 << 100 << "empty";
    QTest::newRow("nan") << Box{std::nan(""), 10, 50, 50} << 100 << 100 << "undefined";
    QTest::newRow("no image") << Box{10, 10, 50, 50} << 0 << 100 << "0x100";
}

void TestTasks::emptyRegionRefused() {
    QFETCH(Box, box);
    QFETCH(int, width);
    QFETCH(int, height);
    QFETCH(QString, message);
    QVERIFY(errorOf([&] { regionToLocTokens(box, width, height); }).contains(message));
    const TaskRequest request{"<REGION_TO_SEGMENTATION>", "", box};
    const QString error = errorOf([&] { buildPrompt(request, width, height); });
    QVERIFY2(error.contains(message), qPrintable(error));
}

// A region typed by a user (--region of the CLI and the app): four numbers or a message that
// quotes what was typed.
void TestTasks::regionText_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("valid");
    QTest::addColumn<QVector<double>>("box");
    QTest::newRow("plain") << "40,60,300,420" << true << QVector<double>{40, 60, 300, 420};
    QTest::newRow("fractions, spaces")
        << " 1.5, 2 ,3e2,4 " << true << QVector<double>{1.5, 2, 300, 4};
    QTest::newRow("corners swapped")
        << "300,420,40,60" << true << QVector<double>{300, 420, 40, 60};
    QTest::newRow("three numbers") << "1,2,3" << false << QVector<double>{};
    QTest::newRow("five numbers") << "1,2,3,4,5" << false << QVector<double>{};
    QTest::newRow("trailing comma") << "1,2,3,4," << false << QVector<double>{};
    QTest::newRow("word") << "1,2,three,4" << false << QVector<double>{};
    QTest::newRow("unit") << "1px,2,3,4" << false << QVector<double>{};
    QTest::newRow("not a number") << "nan,2,3,4" << false << QVector<double>{};
    QTest::newRow("infinite") << "1,2,1e999,4" << false << QVector<double>{};
    QTest::newRow("empty") << "" << false << QVector<double>{};
}

void TestTasks::regionText() {
    QFETCH(QString, text);
    QFETCH(bool, valid);
    QFETCH(QVector<double>, box);
    if (!valid) {
        const QString error = errorOf([&] { parseRegion(text.toStdString()); });
        QVERIFY2(error.contains("four numbers") && error.contains("'" + text + "'"),
                 qPrintable(error));
        return;
    }
    const Box b = parseRegion(text.toStdString());
    QCOMPARE((QVector<double>{b.x1, b.y1, b.x2, b.y2}), box);
}

QTEST_GUILESS_MAIN(TestTasks)
#include "TestTasks.moc"
