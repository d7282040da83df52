// The annotated PNG a user exports: geometry lands where the answer says, the photo stays
// untouched elsewhere, fills let the photo show through, labels scale with the image, and the
// file written is exactly the image drawn. Also the inputs that must not crash the export.
#include <florence/annotate.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <array>
#include <cmath>
#include <limits>

using namespace florence;

Q_DECLARE_METATYPE(florence::RgbImage)
Q_DECLARE_METATYPE(florence::ParsedAnswer)

namespace {

using Rgb = std::array<int, 3>;

RgbImage solid(int width, int height, Rgb color) {
    RgbImage image;
    image.width = width;
    image.height = height;
    image.pixels.resize(size_t(width) * size_t(height) * 3);
    for (size_t i = 0; i < image.pixels.size(); ++i)
        image.pixels[i] = uint8_t(color[i % 3]);
    return image;
}

// Differs in every pixel, so a drawing that happens to match the background cannot hide.
RgbImage gradient(int width, int height) {
    RgbImage image = solid(width, height, {0, 0, 0});
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            uint8_t* p = &image.pixels[(size_t(y) * size_t(width) + size_t(x)) * 3];
            p[0] = uint8_t(x * 255 / std::max(1, width - 1));
            p[1] = uint8_t(y * 255 / std::max(1, height - 1));
            p[2] = uint8_t((x + y) % 256);
        }
    return image;
}

Rgb pixel(const RgbImage& image, int x, int y) {
    const uint8_t* p = &image.pixels[(size_t(y) * size_t(image.width) + size_t(x)) * 3];
    return {p[0], p[1], p[2]};
}

bool samePixel(const RgbImage& a, const RgbImage& b, int x, int y) {
    return pixel(a, x, y) == pixel(b, x, y);
}

// Pixels of the rectangle [x0, x1) × [y0, y1) that differ between a and b.
int changedIn(const RgbImage& a, const RgbImage& b, int x0, int y0, int x1, int y1) {
    int changed = 0;
    for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x)
            changed += !samePixel(a, b, x, y);
    return changed;
}

AnswerItem boxItem(const std::string& label, double x1, double y1, double x2, double y2) {
    AnswerItem item;
    item.kind = AnswerItem::Kind::Box;
    item.label = label;
    item.box = Box{x1, y1, x2, y2};
    return item;
}

AnswerItem quadItem(const std::string& label, std::vector<double> quad) {
    AnswerItem item;
    item.kind = AnswerItem::Kind::Quad;
    item.label = label;
    item.quad = std::move(quad);
    return item;
}

AnswerItem polygonItem(const std::string& label, std::vector<std::vector<double>> polygons) {
    AnswerItem item;
    item.kind = AnswerItem::Kind::Polygon;
    item.label = label;
    item.polygons = std::move(polygons);
    return item;
}

ParsedAnswer answerWith(std::vector<AnswerItem> items, AnswerType type = AnswerType::Bboxes) {
    ParsedAnswer answer;
    answer.type = type;
    answer.items = std::move(items);
    return answer;
}

ParsedAnswer pureText(const std::string& text) {
    ParsedAnswer answer;
    answer.task = "<CAPTION>";
    answer.type = AnswerType::PureText;
    answer.text = text;
    return answer;
}

} // namespace

class TestAnnotate : public QObject {
    Q_OBJECT

private slots:
    void boxDrawsBorderAndLabelOnly_data();
    void boxDrawsBorderAndLabelOnly();
    void labelOfBoxAtTopEdgeIsInside();
    void sameLabelSameColor();
    void polygonFillIsSemiTransparent();
    void quadIsClosedOutlineWithoutFill();
    void pureTextDrawsBanner_data();
    void pureTextDrawsBanner();
    void outputSizeEqualsInput_data();
    void outputSizeEqualsInput();
    void lineAndLabelScaleWithImage();
    void nonAsciiLabelsBecomeQuestionMarks();
    void savedFileReloadsToSamePixels_data();
    void savedFileReloadsToSamePixels();
    void saveAnnotatedImageWritesTheDrawing();
    void saveErrorsNameTheFile_data();
    void saveErrorsNameTheFile();
    void degenerateInputDoesNotCrash_data();
    void degenerateInputDoesNotCrash();
};

void TestAnnotate::boxDrawsBorderAndLabelOnly_data() {
    QTest::addColumn<RgbImage>("image");
    QTest::newRow("white") << solid(400, 300, {255, 255, 255});
    QTest::newRow("black") << solid(400, 300, {0, 0, 0});
    QTest::newRow("gray") << solid(400, 300, {128, 128, 128});
    QTest::newRow("gradient") << gradient(400, 300);
}

void TestAnnotate::boxDrawsBorderAndLabelOnly() {
    QFETCH(RgbImage, image);
    const RgbImage out = drawAnswer(image, answerWith({boxItem("car", 100, 120, 250, 220)}));
    QCOMPARE(out.width, image.width);
    QCOMPARE(out.height, image.height);
    // All four edges.
    QVERIFY(!samePixel(out, image, 100, 170));
    QVERIFY(!samePixel(out, image, 250, 170));
    QVERIFY(!samePixel(out, image, 175, 220));
    QVERIFY(!samePixel(out, image, 175, 120));
    // Boxes are outlines: the object inside stays visible.
    QCOMPARE(changedIn(out, image, 110, 140, 240, 210), 0);
    // The label tag hangs above the box's top-left corner.
    QVERIFY(changedIn(out, image, 100, 105, 130, 118) > 0);
    // Far from the box the photo is untouched.
    QCOMPARE(changedIn(out, image, 300, 0, 400, 300), 0);
    QCOMPARE(changedIn(out, image, 0, 240, 400, 300), 0);
    QCOMPARE(changedIn(out, image, 0, 0, 90, 300), 0);
}

void TestAnnotate::labelOfBoxAtTopEdgeIsInside() {
    const RgbImage image = solid(400, 300, {128, 128, 128});
    const RgbImage unlabeled = drawAnswer(image, answerWith({boxItem("", 50, 0, 300, 200)}));
    const RgbImage labeled = drawAnswer(image, answerWith({boxItem("person", 50, 0, 300, 200)}));
    // Without a label the inside of the box is untouched; with one, its tag is there (it has no
    // room above the box).
    QCOMPARE(changedIn(unlabeled, image, 55, 3, 80, 12), 0);
    QVERIFY(changedIn(labeled, image, 55, 3, 80, 12) > 0);
}

void TestAnnotate::sameLabelSameColor() {
    const RgbImage image = solid(600, 400, {128, 128, 128});
    const RgbImage out = drawAnswer(
        image, answerWith({boxItem("cat", 50, 150, 150, 250), boxItem("dog", 200, 150, 300, 250),
                           boxItem("cat", 350, 150, 450, 250)}));
    const Rgb cat1 = pixel(out, 50, 200), dog = pixel(out, 200, 200), cat2 = pixel(out, 350, 200);
    QVERIFY(cat1 != pixel(image, 50, 200));
    QVERIFY(dog != pixel(image, 200, 200));
    QCOMPARE(cat1, cat2);
    QVERIFY(cat1 != dog);
}

void TestAnnotate::polygonFillIsSemiTransparent() {
    const ParsedAnswer answer = answerWith(
        {polygonItem("lake", {{250, 250, 750, 250, 750, 750, 250, 750}})}, AnswerType::Polygons);
    const RgbImage black = solid(1000, 1000, {0, 0, 0});
    const RgbImage white = solid(1000, 1000, {255, 255, 255});
    const RgbImage onBlack = drawAnswer(black, answer);
    const RgbImage onWhite = drawAnswer(white, answer);
    // The fill shows on both backgrounds …
    QVERIFY(!samePixel(onBlack, black, 500, 500));
    QVERIFY(!samePixel(onWhite, white, 500, 500));
    // … but what is under it still shows: an opaque fill would give the same pixel on both.
    // With alpha 0.35 the two differ by 0.65 × 255 ≈ 166 in every channel.
    const Rgb b = pixel(onBlack, 500, 500), w = pixel(onWhite, 500, 500);
    for (int c = 0; c < 3; ++c) {
        const int diff = w[c] - b[c];
        QVERIFY2(diff >= 140 && diff <= 190,
                 qPrintable(QString("channel %1: %2").arg(c).arg(diff)));
    }
    // The outline is opaque: the same on both backgrounds.
    QCOMPARE(pixel(onBlack, 500, 750), pixel(onWhite, 500, 750));
    QCOMPARE(changedIn(onBlack, black, 800, 0, 1000, 1000), 0);
}

void TestAnnotate::quadIsClosedOutlineWithoutFill() {
    const RgbImage image = solid(300, 200, {255, 255, 255});
    const RgbImage out =
        drawAnswer(image, answerWith({quadItem("STOP", {50, 60, 250, 70, 240, 150, 40, 140})},
                                     AnswerType::Ocr));
    QVERIFY(!samePixel(out, image, 150, 65)); // first edge
    QVERIFY(!samePixel(out, image, 45, 100)); // closing edge, last corner back to the first
    QCOMPARE(changedIn(out, image, 70, 85, 220, 125), 0); // not filled
    QVERIFY(changedIn(out, image, 40, 40, 80, 57) > 0);   // its text, above it
    QCOMPARE(changedIn(out, image, 0, 170, 300, 200), 0);
}

void TestAnnotate::pureTextDrawsBanner_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("expectBanner");
    QTest::newRow("caption") << "A cat sitting on a mat." << true;
    QTest::newRow("long caption")
        << QString("The image shows a large orange cat sitting on a red mat in front of a door. ")
               .repeated(20)
        << true;
    QTest::newRow("region answer") << "car<loc_52><loc_333><loc_932><loc_774>" << true;
    QTest::newRow("utf-8") << QString::fromUtf8("Ein Bär vor dem Café 猫") << true;
    QTest::newRow("empty") << "" << false;
    QTest::newRow("blank") << " \n " << false;
    QTest::newRow("only locations") << "<loc_1><loc_2>" << false;
}

void TestAnnotate::pureTextDrawsBanner() {
    QFETCH(QString, text);
    QFETCH(bool, expectBanner);
    const RgbImage image = solid(300, 200, {200, 200, 200});
    const RgbImage out = drawAnswer(image, pureText(text.toStdString()));
    QCOMPARE(out.width, image.width);
    QCOMPARE(out.height, image.height);
    if (!expectBanner) {
        QVERIFY(out.pixels == image.pixels);
        return;
    }
    // The banner spans the full width and darkens the top (white text needs that on a light
    // photo) without blacking it out.
    const Rgb corner = pixel(out, 299, 1);
    QVERIFY(corner[0] < 200 && corner[0] > 0);
    if (text.size() < 100)
        QCOMPARE(changedIn(out, image, 0, 100, 300, 200), 0);
}

void TestAnnotate::outputSizeEqualsInput_data() {
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::newRow("1x1") << 1 << 1;
    QTest::newRow("3x2") << 3 << 2;
    QTest::newRow("300x200") << 300 << 200;
    QTest::newRow("tall 50x900") << 50 << 900;
    QTest::newRow("4032x3024") << 4032 << 3024;
}

void TestAnnotate::outputSizeEqualsInput() {
    QFETCH(int, width);
    QFETCH(int, height);
    const RgbImage image = solid(width, height, {90, 120, 30});
    const ParsedAnswer answer =
        answerWith({boxItem("a fairly long label for a small image", 0.1 * width, 0.1 * height,
                            0.9 * width, 0.9 * height),
                    quadItem("text", {0, 0, double(width), 0, double(width), double(height), 0,
                                      double(height)}),
                    polygonItem("region", {{0.2 * width, 0.2 * height, 0.8 * width, 0.3 * height,
                                            0.5 * width, 0.8 * height}})});
    const RgbImage out = drawAnswer(image, answer);
    QCOMPARE(out.width, width);
    QCOMPARE(out.height, height);
    QCOMPARE(out.pixels.size(), image.pixels.size());
    const RgbImage captioned = drawAnswer(image, pureText("A long caption. "));
    QCOMPARE(captioned.width, width);
    QCOMPARE(captioned.height, height);
    QCOMPARE(captioned.pixels.size(), image.pixels.size());
}

void TestAnnotate::lineAndLabelScaleWithImage() {
    // The same box, in proportion, on a thumbnail and on a photo: lines and labels must grow with
    // the image or they vanish on the photo.
    auto measure = [](int size) {
        const RgbImage image = solid(size, size, {128, 128, 128});
        const RgbImage out = drawAnswer(
            image, answerWith({boxItem("car", 0.25 * size, 0.5 * size, 0.75 * size, 0.75 * size)}));
        const int row = int(0.6 * size);
        int line = 0;
        for (int x = 0; x < size / 2; ++x)
            line += !samePixel(out, image, x, row);
        const int column = int(0.25 * size) + 1;
        int tag = 0;
        for (int y = 0; y < size / 2 - 1; ++y)
            tag += !samePixel(out, image, column, y);
        return std::make_pair(line, tag);
    };
    const auto [smallLine, smallTag] = measure(300);
    const auto [bigLine, bigTag] = measure(3000);
    QVERIFY(smallLine >= 1);
    QVERIFY2(smallTag >= 12, qPrintable(QString("label %1 px high on 300 px").arg(smallTag)));
    QVERIFY2(bigLine >= 4 * smallLine,
             qPrintable(QString("line %1 px vs %2 px").arg(bigLine).arg(smallLine)));
    QVERIFY2(bigTag >= 3 * smallTag,
             qPrintable(QString("label %1 px vs %2 px").arg(bigTag).arg(smallTag)));
}

void TestAnnotate::nonAsciiLabelsBecomeQuestionMarks() {
    const RgbImage image = solid(300, 200, {128, 128, 128});
    auto draw = [&image](const std::string& label) {
        return drawAnswer(image, answerWith({boxItem(label, 50, 80, 250, 180)})).pixels;
    };
    // The text is really drawn, so equal images below mean equal text.
    QVERIFY(draw("cat") != draw("dog"));
    QVERIFY(draw("\xc3\xa9") == draw("?"));                          // é
    QVERIFY(draw("\xe7\x8c\xab\xe7\x8c\xab") == draw("??"));         // 猫猫
    QVERIFY(draw("caf\xc3\xa9 \xf0\x9f\x98\x80") == draw("caf? ?")); // 4-byte emoji
    QVERIFY(draw("a\xff\xfe") == draw("a??"));                       // invalid UTF-8
}

void TestAnnotate::savedFileReloadsToSamePixels_data() {
    QTest::addColumn<QString>("fileName");
    QTest::newRow("png") << "annotated.png";
    QTest::newRow("upper-case extension") << "ANNOTATED.PNG";
    QTest::newRow("utf-8 name") << QString::fromUtf8("Bild-ä-猫.png");
    QTest::newRow("bmp") << "annotated.bmp";
}

void TestAnnotate::savedFileReloadsToSamePixels() {
    QFETCH(QString, fileName);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const RgbImage drawn =
        drawAnswer(gradient(320, 240), answerWith({boxItem("car", 40, 50, 200, 180)}));
    const std::string path = dir.filePath(fileName).toStdString();
    saveImage(drawn, path);
    const RgbImage loaded = loadImage(path);
    QCOMPARE(loaded.width, drawn.width);
    QCOMPARE(loaded.height, drawn.height);
    QVERIFY(loaded.pixels == drawn.pixels);
}

void TestAnnotate::saveAnnotatedImageWritesTheDrawing() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const RgbImage image = gradient(200, 150);
    const ParsedAnswer answer = answerWith({boxItem("car", 20, 30, 150, 120)});
    const std::string path = dir.filePath("out.png").toStdString();
    saveAnnotatedImage(image, answer, path);
    const RgbImage loaded = loadImage(path);
    QVERIFY(loaded.pixels == drawAnswer(image, answer).pixels);
    QVERIFY(loaded.pixels != image.pixels);
}

void TestAnnotate::saveErrorsNameTheFile_data() {
    QTest::addColumn<QString>("relativePath");
    QTest::addColumn<QString>("reason");
    QTest::newRow("missing folder") << "missing/sub/out.png"
                                    << "does not exist";
    QTest::newRow("unknown extension") << "out.xyz"
                                       << ".xyz";
    QTest::newRow("no extension") << "out"
                                  << "extension";
    QTest::newRow("a folder") << "folder.png"
                              << "folder";
}

void TestAnnotate::saveErrorsNameTheFile() {
    QFETCH(QString, relativePath);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(QDir(dir.path()).mkdir("folder.png"));
    const std::string path = dir.filePath(relativePath).toStdString();
    try {
        saveImage(solid(10, 10, {1, 2, 3}), path);
        QFAIL("saveImage did not throw");
    } catch (const ImageError& e) {
        const std::string message = e.what();
        QVERIFY2(message.find(path) != std::string::npos, e.what());
        QVERIFY2(message.find(reason.toStdString()) != std::string::npos, e.what());
    }
    if (relativePath != "folder.png")
        QVERIFY(!QFile::exists(dir.filePath(relativePath)));
}

void TestAnnotate::degenerateInputDoesNotCrash_data() {
    QTest::addColumn<int>("size");
    QTest::addColumn<ParsedAnswer>("answer");
    // 0: image unchanged, 1: something drawn, 2: either
    QTest::addColumn<int>("expect");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    QTest::newRow("1x1 box") << 1 << answerWith({boxItem("car", 0, 0, 1, 1)}) << 1;
    QTest::newRow("1x1 polygon") << 1 << answerWith({polygonItem("x", {{0, 0, 1, 0, 1, 1}})}) << 2;
    QTest::newRow("1x1 caption") << 1 << pureText("A caption") << 2;
    QTest::newRow("box outside") << 100 << answerWith({boxItem("car", 200, 200, 300, 300)}) << 0;
    QTest::newRow("box above-left")
        << 100 << answerWith({boxItem("car", -300, -300, -200, -200)}) << 0;
    QTest::newRow("box across the image")
        << 100 << answerWith({boxItem("car", -1e12, -1e12, 1e12, 1e12)}) << 1;
    QTest::newRow("box swapped corners")
        << 100 << answerWith({boxItem("car", 80, 80, 20, 20)}) << 1;
    QTest::newRow("zero-size box") << 100 << answerWith({boxItem("", 50, 50, 50, 50)}) << 1;
    QTest::newRow("NaN box") << 100 << answerWith({boxItem("car", nan, 0, 50, 50)}) << 0;
    QTest::newRow("infinite box") << 100 << answerWith({boxItem("car", 0, 0, inf, 50)}) << 0;
    QTest::newRow("polygon outside")
        << 100 << answerWith({polygonItem("x", {{200, 200, 300, 200, 250, 300}})}) << 0;
    QTest::newRow("huge polygon") << 100
                                  << answerWith(
                                         {polygonItem("x", {{-1e9, -1e9, 1e9, -1e9, 0, 1e9}})})
                                  << 1;
    QTest::newRow("polygon 1 point") << 100 << answerWith({polygonItem("", {{50, 50}})}) << 1;
    QTest::newRow("polygon 2 points")
        << 100 << answerWith({polygonItem("", {{10, 50, 90, 50}})}) << 1;
    QTest::newRow("polygon odd count")
        << 100 << answerWith({polygonItem("x", {{10, 10, 90, 10, 50, 90, 7}})}) << 1;
    QTest::newRow("polygon with NaN")
        << 100 << answerWith({polygonItem("x", {{10, 10, nan, 10, 90, 90, 10, 90}})}) << 1;
    QTest::newRow("no polygons") << 100 << answerWith({polygonItem("x", {})}) << 0;
    QTest::newRow("empty polygon") << 100 << answerWith({polygonItem("x", {{}})}) << 0;
    QTest::newRow("quad too short")
        << 100 << answerWith({quadItem("t", {10, 10, 90, 10, 50})}) << 1;
    QTest::newRow("empty quad") << 100 << answerWith({quadItem("t", {})}) << 0;
    QTest::newRow("UTF-8 label") << 100
                                 << answerWith(
                                        {boxItem("\xe7\x8c\xab \xf0\x9f\x98\x80", 10, 10, 90, 90)})
                                 << 1;
    QTest::newRow("very long label")
        << 100 << answerWith({boxItem(std::string(5000, 'w'), 10, 10, 90, 90)}) << 1;
    QTest::newRow("control characters")
        << 100 << answerWith({boxItem(std::string("a\0b\n\t", 5), 10, 10, 90, 90)}) << 1;
    QTest::newRow("no items, not text") << 100 << answerWith({}) << 0;
}

void TestAnnotate::degenerateInputDoesNotCrash() {
    QFETCH(int, size);
    QFETCH(ParsedAnswer, answer);
    QFETCH(int, expect);
    const RgbImage image = solid(size, size, {128, 128, 128});
    const RgbImage out = drawAnswer(image, answer);
    QCOMPARE(out.width, image.width);
    QCOMPARE(out.height, image.height);
    QCOMPARE(out.pixels.size(), image.pixels.size());
    if (expect == 0)
        QVERIFY(out.pixels == image.pixels);
    else if (expect == 1)
        QVERIFY(out.pixels != image.pixels);
}

QTEST_GUILESS_MAIN(TestAnnotate)
#include "TestAnnotate.moc"
