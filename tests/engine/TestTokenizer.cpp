// Tests of florence::Tokenizer against the published Florence-2 tokenizer files and the
// reference outputs of the original Python code (shared/fixtures/florence2-tiny-random).
#include <florence/tokenizer.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QTemporaryDir>
#include <QtTest>

#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using florence::Tokenizer;
using Ids = std::vector<int64_t>;

Q_DECLARE_METATYPE(std::string)
Q_DECLARE_METATYPE(Ids)

namespace {

std::string vocabPath() {
    return FLORENCE_TOKENIZER_DIR "/vocab.json";
}
std::string mergesPath() {
    return FLORENCE_TOKENIZER_DIR "/merges.txt";
}

// True when `s` is well-formed UTF-8 that contains no U+FFFD, i.e. nothing was cut or replaced.
bool isCleanUtf8(const std::string& s) {
    const QString text = QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
    return text.toUtf8() == QByteArray(s.data(), static_cast<qsizetype>(s.size())) &&
           !text.contains(QChar(QChar::ReplacementCharacter));
}

QJsonObject referenceTasks() {
    QFile file(QStringLiteral(FLORENCE_TEST_DATA_DIR "/florence2-tiny-random/reference.json"));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll())
        .object()
        .value(QStringLiteral("tasks"))
        .toObject();
}

Ids toIds(const QJsonValue& value) {
    Ids ids;
    for (const QJsonValue& v : value.toArray())
        ids.push_back(v.toInteger());
    return ids;
}

void writeFile(const QString& path, const QByteArray& content) {
    QFile file(path);
    QVERIFY2(file.open(QIODevice::WriteOnly), qPrintable(path));
    QCOMPARE(file.write(content), content.size());
}

} // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();

    void loadFromFiles();
    void vocabularyLayout();
    void fixturePromptIds_data();
    void fixturePromptIds();
    void fixtureDecode_data();
    void fixtureDecode();
    void knownIds_data();
    void knownIds();
    void roundTrip_data();
    void roundTrip();
    void streamDecoder_data();
    void streamDecoder();
    void streamFlushReplacesIncompleteCharacter();
    void badFiles_data();
    void badFiles();
    void unknownIdsAreSkipped();
    void invalidUtf8InputSurvives();
    void copiesShareTables();
    void concurrentEncode();
    void encodeLongInputs();

private:
    std::optional<Tokenizer> m_tok;
};

void TestTokenizer::initTestCase() {
    try {
        m_tok = Tokenizer::fromFiles(vocabPath(), mergesPath());
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
}

// A model package is opened on the UI's request; loading the tokenizer must not be noticeable.
void TestTokenizer::loadFromFiles() {
    QElapsedTimer timer;
    timer.start();
    const Tokenizer tok = Tokenizer::fromFiles(vocabPath(), mergesPath());
    const qint64 ms = timer.elapsed();
    // Printed, not asserted: no test depends on the machine's speed (well under 200 ms when
    // quiet); the README's figures come from bench.
    qInfo("tokenizer load: %lld ms", static_cast<long long>(ms));
    QCOMPARE(tok.vocabSize(), 51289);
}

void TestTokenizer::vocabularyLayout() {
    const Tokenizer& tok = *m_tok;
    QCOMPARE(tok.vocabSize(), 51289);
    QCOMPARE(tok.tokenString(tok.bosId()), std::string("<s>"));
    QCOMPARE(tok.tokenString(tok.padId()), std::string("<pad>"));
    QCOMPARE(tok.tokenString(tok.eosId()), std::string("</s>"));
    QCOMPARE(tok.tokenString(tok.unkId()), std::string("<unk>"));
    QCOMPARE(tok.tokenId("<mask>"), 50264);
    QCOMPARE(tok.tokenId("<od>"), 50265);
    QCOMPARE(tok.tokenId("</ocr>"), 50268);
    QCOMPARE(tok.tokenId("<cap>"), 51269);
    QCOMPARE(tok.tokenId("<sep>"), 51279);
    QCOMPARE(tok.tokenId("<region_to_desciption>"), 51282);
    QCOMPARE(tok.tokenId("<and>"), 51288);
    QCOMPARE(tok.tokenId("no-such-token"), -1);

    for (int bin : {0, 1, 350, 999}) {
        QCOMPARE(tok.locId(bin), 50269 + bin);
        QCOMPARE(tok.locBin(50269 + bin), bin);
        QCOMPARE(tok.tokenString(tok.locId(bin)), "<loc_" + std::to_string(bin) + ">");
    }
    QCOMPARE(tok.locBin(50268), -1);
    QCOMPARE(tok.locBin(51269), -1);
    QCOMPARE(tok.locBin(5), -1);
    QCOMPARE(tok.locId(1000), -1);
    QCOMPARE(tok.locId(-1), -1);

    for (int64_t id : {0, 1, 2, 3, 50264, 50265, 50800, 51288})
        QVERIFY2(tok.isAddedToken(id), qPrintable(QString::number(id)));
    for (int64_t id : {4, 1437, 50263, 51289, -1})
        QVERIFY2(!tok.isAddedToken(id), qPrintable(QString::number(id)));

    QCOMPARE(tok.tokenString(1437), std::string("\xC4\xA0")); // "Ġ", the byte-level space
    QCOMPARE(tok.tokenBytes(1437), std::string(" "));
    QCOMPARE(tok.tokenBytes(50269), std::string("<loc_0>"));
}

void TestTokenizer::fixturePromptIds_data() {
    QTest::addColumn<std::string>("prompt");
    QTest::addColumn<Ids>("expected");
    const QJsonObject tasks = referenceTasks();
    QVERIFY2(tasks.size() == 5, "reference.json should describe 5 tasks");
    for (auto it = tasks.begin(); it != tasks.end(); ++it) {
        const QJsonObject task = it.value().toObject();
        QTest::newRow(qPrintable(it.key()))
            << task.value(QStringLiteral("prompt")).toString().toStdString()
            << toIds(task.value(QStringLiteral("input_ids")));
    }
}

void TestTokenizer::fixturePromptIds() {
    QFETCH(std::string, prompt);
    QFETCH(Ids, expected);
    QVERIFY(!expected.empty());
    QCOMPARE(m_tok->encode(prompt), expected);
}

void TestTokenizer::fixtureDecode_data() {
    QTest::addColumn<Ids>("generated");
    QTest::addColumn<std::string>("expected");
    const QJsonObject tasks = referenceTasks();
    QVERIFY2(tasks.size() == 5, "reference.json should describe 5 tasks");
    for (auto it = tasks.begin(); it != tasks.end(); ++it) {
        const QJsonObject task = it.value().toObject();
        QTest::newRow(qPrintable(it.key()))
            << toIds(task.value(QStringLiteral("generated")))
            << task.value(QStringLiteral("text")).toString().toStdString();
    }
}

void TestTokenizer::fixtureDecode() {
    QFETCH(Ids, generated);
    QFETCH(std::string, expected);
    QVERIFY(!expected.empty());
    QCOMPARE(m_tok->decode(generated), expected);
}

// Expected ids come from an independent Python implementation of GPT-2's BPE (the `regex`
// module's \p{L}/\p{N}, the published merges.txt, HF's added-token and <mask> lstrip rules).
// It reproduces every reference.json prompt, like this C++ one must.
void TestTokenizer::knownIds_data() {
    QTest::addColumn<std::string>("text");
    QTest::addColumn<Ids>("expected");
    QTest::newRow("empty") << std::string() << Ids{};
    QTest::newRow("plain") << std::string("Hello world") << Ids{31414, 232};
    QTest::newRow("space runs") << std::string("  multiple   spaces  ")
                                << Ids{1437, 1533, 1437, 1437, 5938, 1437, 1437};
    QTest::newRow("tabs newlines")
        << std::string("tabs\tand\nnewlines\n\n end \t\n")
        << Ids{34108, 29, 50117, 463, 50118, 4651, 11723, 50140, 253, 1437, 50117, 50118};
    QTest::newRow("contractions") << std::string("it's we're they've I'm you'll he'd don't IT'S 'x")
                                  << Ids{405, 18,   52,  214, 51,   348, 38,  437, 47,  581,
                                         37,  1017, 218, 75,  3779, 108, 104, 128, 1178};
    QTest::newRow("numbers") << std::string("numbers 12345 and 3.14, x2y")
                             << Ids{282, 30806, 17072, 1898, 8, 155, 4, 1570, 6, 3023, 176, 219};
    QTest::newRow("accented") << std::string("Café déjà vu, naïve Ærøskøbing")
                              << Ids{347,   2001, 1140,  10768, 267,   5269, 748,   257, 6,
                                     39300, 952,  27819, 338,   14562, 7771, 14562, 6721};
    QTest::newRow("cjk") << std::string("日本語のテキスト 中文")
                         << Ids{47954, 8210,  44636, 11582, 48537, 17772, 48018,
                                49312, 49587, 49615, 1437,  47643, 47240, 6382};
    QTest::newRow("emoji") << std::string("emoji 🦜🎉 done")
                           << Ids{991, 16873, 8103, 18164, 48, 6569, 12736, 23171, 626};
    QTest::newRow("unicode numbers")
        << std::string("Ⅻ x² ٣") << Ids{24987, 5782, 4958, 3023, 40632, 36963, 2469};
    QTest::newRow("nbsp and ideographic space")
        << std::string("a\u00A0b \u3000c") << Ids{102, 50141, 428, 1437, 48516, 7471, 438};
    QTest::newRow("mask lstrip") << std::string("a  <mask> b") << Ids{102, 50264, 741};
    QTest::newRow("adjacent added") << std::string("<loc_1><loc_10>x<sep>y</s><s>")
                                    << Ids{50270, 50279, 1178, 51279, 219, 2, 0};
    QTest::newRow("not a loc token")
        << std::string("<loc_1000><loc_-1>")
        << Ids{41552, 26516, 1215, 20078, 49007, 26516, 45592, 134, 15698};
    QTest::newRow("punctuation") << std::string("Hello!!! (what?) -- ok...")
                                 << Ids{31414, 16506, 36, 12196, 16276, 480, 15983, 734};
}

void TestTokenizer::knownIds() {
    QFETCH(std::string, text);
    QFETCH(Ids, expected);
    QCOMPARE(m_tok->encodeWithoutSpecial(text), expected);
    Ids withSpecial = expected;
    withSpecial.insert(withSpecial.begin(), 0);
    withSpecial.push_back(2);
    QCOMPARE(m_tok->encode(text), withSpecial);
}

void TestTokenizer::roundTrip_data() {
    QTest::addColumn<std::string>("text");
    QTest::newRow("ascii") << std::string("A wooden pier on a calm lake.");
    QTest::newRow("accented") << std::string("Crème brûlée à la façon de Zoë, São Paulo, Ångström");
    QTest::newRow("cjk") << std::string("桟橋の写真です。这是一张码头的照片。부두 사진");
    QTest::newRow("emoji") << std::string(
        "🦜 parrot 👩‍👩‍👧 family 🇫🇷 flag 👍🏽");
    QTest::newRow("whitespace") << std::string("  lead\t\ttabs\n\nnew  lines \r\n trailing   ");
    QTest::newRow("location tokens")
        << std::string("car<loc_12><loc_34><loc_560><loc_999>person <loc_0><loc_1>");
    QTest::newRow("florence tokens")
        << std::string("<od>x</od><poly><loc_5><sep><loc_6></poly><region_to_desciption>");
    QTest::newRow("specials inside text") << std::string("a<s>b</s>c<pad>d<unk>");
    QTest::newRow("mixed scripts") << std::string("Москва 2024 — Αθήνα, مرحبا, שלום, हिन्दी");
    QTest::newRow("empty") << std::string();
}

void TestTokenizer::roundTrip() {
    QFETCH(std::string, text);
    const Ids ids = m_tok->encode(text);
    QCOMPARE(m_tok->decode(ids), "<s>" + text + "</s>");
}

void TestTokenizer::streamDecoder_data() {
    QTest::addColumn<std::string>("text");
    QTest::newRow("emoji alone") << std::string("🦜");
    QTest::newRow("emoji sequence") << std::string("👩‍👩‍👧 and 🇫🇷🎉");
    QTest::newRow("cjk") << std::string("日本語のテキスト");
    QTest::newRow("with locations") << std::string("parrot 🦜<loc_1><loc_2>é");
}

void TestTokenizer::streamDecoder() {
    QFETCH(std::string, text);
    const Ids ids = m_tok->encode(text);
    const std::string whole = m_tok->decode(ids);

    Tokenizer::StreamDecoder stream(*m_tok);
    std::string joined;
    int heldBack = 0;
    for (int64_t id : ids) {
        const std::string piece = stream.push(id);
        // Nothing partial may reach the UI: every piece is whole characters.
        QVERIFY2(isCleanUtf8(piece), piece.c_str());
        if (piece.empty())
            ++heldBack;
        joined += piece;
    }
    joined += stream.flush();
    QCOMPARE(joined, whole);
    // Each row has a character split over several tokens, so something must have been held.
    QVERIFY(heldBack > 0);
}

void TestTokenizer::streamFlushReplacesIncompleteCharacter() {
    const Ids parrot = m_tok->encodeWithoutSpecial("🦜");
    QVERIFY2(parrot.size() >= 2, "the emoji should span several tokens");
    QVERIFY(m_tok->tokenBytes(parrot.front()).size() < 4);

    Tokenizer::StreamDecoder stream(*m_tok);
    QCOMPARE(stream.push(parrot.front()), std::string());
    QCOMPARE(stream.flush(), std::string("\xEF\xBF\xBD"));
    // decode of the same cut-off sequence agrees with the stream.
    QCOMPARE(m_tok->decode({parrot.front()}), std::string("\xEF\xBF\xBD"));
    // After a flush nothing is carried over.
    QCOMPARE(stream.push(m_tok->tokenId("a")), std::string("a"));
    QCOMPARE(stream.flush(), std::string());
}

void TestTokenizer::badFiles_data() {
    // "which" says which file the message must name: "vocab" or "merges".
    QTest::addColumn<QByteArray>("vocab");
    QTest::addColumn<QByteArray>("merges");
    QTest::addColumn<QString>("which");

    QFile vocabFile(QString::fromStdString(vocabPath()));
    QFile mergesFile(QString::fromStdString(mergesPath()));
    QVERIFY(vocabFile.open(QIODevice::ReadOnly));
    QVERIFY(mergesFile.open(QIODevice::ReadOnly));
    const QByteArray goodVocab = vocabFile.readAll();
    const QByteArray goodMerges = mergesFile.readAll();
    const QByteArray missing; // a null QByteArray means: do not create the file

    QTest::newRow("missing vocab") << missing << goodMerges << "vocab";
    QTest::newRow("missing merges") << goodVocab << missing << "merges";
    QTest::newRow("truncated vocab") << goodVocab.left(5000) << goodMerges << "vocab";
    QTest::newRow("vocab is an array") << QByteArray("[1, 2]") << goodMerges << "vocab";
    QTest::newRow("vocab id not a number")
        << QByteArray(goodVocab).replace("\"<pad>\": 1,", "\"<pad>\": \"one\",") << goodMerges
        << "vocab";
    QTest::newRow("vocab lacks <s>")
        << QByteArray(goodVocab).replace("\"<s>\": 0,", "") << goodMerges << "vocab";
    QTest::newRow("merges line with three parts")
        << goodVocab << QByteArray("#version: 0.2\nĠ t\nh e x\n") << "merges";
    QTest::newRow("merges token not in vocab")
        << goodVocab << QByteArray("#version: 0.2\nĠ t\nzzzqqq xxyyzz\n") << "merges";
}

void TestTokenizer::badFiles() {
    QFETCH(QByteArray, vocab);
    QFETCH(QByteArray, merges);
    QFETCH(QString, which);

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString vocabFile = dir.filePath(QStringLiteral("vocab.json"));
    const QString mergesFile = dir.filePath(QStringLiteral("merges.txt"));
    if (!vocab.isNull())
        writeFile(vocabFile, vocab);
    if (!merges.isNull())
        writeFile(mergesFile, merges);

    const std::string named =
        (which == QLatin1String("vocab") ? vocabFile : mergesFile).toStdString();
    try {
        Tokenizer::fromFiles(vocabFile.toStdString(), mergesFile.toStdString());
        QFAIL("fromFiles accepted a bad file");
    } catch (const std::runtime_error& e) {
        const std::string message = e.what();
        qInfo("%s", e.what());
        QVERIFY2(message.find(named) != std::string::npos, e.what());
    }
}

// Documented in Tokenizer.h: ids outside the vocabulary are skipped, as HF's decode does.
void TestTokenizer::unknownIdsAreSkipped() {
    const Tokenizer& tok = *m_tok;
    QCOMPARE(tok.decode({0, -1, 51289, 999999, 12196, 2}), std::string("<s>what</s>"));
    QCOMPARE(tok.tokenBytes(-1), std::string());
    QCOMPARE(tok.tokenBytes(51289), std::string());
    QCOMPARE(tok.tokenString(51289), std::string());
    Tokenizer::StreamDecoder stream(tok);
    QCOMPARE(stream.push(999999), std::string());
    QCOMPARE(stream.push(12196), std::string("what"));
    QCOMPARE(stream.flush(), std::string());
}

// Text from a user's file may not be valid UTF-8; the bytes still encode (byte-level BPE covers
// every byte) and come back as U+FFFD instead of crashing or being dropped silently.
void TestTokenizer::invalidUtf8InputSurvives() {
    const std::string text("a\xFF"
                           "b\xE2\x82");
    const Ids ids = m_tok->encodeWithoutSpecial(text);
    QVERIFY(ids.size() >= 3);
    QCOMPARE(m_tok->decode(ids), std::string("a\xEF\xBF\xBD"
                                             "b\xEF\xBF\xBD"));
}

void TestTokenizer::copiesShareTables() {
    Tokenizer copy = *m_tok;
    Tokenizer moved = std::move(copy);
    QCOMPARE(moved.vocabSize(), 51289);
    QCOMPARE(moved.encode("Hello world"), (Ids{0, 31414, 232, 2}));
    Tokenizer assigned;
    QCOMPARE(assigned.vocabSize(), 0);
    assigned = moved;
    QCOMPARE(assigned.decode({0, 31414, 232, 2}), std::string("<s>Hello world</s>"));
}

// The worker thread and the UI may tokenize at the same time; the BPE cache is shared.
void TestTokenizer::concurrentEncode() {
    // A fresh tokenizer so the cache starts cold and the threads race to fill it.
    const Tokenizer tok = Tokenizer::fromFiles(vocabPath(), mergesPath());
    std::vector<std::string> texts;
    for (int i = 0; i < 200; ++i)
        texts.push_back("Locate the phrases in the caption: wordnumber" + std::to_string(i) +
                        " café 日本 🦜<loc_" + std::to_string(i) + ">");
    std::vector<Ids> expected;
    for (const std::string& text : texts)
        expected.push_back(m_tok->encode(text));

    constexpr int kThreads = 4;
    std::vector<int> mismatches(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 5; ++round)
                for (size_t i = 0; i < texts.size(); ++i)
                    if (tok.encode(texts[i]) != expected[i])
                        ++mismatches[t];
        });
    }
    for (std::thread& thread : threads)
        thread.join();
    for (int t = 0; t < kThreads; ++t)
        QCOMPARE(mismatches[t], 0);
}

void TestTokenizer::encodeLongInputs() {
    const std::string prompt =
        "What does the region <loc_350><loc_520><loc_700><loc_999> describe?";
    const std::string longText = [] {
        std::string s;
        for (int i = 0; i < 200; ++i)
            s += "A wooden pier on a calm lake, with mountains number " + std::to_string(i) + ". ";
        return s;
    }();
    constexpr int kRounds = 1000;
    QElapsedTimer timer;
    timer.start();
    size_t total = 0;
    for (int i = 0; i < kRounds; ++i)
        total += m_tok->encode(prompt).size();
    const double promptUs = static_cast<double>(timer.nsecsElapsed()) / kRounds / 1000.0;
    timer.restart();
    total += m_tok->encode(longText).size();
    const double longMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    // A pathological word (one 20 000-byte run) must stay fast too: BPE is not quadratic.
    timer.restart();
    total += m_tok->encode(std::string(20000, '-')).size();
    const double runMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    // Printed, not asserted (no test depends on the machine's speed); what is checked is that
    // the long inputs come back whole.
    qInfo("encode: prompt %.1f us, 200 sentences %.2f ms, 20000-dash word %.2f ms", promptUs,
          longMs, runMs);
    QVERIFY(total > 0);
    QCOMPARE(m_tok->decode(m_tok->encode(longText)), "<s>" + longText + "</s>");
    QCOMPARE(m_tok->decode(m_tok->encode(std::string(20000, '-'))),
             "<s>" + std::string(20000, '-') + "</s>");
}

QTEST_GUILESS_MAIN(TestTokenizer)
#include "TestTokenizer.moc"
