// Answer parsing against the original Florence-2 post-processor's results
// (tests/data/postprocess-cases.json) and against the text a stream produces on the way.
#include <florence/answer.h>

#include "text/AnswerTokens.h" // internal: token spans

#include "engine/PostprocessCases.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QtTest>

#include <cmath>

using namespace florence;

namespace {

// Empty when a and b agree (numbers within tolerance); otherwise where they differ.
QString jsonDifference(const QJsonValue& a, const QJsonValue& b, double tolerance,
                       const QString& path = QStringLiteral("$")) {
    if (a.type() != b.type())
        return path + QStringLiteral(": type %1 vs %2").arg(a.type()).arg(b.type());
    if (a.isDouble()) {
        if (std::abs(a.toDouble() - b.toDouble()) > tolerance)
            return path + QStringLiteral(": %1 vs %2")
                              .arg(a.toDouble(), 0, 'g', 17)
                              .arg(b.toDouble(), 0, 'g', 17);
        return {};
    }
    if (a.isArray()) {
        const QJsonArray x = a.toArray(), y = b.toArray();
        if (x.size() != y.size())
            return path + QStringLiteral(": %1 vs %2 elements").arg(x.size()).arg(y.size());
        for (qsizetype i = 0; i < x.size(); ++i) {
            const QString d =
                jsonDifference(x[i], y[i], tolerance, path + QStringLiteral("[%1]").arg(i));
            if (!d.isEmpty())
                return d;
        }
        return {};
    }
    if (a.isObject()) {
        const QJsonObject x = a.toObject(), y = b.toObject();
        if (x.keys() != y.keys())
            return path +
                   QStringLiteral(": keys %1 vs %2").arg(x.keys().join(','), y.keys().join(','));
        for (const QString& key : x.keys()) {
            const QString d = jsonDifference(x[key], y[key], tolerance, path + '.' + key);
            if (!d.isEmpty())
                return d;
        }
        return {};
    }
    if (a != b)
        return path + QStringLiteral(": \"%1\" vs \"%2\"").arg(a.toString(), b.toString());
    return {};
}

// Splits generated text the way the tokenizer would for these purposes: every <…> special
// token on its own, the text between as one piece.
std::vector<std::string> tokenPieces(const std::string& text) {
    std::vector<std::string> pieces;
    size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '<') {
            const size_t close = text.find('>', i);
            const size_t end = close == std::string::npos ? text.size() : close + 1;
            pieces.push_back(text.substr(i, end - i));
            i = end;
        } else {
            const size_t end = std::min(text.find('<', i), text.size());
            pieces.push_back(text.substr(i, end - i));
            i = end;
        }
    }
    return pieces;
}

bool isBoxType(AnswerType type) {
    return type == AnswerType::DescriptionWithBboxes || type == AnswerType::Bboxes ||
           type == AnswerType::PhraseGrounding || type == AnswerType::Ocr;
}

QJsonObject hf(const std::string& task, const std::string& text, int w, int h) {
    return toHuggingFaceJson(parseAnswer(task, text, w, h));
}

} // namespace

class TestAnswerParser : public QObject {
    Q_OBJECT

private slots:
    void fixtureIsComplete();
    void fixtureCases_data();
    void fixtureCases();
    void fixtureCasesFloat32Exact_data() { fixtureCases_data(); }
    void fixtureCasesFloat32Exact();
    void fixturePrefixesNeverCrash_data() { fixtureCases_data(); }
    void fixturePrefixesNeverCrash();
    void boxAppearsOnFourthLoc();
    void tokenSpans();
    void scores();
    void malformed_data();
    void malformed();
    void longAnswers();
    void phraseGroundingBlackList_data();
    void phraseGroundingBlackList();
    void labels_data();
    void labels();
    void pureText_data();
    void pureText();
    void polygons();
    void openVocabularyWithPolygons();
    void pixelsInItems();
    void nativeJson();
    void cocoJson();
};

void TestAnswerParser::fixtureIsComplete() {
    // The data-driven tests below would silently run zero rows if the fixture went missing.
    QCOMPARE(loadPostprocessCases().size(), 16);
}

void TestAnswerParser::fixtureCases_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::addColumn<QJsonValue>("expected");
    const QJsonArray cases = loadPostprocessCases();
    for (qsizetype i = 0; i < cases.size(); ++i) {
        const QJsonObject c = cases[i].toObject();
        const QString name = QStringLiteral("%1 %2").arg(i).arg(c["task"].toString());
        QTest::newRow(qPrintable(name))
            << c["task"].toString() << c["text"].toString() << c["image_size"][0].toInt()
            << c["image_size"][1].toInt() << c["expected"];
    }
}

void TestAnswerParser::fixtureCases() {
    QFETCH(QString, task);
    QFETCH(QString, text);
    QFETCH(int, width);
    QFETCH(int, height);
    QFETCH(QJsonValue, expected);
    const QJsonObject got = hf(task.toStdString(), text.toStdString(), width, height);
    const QJsonObject want{{task, expected}};
    const QString difference = jsonDifference(got, want, 1e-3);
    QVERIFY2(difference.isEmpty(), qPrintable(difference + "\n got: " +
                                              QJsonDocument(got).toJson(QJsonDocument::Compact)));
}

void TestAnswerParser::fixtureCasesFloat32Exact() {
    // The coordinates are computed in float32 as the original does, so they match to the bit.
    QFETCH(QString, task);
    QFETCH(QString, text);
    QFETCH(int, width);
    QFETCH(int, height);
    QFETCH(QJsonValue, expected);
    const QJsonObject got = hf(task.toStdString(), text.toStdString(), width, height);
    const QString difference = jsonDifference(got, QJsonObject{{task, expected}}, 0.0);
    QVERIFY2(difference.isEmpty(), qPrintable(difference));
}

void TestAnswerParser::fixturePrefixesNeverCrash() {
    QFETCH(QString, task);
    QFETCH(QString, text);
    QFETCH(int, width);
    QFETCH(int, height);
    const std::string full = text.toStdString();
    const std::string t = task.toStdString();
    size_t previousItems = 0;
    for (size_t n = 0; n <= full.size(); ++n) {
        const ParsedAnswer a = parseAnswer(t, full.substr(0, n), width, height);
        for (const AnswerItem& item : a.items) {
            QVERIFY(item.charBegin >= 0);
            QVERIFY(item.charEnd > item.charBegin);
            QVERIFY(size_t(item.charEnd) <= n);
        }
        // Boxes and quads, once complete, stay while more text arrives.
        if (isBoxType(a.type)) {
            QVERIFY2(a.items.size() >= previousItems, qPrintable(QString::number(n)));
            previousItems = a.items.size();
        }
    }
}

void TestAnswerParser::boxAppearsOnFourthLoc() {
    const std::string text = loadPostprocessCases()[3].toObject()["text"].toString().toStdString();
    QVERIFY(text.find("wheel") != std::string::npos); // the <OD> case with two wheel boxes
    const std::vector<std::string> pieces = tokenPieces(text);
    std::string stream;
    int locsInRun = 0, expectedBoxes = 0;
    std::string label, lastBoxLabel;
    for (const std::string& piece : pieces) {
        stream += piece;
        if (piece.rfind("<loc_", 0) == 0) {
            if (++locsInRun % 4 == 0) {
                ++expectedBoxes;
                lastBoxLabel = label;
            }
        } else if (piece[0] != '<') {
            locsInRun = 0;
            label = piece;
        }
        const ParsedAnswer a = parseAnswer("<OD>", stream, 1000, 667);
        QCOMPARE(int(a.items.size()), expectedBoxes);
        if (expectedBoxes > 0)
            QCOMPARE(a.items.back().label, lastBoxLabel);
    }
    QCOMPARE(expectedBoxes, 4);
}

void TestAnswerParser::tokenSpans() {
    const std::string text = loadPostprocessCases()[3].toObject()["text"].toString().toStdString();
    const std::vector<std::string> pieces = tokenPieces(text);
    // </s> <s> car l l l l door l l l l wheel l l l l l l l l </s>
    QCOMPARE(pieces.size(), size_t(22));
    const ParsedAnswer a = parseAnswerTokens("<OD>", pieces, 1000, 667);
    QCOMPARE(a.items.size(), size_t(4));
    QCOMPARE(a.items[0].tokenBegin, 2);
    QCOMPARE(a.items[0].tokenEnd, 7);
    QCOMPARE(a.items[1].tokenBegin, 7);
    QCOMPARE(a.items[1].tokenEnd, 12);
    QCOMPARE(a.items[2].tokenBegin, 12);
    QCOMPARE(a.items[2].tokenEnd, 17);
    QCOMPARE(a.items[3].tokenBegin, 12);
    QCOMPARE(a.items[3].tokenEnd, 21);
    QCOMPARE(text.substr(size_t(a.items[0].charBegin),
                         size_t(a.items[0].charEnd - a.items[0].charBegin)),
             std::string("car<loc_52><loc_333><loc_932><loc_774>"));
    // Parsed from plain text the token span is unknown.
    QCOMPARE(parseAnswer("<OD>", text, 1000, 667).items[0].tokenBegin, -1);
}

void TestAnswerParser::scores() {
    // An item's score is the mean probability of its own tokens: its label and its own four
    // location tokens (the second wheel does not inherit the first wheel's); the answer's is
    // the mean over its words, every token but <s>, </s>, <pad> and <loc_N>.
    const std::string text = loadPostprocessCases()[3].toObject()["text"].toString().toStdString();
    const std::vector<std::string> pieces = tokenPieces(text);
    QCOMPARE(pieces.size(), size_t(22));
    // One probability per token after the decoder start (piece 0), as Result::tokenLogprobs.
    const std::vector<double> probs = {0.01,                     // <s>
                                       0.5,  1,   1,   1,   1,   // car + box
                                       0.2,  0.6, 0.6, 0.6, 0.6, // door + box
                                       0.3,  0.9, 0.9, 0.9, 0.9, // wheel + box
                                       0.4,  0.4, 0.4, 0.4,      // second wheel box
                                       0.01};                    // </s>
    std::vector<float> logprobs;
    for (double p : probs)
        logprobs.push_back(float(std::log(p)));
    const ParsedAnswer a = parseAnswerTokens("<OD>", pieces, 1000, 667, logprobs);
    QCOMPARE(a.items.size(), size_t(4));
    const double expected[] = {(0.5 + 4) / 5, (0.2 + 2.4) / 5, (0.3 + 3.6) / 5, (0.3 + 1.6) / 5};
    for (size_t i = 0; i < 4; ++i)
        QVERIFY2(std::abs(a.items[i].score - expected[i]) < 1e-6,
                 qPrintable(QStringLiteral("item %1: %2, expected %3")
                                .arg(i)
                                .arg(a.items[i].score)
                                .arg(expected[i])));
    // The answer: its words (car, door, wheel), without special or location tokens.
    QVERIFY(std::abs(a.score - 1.0 / 3) < 1e-6);

    // The app's JSON and COCO carry the scores; the Hugging Face form stays as the original's.
    const QJsonObject native = toNativeJson(a);
    QVERIFY(std::abs(native["score"].toDouble() - 1.0 / 3) < 1e-6);
    QVERIFY(std::abs(native["items"].toArray()[1].toObject()["score"].toDouble() - expected[1]) <
            1e-6);
    const QJsonArray annotations = toCocoJson(a, "x.png", 1000, 667)["annotations"].toArray();
    QVERIFY(std::abs(annotations[3].toObject()["score"].toDouble() - expected[3]) < 1e-6);
    const QJsonObject hf = toHuggingFaceJson(a)["<OD>"].toObject();
    QCOMPARE(hf.keys(), QStringList({"bboxes", "labels"}));

    // Without log-probabilities nothing is scored, and nothing claims a score.
    const ParsedAnswer unscored = parseAnswerTokens("<OD>", pieces, 1000, 667);
    QCOMPARE(unscored.score, -1.0);
    QCOMPARE(unscored.items[0].score, -1.0);
    QVERIFY(!toNativeJson(unscored).contains("score"));
    QVERIFY(!toNativeJson(unscored)["items"].toArray()[0].toObject().contains("score"));

    // A caption is scored as a whole.
    const ParsedAnswer caption =
        parseAnswerTokens("<CAPTION>", {"</s>", "<s>", "A", " car", "</s>"}, 10, 10,
                          {0.0f, float(std::log(0.5)), float(std::log(0.25)), 0.0f});
    QVERIFY(std::abs(caption.score - 0.375) < 1e-6);
    // An empty answer is as sure as its </s>.
    const ParsedAnswer empty = parseAnswerTokens("<OCR>", {"</s>", "<s>", "</s>"}, 10, 10,
                                                 {0.0f, float(std::log(0.8))});
    QVERIFY(std::abs(empty.score - 0.9) < 1e-6);
}

void TestAnswerParser::malformed_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("items");
    QTest::addColumn<QString>("firstLabel");

    const QStringList tasks = {"<OD>",
                               "<REGION_PROPOSAL>",
                               "<OCR_WITH_REGION>",
                               "<CAPTION_TO_PHRASE_GROUNDING>",
                               "<REGION_TO_SEGMENTATION>",
                               "<OPEN_VOCABULARY_DETECTION>",
                               "<CAPTION>"};
    for (const QString& task : tasks) {
        const QByteArray t = task.toUtf8();
        QTest::newRow(t + " empty") << task << QByteArray() << 0 << QString();
        QTest::newRow(t + " <") << task << QByteArray("<") << 0 << QString();
        QTest::newRow(t + " cut token") << task << QByteArray("<s>car<loc_1") << 0 << QString();
        QTest::newRow(t + " only end") << task << QByteArray("</s></s><pad>") << 0 << QString();
        QTest::newRow(t + " stray closers")
            << task << QByteArray("</poly><sep></od>>>") << 0 << QString();
    }
    QTest::newRow("three locs") << "<OD>" << QByteArray("car<loc_1><loc_2><loc_3>") << 0
                                << QString();
    QTest::newRow("non-numeric loc")
        << "<OD>" << QByteArray("car<loc_1><loc_2><loc_3><loc_x>") << 0 << QString();
    QTest::newRow("empty loc") << "<OD>" << QByteArray("car<loc_><loc_2><loc_3><loc_4>") << 0
                               << QString();
    QTest::newRow("fifth loc ignored")
        << "<OD>" << QByteArray("car<loc_1><loc_2><loc_3><loc_4><loc_5>") << 1 << "car";
    QTest::newRow("second group incomplete")
        << "<OD>" << QByteArray("car<loc_1><loc_2><loc_3><loc_4>bus<loc_1><loc_2>") << 1 << "car";
    // Without a label the original's [^<]+ starts inside the first location token.
    QTest::newRow("od without label")
        << "<OD>" << QByteArray("<s><loc_1><loc_2><loc_3><loc_4><loc_5></s>") << 1 << "loc_1>";
    QTest::newRow("od four locs without label")
        << "<OD>" << QByteArray("<s><loc_1><loc_2><loc_3><loc_4></s>") << 0 << QString();
    QTest::newRow("stray special token before label")
        << "<OD>" << QByteArray("<s><od>car<loc_1><loc_2><loc_3><loc_4></od></s>") << 1 << "od>car";
    QTest::newRow("huge bin") << "<OD>"
                              << QByteArray("car<loc_99999999999999999999><loc_2><loc_3><loc_4>")
                              << 1 << "car";
    QTest::newRow("invalid utf-8 label")
        << "<OD>" << QByteArray("\xff\xfe<loc_1><loc_2><loc_3><loc_4>") << 1 << "";
    QTest::newRow("nul byte") << "<OD>" << QByteArray("c\0r<loc_1><loc_2><loc_3><loc_4>", 31) << 1
                              << QString::fromLatin1("c\0r", 3);
    QTest::newRow("ocr seven locs")
        << "<OCR_WITH_REGION>" << QByteArray("Hi<loc_1><loc_2><loc_3><loc_4><loc_5><loc_6><loc_7>")
        << 0 << QString();
    QTest::newRow("poly unclosed")
        << "<REGION_TO_SEGMENTATION>" << QByteArray("<poly><loc_1><loc_2><loc_3><loc_4><loc_5>")
        << 1 << "";
    QTest::newRow("poly one point") << "<REGION_TO_SEGMENTATION>"
                                    << QByteArray("<poly><loc_1><loc_2><loc_3></poly>") << 1 << "";
    QTest::newRow("poly closers only")
        << "<REGION_TO_SEGMENTATION>" << QByteArray("<poly></poly><poly></poly>") << 0 << "";
    QTest::newRow("sep only") << "<REGION_TO_SEGMENTATION>"
                              << QByteArray("<sep><sep><sep><sep><sep>") << 0 << "";
}

void TestAnswerParser::malformed() {
    QFETCH(QString, task);
    QFETCH(QByteArray, text);
    QFETCH(int, items);
    QFETCH(QString, firstLabel);
    const ParsedAnswer a = parseAnswer(task.toStdString(), text.toStdString(), 640, 480);
    QCOMPARE(int(a.items.size()), items);
    if (items > 0)
        QCOMPARE(QString::fromLatin1(a.items[0].label.data(), qsizetype(a.items[0].label.size())),
                 firstLabel);
    for (const AnswerItem& item : a.items) {
        QVERIFY(std::isfinite(item.box.x1) && std::isfinite(item.box.y2));
        for (const auto& polygon : item.polygons)
            QVERIFY(polygon.size() % 2 == 0);
    }
    // Every JSON form must be producible from whatever was parsed.
    QVERIFY(!toHuggingFaceJson(a).isEmpty());
    QVERIFY(!toNativeJson(a).isEmpty());
    QVERIFY(toCocoJson(a, "x.png", 640, 480)["images"].toArray().size() == 1);
}

void TestAnswerParser::longAnswers() {
    // Far longer than any real answer (1024 tokens at most): the regular expressions must not
    // give up or overflow on long runs.
    std::string locs;
    for (int i = 0; i < 4000; ++i)
        locs += "<loc_" + std::to_string(i % 1000) + ">";
    QCOMPARE(parseAnswer("<REGION_PROPOSAL>", "<s>" + locs + "</s>", 100, 100).items.size(),
             size_t(1000));
    QCOMPARE(parseAnswer("<OD>", "<s>car" + locs + "</s>", 100, 100).items.size(), size_t(1000));
    const ParsedAnswer seg =
        parseAnswer("<REGION_TO_SEGMENTATION>", "<poly>" + locs + "</poly>", 100, 100);
    QCOMPARE(seg.items.size(), size_t(1));
    QCOMPARE(seg.items[0].polygons[0].size(), size_t(4000));
    const std::string label(200000, 'x');
    const ParsedAnswer longLabel =
        parseAnswer("<OD>", label + "<loc_1><loc_2><loc_3><loc_4>", 100, 100);
    QCOMPARE(longLabel.items.size(), size_t(1));
    QCOMPARE(longLabel.items[0].label.size(), label.size());
}

void TestAnswerParser::phraseGroundingBlackList_data() {
    QTest::addColumn<QString>("phrase");
    QTest::addColumn<bool>("kept");
    QTest::newRow("it") << "it" << false;
    QTest::newRow("I") << "I" << false;
    QTest::newRow("them") << "them" << false;
    QTest::newRow("something") << "something" << false;
    QTest::newRow("each other") << "each other" << false;
    QTest::newRow("the image") << "the image" << false;
    QTest::newRow("images") << "images" << false;
    QTest::newRow("a set") << "a set" << false;
    QTest::newRow("padded a") << "  a " << false;
    // The original compares case-sensitively.
    QTest::newRow("It") << "It" << true;
    QTest::newRow("a dog") << "a dog" << true;
    QTest::newRow("image of a cat") << "image of a cat" << true;
}

void TestAnswerParser::phraseGroundingBlackList() {
    QFETCH(QString, phrase);
    QFETCH(bool, kept);
    const std::string text = "</s><s>A man<loc_1><loc_2><loc_3><loc_4>" + phrase.toStdString() +
                             "<loc_5><loc_6><loc_7><loc_8></s>";
    const ParsedAnswer a = parseAnswer("<CAPTION_TO_PHRASE_GROUNDING>", text, 1000, 1000);
    QCOMPARE(a.items.size(), size_t(kept ? 2 : 1));
    QCOMPARE(a.items[0].label, std::string("A man"));
    if (kept)
        QCOMPARE(QString::fromStdString(a.items[1].label), phrase.trimmed());
    // Only grounding filters: the same text as <OD> keeps every phrase.
    QCOMPARE(parseAnswer("<OD>", text, 1000, 1000).items.size(), size_t(2));
}

void TestAnswerParser::labels_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("labels");
    const QString box = "<loc_1><loc_2><loc_3><loc_4>";
    const QString quad = box + box;
    QTest::newRow("digits and punctuation")
        << "<OD>"
        << "<s>2 cups, 1 mug!" + box + "</s>" << QStringList{"2 cups, 1 mug!"};
    QTest::newRow("trimmed") << "<OD>"
                             << "<s>  car \t" + box + "</s>" << QStringList{"car"};
    QTest::newRow("unicode space trimmed")
        << "<OD>" << QString::fromUtf8("<s>\u00a0car\u3000") + box + "</s>" << QStringList{"car"};
    QTest::newRow("non-ascii dropped for boxes")
        << "<OD>" << QString::fromUtf8("<s>caf\u00e9 au lait") + box + "</s>"
        << QStringList{"caf au lait"};
    QTest::newRow("non-ascii dropped for grounding")
        << "<CAPTION_TO_PHRASE_GROUNDING>" << QString::fromUtf8("<s>na\u00efve dog") + box + "</s>"
        << QStringList{"nave dog"};
    // '.' stops at a line break in the original's label pattern, so the phrase is lost.
    QTest::newRow("line break drops phrase")
        << "<OD>"
        << "<s>red\ncar" + box + "bus" + box + "</s>" << QStringList{"bus"};
    QTest::newRow("leading line break ok") << "<OD>"
                                           << "<s>\ncar" + box + "</s>" << QStringList{"car"};
    QTest::newRow("pad removed inside label") << "<OD>"
                                              << "<s>ca<pad>r" + box + "</s>" << QStringList{"car"};
    QTest::newRow("ocr keeps raw text")
        << "<OCR_WITH_REGION>" << QString::fromUtf8("</s><s> Caf\u00e9 ") + quad + "</s>"
        << QStringList{QString::fromUtf8("</s> Caf\u00e9 ")};
    QTest::newRow("ocr lines") << "<OCR_WITH_REGION>"
                               << "<s>A" + quad + "B" + quad + "C" + box + "</s>"
                               << QStringList{"A", "B"};
    QTest::newRow("polygon keeps non-ascii")
        << "<OPEN_VOCABULARY_DETECTION>"
        << QString::fromUtf8("<s>caf\u00e9<poly>") + quad + "</poly></s>"
        << QStringList{QString::fromUtf8("caf\u00e9")};
    QTest::newRow("proposal labels empty") << "<REGION_PROPOSAL>"
                                           << "<s>car" + box + "</s>" << QStringList{""};
}

void TestAnswerParser::labels() {
    QFETCH(QString, task);
    QFETCH(QString, text);
    QFETCH(QStringList, labels);
    const ParsedAnswer a = parseAnswer(task.toStdString(), text.toStdString(), 100, 100);
    QStringList got;
    for (const AnswerItem& item : a.items)
        got << QString::fromStdString(item.label);
    QCOMPARE(got, labels);
}

void TestAnswerParser::pureText_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected");
    // Only <s> and </s> go; nothing is trimmed and other special tokens stay, as in the original.
    QTest::newRow("spaces kept") << "<CAPTION>"
                                 << "</s><s> a cat </s>"
                                 << " a cat ";
    QTest::newRow("pad kept") << "<OCR>"
                              << "<s>A<pad>B</s><pad>"
                              << "A<pad>B<pad>";
    QTest::newRow("locs kept") << "<REGION_TO_CATEGORY>"
                               << "<s>car<loc_1></s>"
                               << "car<loc_1>";
    QTest::newRow("cut mid-token") << "<CAPTION>"
                                   << "</s><s>A dog</"
                                   << "A dog</";
    QTest::newRow("empty") << "<MORE_DETAILED_CAPTION>"
                           << "</s><s></s>"
                           << "";
    QTest::newRow("unknown task is pure text") << "<FOO>"
                                               << "<s>car<loc_1><loc_2><loc_3><loc_4>"
                                               << "car<loc_1><loc_2><loc_3><loc_4>";
}

void TestAnswerParser::pureText() {
    QFETCH(QString, task);
    QFETCH(QString, text);
    QFETCH(QString, expected);
    const ParsedAnswer a = parseAnswer(task.toStdString(), text.toStdString(), 10, 10);
    QCOMPARE(a.type, AnswerType::PureText);
    QVERIFY(a.items.empty());
    QCOMPARE(QString::fromStdString(a.text), expected);
    QCOMPARE(toHuggingFaceJson(a), (QJsonObject{{task, expected}}));
}

void TestAnswerParser::polygons() {
    // Two objects (one <poly> each), the first with two polygons, the second with an unpaired
    // last coordinate; a polygon of one point is kept, as the original keeps it.
    const std::string text = "</s><s><poly><loc_0><loc_0><loc_10><loc_0><loc_10><loc_10><sep>"
                             "<loc_20><loc_20><loc_30><loc_20><loc_30><loc_30></poly>"
                             "<poly><loc_500><loc_500><loc_600><loc_500><loc_600><loc_600>"
                             "<loc_7></poly></s>";
    const ParsedAnswer a = parseAnswer("<REFERRING_EXPRESSION_SEGMENTATION>", text, 1000, 2000);
    QCOMPARE(a.items.size(), size_t(2));
    QCOMPARE(a.items[0].polygons.size(), size_t(2));
    QCOMPARE(a.items[0].polygons[1], (std::vector<double>{20.5, 41, 30.5, 41, 30.5, 61}));
    QCOMPARE(a.items[1].polygons.size(), size_t(1));
    QCOMPARE(a.items[1].polygons[0].size(), size_t(6));
    QCOMPARE(a.items[1].bins[0].back(), 600);
    const QJsonObject json = toHuggingFaceJson(a)["<REFERRING_EXPRESSION_SEGMENTATION>"].toObject();
    QCOMPARE(json["labels"].toArray(), (QJsonArray{"", ""}));
    QCOMPARE(json["polygons"].toArray().size(), 2);

    const ParsedAnswer onePoint =
        parseAnswer("<REGION_TO_SEGMENTATION>", "<poly><loc_1><loc_2><loc_3></poly>", 1000, 1000);
    QCOMPARE(onePoint.items.at(0).polygons.at(0), (std::vector<double>{1.5, 2.5}));
}

void TestAnswerParser::openVocabularyWithPolygons() {
    const std::string text = "<s>a car<poly><loc_10><loc_10><loc_20><loc_10><loc_20><loc_20>"
                             "</poly><poly><loc_30><loc_30><loc_40><loc_30><loc_40><loc_40>"
                             "</poly></s>";
    const QJsonObject json = toHuggingFaceJson(parseAnswer(
        "<OPEN_VOCABULARY_DETECTION>", text, 1000, 1000))["<OPEN_VOCABULARY_DETECTION>"]
                                 .toObject();
    QCOMPARE(json["bboxes"].toArray().size(), 0);
    QCOMPARE(json["bboxes_labels"].toArray().size(), 0);
    QCOMPARE(json["polygons_labels"].toArray(), (QJsonArray{"a car", "a car"}));
    QCOMPARE(json["polygons"][1][0].toArray(), (QJsonArray{30.5, 30.5, 40.5, 30.5, 40.5, 40.5}));
}

void TestAnswerParser::pixelsInItems() {
    // Items carry exact (bin + 0.5) * size / 1000 pixels; only the HF form is float32.
    const ParsedAnswer a =
        parseAnswer("<OD>", "<s>car<loc_52><loc_333><loc_932><loc_774></s>", 1000, 667);
    QCOMPARE(a.items.size(), size_t(1));
    QCOMPARE(a.items[0].box.y1, 333.5 * 0.667);
    QCOMPARE(a.items[0].box.x2, 932.5);
    QCOMPARE(a.items[0].bins[0], (std::vector<int>{52, 333, 932, 774}));
    const ParsedAnswer ocr =
        parseAnswer("<OCR_WITH_REGION>",
                    "<s>A<loc_0><loc_1><loc_2><loc_3><loc_4><loc_5><loc_6><loc_7></s>", 2000, 1000);
    QCOMPARE(ocr.items[0].quad, (std::vector<double>{1, 1.5, 5, 3.5, 9, 5.5, 13, 7.5}));
}

void TestAnswerParser::nativeJson() {
    const QJsonArray cases = loadPostprocessCases();
    const QJsonObject c = cases[3].toObject();
    const ParsedAnswer a =
        parseAnswerTokens("<OD>", tokenPieces(c["text"].toString().toStdString()), 1000, 667);
    const QJsonObject json = toNativeJson(a);
    QCOMPARE(json["task"].toString(), QStringLiteral("<OD>"));
    QCOMPARE(json["answer_type"].toString(), QStringLiteral("description_with_bboxes"));
    QCOMPARE(json["image_width"].toInt(), 1000);
    QCOMPARE(json["text"].toString().left(4), QStringLiteral("car<"));
    const QJsonArray items = json["items"].toArray();
    QCOMPARE(items.size(), 4);
    const QJsonObject first = items[0].toObject();
    QCOMPARE(first["kind"].toString(), QStringLiteral("box"));
    QCOMPARE(first["label"].toString(), QStringLiteral("car"));
    QCOMPARE(first["box"][0].toDouble(), 52.5);
    QCOMPARE(first["bins"][0].toArray(), (QJsonArray{52, 333, 932, 774}));
    QCOMPARE(first["token_begin"].toInt(), 2);
    QCOMPARE(first["token_end"].toInt(), 7);

    const QJsonObject ocr = toNativeJson(parseAnswer(
        "<OCR_WITH_REGION>", cases[6].toObject()["text"].toString().toStdString(), 1024, 768));
    QCOMPARE(ocr["items"][1]["kind"].toString(), QStringLiteral("quad"));
    QCOMPARE(ocr["items"][1]["quad"].toArray().size(), 8);
    const QJsonObject seg =
        toNativeJson(parseAnswer("<REGION_TO_SEGMENTATION>",
                                 cases[9].toObject()["text"].toString().toStdString(), 256, 256));
    QCOMPARE(seg["items"][0]["kind"].toString(), QStringLiteral("polygon"));
    QCOMPARE(seg["items"][0]["polygons"].toArray().size(), 2);
}

void TestAnswerParser::cocoJson() {
    const QJsonObject c = loadPostprocessCases()[3].toObject();
    const ParsedAnswer a = parseAnswer("<OD>", c["text"].toString().toStdString(), 1000, 667);
    const QJsonObject coco = toCocoJson(a, "pier.png", 1000, 667);
    const QJsonObject image = coco["images"][0].toObject();
    QCOMPARE(image["file_name"].toString(), QStringLiteral("pier.png"));
    QCOMPARE(image["height"].toInt(), 667);
    const QJsonArray categories = coco["categories"].toArray();
    QCOMPARE(categories.size(), 3); // car, door, wheel: the two wheels share one
    QCOMPARE(categories[2]["name"].toString(), QStringLiteral("wheel"));
    const QJsonArray annotations = coco["annotations"].toArray();
    QCOMPARE(annotations.size(), 4);
    QCOMPARE(annotations[3]["category_id"].toInt(), 3);
    QCOMPARE(annotations[3]["image_id"].toInt(), 1);
    const QJsonArray bbox = annotations[0]["bbox"].toArray();
    QCOMPARE(bbox[0].toDouble(), 52.5);
    QCOMPARE(bbox[2].toDouble(), 932.5 - 52.5);
    // Rounded to 0.01 px (294.147 px high, 258849.36 px²), without float noise.
    QCOMPARE(bbox[3].toDouble(), 294.15);
    QCOMPARE(annotations[0]["area"].toDouble(), 258849.36);

    const QJsonObject quads = toCocoJson(
        parseAnswer("<OCR_WITH_REGION>",
                    loadPostprocessCases()[6].toObject()["text"].toString().toStdString(), 1024,
                    768),
        "page.png", 1024, 768);
    QCOMPARE(quads["annotations"][0]["segmentation"][0].toArray().size(), 8);
    QCOMPARE(quads["annotations"][1]["text"].toString(), QStringLiteral("World 2024"));

    const QJsonObject text =
        toCocoJson(parseAnswer("<CAPTION>", "<s>A pier</s>", 10, 10), "a", 10, 10);
    QCOMPARE(text["annotations"].toArray().size(), 0);
    QCOMPARE(text["categories"].toArray().size(), 0);
}

QTEST_GUILESS_MAIN(TestAnswerParser)
#include "TestAnswerParser.moc"
