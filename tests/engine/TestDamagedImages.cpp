// Damaged images are refused, never answered (engine/image/JpegCheck.cpp): a JPEG cut short or
// one declaring far more pixels than its data can hold gives one line naming the file, while
// whole JPEGs, baseline and progressive, flat or busy, still decode. The decoders print nothing
// of their own (image/Png.cpp, image/DecoderMessages.cpp), and libpng through the program's
// handlers gives OpenCV's pixels. And a photo's EXIF orientation is applied and said to be, or
// left alone when asked (image/Orientation.cpp). Fixtures are made here.
#include <florence/image.h>

#include "image/Png.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <zlib.h>

#include <cstdio>
#include <fcntl.h>
#include <functional>
#include <jpeglib.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

// A busy picture: a gradient with noise, so the JPEG's entropy data is not trivially small.
cv::Mat scene(int w, int h) {
    cv::Mat m(h, w, CV_8UC3);
    cv::randu(m, cv::Scalar::all(0), cv::Scalar::all(255));
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            m.at<cv::Vec3b>(y, x)[0] = static_cast<uint8_t>((x * 255) / std::max(1, w - 1));
    return m;
}

std::vector<uint8_t> jpeg(const cv::Mat& m, bool progressive = false) {
    std::vector<uint8_t> out;
    const std::vector<int> params = {cv::IMWRITE_JPEG_QUALITY, 90, cv::IMWRITE_JPEG_PROGRESSIVE,
                                     progressive ? 1 : 0};
    if (!cv::imencode(".jpg", m, out, params))
        out.clear();
    return out;
}

// Rewrites the frame header's declared height and width.
bool declare(std::vector<uint8_t>& d, uint16_t w, uint16_t h) {
    for (size_t i = 2; i + 9 < d.size(); ++i)
        if (d[i] == 0xff && d[i + 1] >= 0xc0 && d[i + 1] <= 0xcf && d[i + 1] != 0xc4 &&
            d[i + 1] != 0xc8 && d[i + 1] != 0xcc) { // a frame header, any coding
            d[i + 5] = uint8_t(h >> 8);
            d[i + 6] = uint8_t(h);
            d[i + 7] = uint8_t(w >> 8);
            d[i + 8] = uint8_t(w);
            return true;
        }
    return false;
}

// The JPEG with an EXIF APP1 segment carrying `orientation`, right after SOI as cameras put it.
std::vector<uint8_t> withOrientation(std::vector<uint8_t> d, int orientation) {
    const uint8_t tiff[] = {'M',  'M',
                            0,    42,
                            0,    0,
                            0,    8, // header, IFD0 at 8
                            0,    1, // one entry
                            0x01, 0x12,
                            0,    3,
                            0,    0,
                            0,    1, // Orientation, SHORT, 1
                            0,    uint8_t(orientation),
                            0,    0,
                            0,    0,
                            0,    0}; // value, no next IFD
    std::vector<uint8_t> app1 = {0xff, 0xe1, 0, uint8_t(2 + 6 + sizeof tiff), 'E', 'x', 'i',
                                 'f',  0,    0};
    app1.insert(app1.end(), tiff, tiff + sizeof tiff);
    d.insert(d.begin() + 2, app1.begin(), app1.end());
    return d;
}

// ---------------------------------------------------------------------------------------------
// PNGs built chunk by chunk, for colour types and depths OpenCV does not write.

void appendBe32(std::vector<uint8_t>& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
        out.push_back(uint8_t(v >> shift));
}

void appendChunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data,
                 bool goodCrc = true) {
    appendBe32(out, uint32_t(data.size()));
    std::vector<uint8_t> body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    out.insert(out.end(), body.begin(), body.end());
    const uint32_t crc = uint32_t(crc32(0, body.data(), uInt(body.size())));
    appendBe32(out, goodCrc ? crc : ~crc);
}

struct PngSpec {
    int width = 19;
    int height = 7;
    int depth = 8;
    int colorType = 2;
    bool interlaced = false;
    bool transparency = false;  // a tRNS chunk
    size_t extraPixelBytes = 0; // zero bytes after the last row ("Too much image data")
    std::vector<std::pair<std::string, std::vector<uint8_t>>> damagedAncillary; // bad CRC
};

// Random filtered rows (filter byte 0) for every row of every pass; palette indices stay
// below the palette's size.
std::vector<uint8_t> pngRows(const PngSpec& s) {
    const int channels[7] = {1, 0, 3, 1, 2, 0, 4};
    const int bits = s.depth * channels[s.colorType];
    std::vector<std::pair<int, int>> passes; // (columns, rows)
    if (s.interlaced) {
        const int x0[7] = {0, 4, 0, 2, 0, 1, 0}, dx[7] = {8, 8, 4, 4, 2, 2, 1};
        const int y0[7] = {0, 0, 4, 0, 2, 0, 1}, dy[7] = {8, 8, 8, 4, 4, 2, 2};
        for (int p = 0; p < 7; ++p) {
            const int w = (s.width - x0[p] + dx[p] - 1) / dx[p];
            const int h = (s.height - y0[p] + dy[p] - 1) / dy[p];
            if (w > 0 && h > 0)
                passes.emplace_back(w, h);
        }
    } else {
        passes.emplace_back(s.width, s.height);
    }
    std::vector<uint8_t> raw;
    uint32_t seed = 12345;
    for (const auto& [w, h] : passes)
        for (int y = 0; y < h; ++y) {
            raw.push_back(0);
            for (int i = 0; i < (w * bits + 7) / 8; ++i) {
                seed = seed * 1103515245u + 12345u;
                raw.push_back(uint8_t(seed >> 16));
            }
        }
    raw.insert(raw.end(), s.extraPixelBytes, 0);
    return raw;
}

std::vector<uint8_t> buildPng(const PngSpec& s) {
    std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
    std::vector<uint8_t> ihdr;
    appendBe32(ihdr, uint32_t(s.width));
    appendBe32(ihdr, uint32_t(s.height));
    ihdr.insert(ihdr.end(),
                {uint8_t(s.depth), uint8_t(s.colorType), 0, 0, uint8_t(s.interlaced ? 1 : 0)});
    appendChunk(png, "IHDR", ihdr);
    for (const auto& [type, data] : s.damagedAncillary)
        appendChunk(png, type.c_str(), data, false);
    if (s.colorType == 3) {
        std::vector<uint8_t> palette;
        for (int i = 0; i < (1 << s.depth); ++i)
            palette.insert(palette.end(), {uint8_t(i * 37), uint8_t(255 - i), uint8_t(i * 11)});
        appendChunk(png, "PLTE", palette);
    }
    if (s.transparency) {
        if (s.colorType == 3) // no more entries than the palette has
            appendChunk(png, "tRNS", std::vector<uint8_t>(size_t(std::min(3, 1 << s.depth)), 128));
        else if (s.colorType == 0)
            appendChunk(png, "tRNS", {0, 1});
        else
            appendChunk(png, "tRNS", {0, 1, 0, 2, 0, 3});
    }
    const std::vector<uint8_t> raw = pngRows(s);
    std::vector<uint8_t> packed(compressBound(uLong(raw.size())));
    uLongf packedSize = uLongf(packed.size());
    compress(packed.data(), &packedSize, raw.data(), uLong(raw.size()));
    packed.resize(packedSize);
    appendChunk(png, "IDAT", packed);
    appendChunk(png, "IEND", {});
    return png;
}

// What `work` printed on stderr (the file descriptor: libraries print with fprintf and
// std::cerr alike).
QString stderrOf(const std::function<void()>& work) {
    QTemporaryDir dir;
    const QString errPath = dir.filePath("stderr.txt");
    std::fflush(stderr);
    const int saved = ::dup(2);
    const int err = ::open(QFile::encodeName(errPath).constData(), O_WRONLY | O_CREAT, 0600);
    if (saved < 0 || err < 0)
        return "cannot redirect stderr";
    ::dup2(err, 2);
    ::close(err);
    work();
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    QFile printed(errPath);
    return printed.open(QIODevice::ReadOnly) ? QString::fromLocal8Bit(printed.readAll())
                                             : QString("stderr not captured");
}

// A JPEG written by libjpeg itself: arithmetic coding is something OpenCV cannot ask for.
std::vector<uint8_t> jpegByLibjpeg(const cv::Mat& bgr, bool arithmetic, bool progressive) {
    jpeg_compress_struct c{};
    jpeg_error_mgr err{};
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    unsigned char* buffer = nullptr;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &buffer, &size);
    c.image_width = JDIMENSION(bgr.cols);
    c.image_height = JDIMENSION(bgr.rows);
    c.input_components = 3;
    c.in_color_space = JCS_EXT_BGR;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    c.arith_code = arithmetic ? TRUE : FALSE;
    if (progressive)
        jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = const_cast<JSAMPROW>(bgr.ptr<uint8_t>(int(c.next_scanline)));
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    std::vector<uint8_t> out(buffer, buffer + size);
    jpeg_destroy_compress(&c);
    std::free(buffer);
    return out;
}

QString refusal(const std::vector<uint8_t>& d) {
    try {
        florence::decodeImage(d, "photo.jpg");
    } catch (const florence::ImageError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestDamagedImages : public QObject {
    Q_OBJECT

private slots:
    void wholeJpegsDecode_data();
    void wholeJpegsDecode();
    void cutJpegIsRefused_data();
    void cutJpegIsRefused();
    void sizeBeyondItsDataIsRefused_data();
    void sizeBeyondItsDataIsRefused();
    void arithmeticCodedJpegs_data();
    void arithmeticCodedJpegs();
    void exifOrientationIsRecordedOrKept();
    void messagesSayWhatTheFileIs_data();
    void messagesSayWhatTheFileIs();
    void pngDecodesAsOpenCvDoes_data();
    void pngDecodesAsOpenCvDoes();
    void decodersPrintNothing_data();
    void decodersPrintNothing();
};

void TestDamagedImages::wholeJpegsDecode_data() {
    QTest::addColumn<bool>("progressive");
    QTest::addColumn<bool>("flat");
    QTest::newRow("baseline") << false << false;
    QTest::newRow("progressive") << true << false;
    // Flat images compress to a few bits per block: the size check must not refuse them.
    QTest::newRow("flat baseline") << false << true;
    QTest::newRow("flat progressive") << true << true;
}

void TestDamagedImages::wholeJpegsDecode() {
    QFETCH(bool, progressive);
    QFETCH(bool, flat);
    const cv::Mat m = flat ? cv::Mat(1200, 1600, CV_8UC3, cv::Scalar::all(255)) : scene(320, 240);
    const std::vector<uint8_t> d = jpeg(m, progressive);
    QVERIFY(!d.empty());
    const QString why = refusal(d);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    const florence::RgbImage img = florence::decodeImage(d, "photo.jpg");
    QCOMPARE(img.width, m.cols);
    QCOMPARE(img.height, m.rows);
}

void TestDamagedImages::cutJpegIsRefused_data() {
    QTest::addColumn<bool>("progressive");
    QTest::addColumn<double>("kept");
    QTest::newRow("half") << false << 0.5;
    QTest::newRow("all but the end") << false << 0.97;
    QTest::newRow("progressive, half") << true << 0.5;
}

void TestDamagedImages::cutJpegIsRefused() {
    QFETCH(bool, progressive);
    QFETCH(double, kept);
    std::vector<uint8_t> d = jpeg(scene(320, 240), progressive);
    d.resize(static_cast<size_t>(double(d.size()) * kept));
    // OpenCV alone answers this with the lower part grey and a line on stderr.
    const QString why = refusal(d);
    QVERIFY2(why.startsWith("photo.jpg: the JPEG is damaged"), qPrintable(why));
    QVERIFY2(!why.contains('\n'), qPrintable(why));
}

void TestDamagedImages::sizeBeyondItsDataIsRefused_data() {
    QTest::addColumn<bool>("progressive");
    QTest::newRow("baseline") << false;
    // A progressive frame keeps every coefficient of the image until its last scan: without the
    // bound, libjpeg would allocate them for the declared size before reading a byte of data.
    QTest::newRow("progressive") << true;
}

void TestDamagedImages::sizeBeyondItsDataIsRefused() {
    QFETCH(bool, progressive);
    // A few KB declaring 10000 x 10000 (within the pixel limit): refused before any decoding.
    std::vector<uint8_t> d = jpeg(scene(64, 64), progressive);
    QVERIFY(declare(d, 10000, 10000));
    const QString why = refusal(d);
    QVERIFY2(why.contains("cannot hold the 10000×10000 pixels"), qPrintable(why));
}

void TestDamagedImages::arithmeticCodedJpegs_data() {
    QTest::addColumn<bool>("progressive");
    QTest::newRow("sequential") << false;
    QTest::newRow("progressive") << true;
}

void TestDamagedImages::arithmeticCodedJpegs() {
    QFETCH(bool, progressive);
    const cv::Mat m = scene(320, 240);
    const std::vector<uint8_t> whole = jpegByLibjpeg(m, true, progressive);
    QVERIFY(!whole.empty());
    const QString wholeWhy = refusal(whole);
    QVERIFY2(wholeWhy.isEmpty(), qPrintable(wholeWhy));
    QCOMPARE(florence::decodeImage(whole, "photo.jpg").width, 320);
    // Cut in half: refused, and nothing printed.
    std::vector<uint8_t> cut(whole.begin(), whole.begin() + std::ptrdiff_t(whole.size() / 2));
    QString why;
    QCOMPARE(stderrOf([&] { why = refusal(cut); }), QString());
    QVERIFY2(why.startsWith("photo.jpg: the JPEG is damaged"), qPrintable(why));
    // No bound of the declared size by the data is possible in this coding: a flat picture
    // costs almost nothing (10000 x 10000 takes 211 bytes), so such a file is decoded, and the
    // pixel limit bounds what that costs.
    const std::vector<uint8_t> flat =
        jpegByLibjpeg(cv::Mat(3000, 4000, CV_8UC3, cv::Scalar::all(200)), true, progressive);
    QVERIFY2(flat.size() < 2000, qPrintable(QString::number(flat.size())));
    QCOMPARE(stderrOf([&] { why = refusal(flat); }), QString());
    QVERIFY2(why.isEmpty(), qPrintable(why));
}

void TestDamagedImages::exifOrientationIsRecordedOrKept() {
    // A phone photo stored 400x200 with orientation 6 ("rotate 90° clockwise to view").
    const std::vector<uint8_t> d = withOrientation(jpeg(scene(400, 200)), 6);
    const florence::RgbImage upright = florence::decodeImage(d, "phone.jpg");
    QCOMPARE(upright.width, 200);
    QCOMPARE(upright.height, 400);
    QVERIFY(upright.orientationApplied);
    florence::DecodeOptions asStored;
    asStored.exifRotate = false;
    const florence::RgbImage stored = florence::decodeImage(d, "phone.jpg", asStored);
    QCOMPARE(stored.width, 400);
    QCOMPARE(stored.height, 200);
    QVERIFY(!stored.orientationApplied);
    // Orientation 1 is upright already: nothing applied, nothing to say.
    QVERIFY(!florence::decodeImage(withOrientation(jpeg(scene(40, 20)), 1), "a.jpg")
                 .orientationApplied);
}

void TestDamagedImages::messagesSayWhatTheFileIs_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");
    const std::vector<uint8_t> j = jpeg(scene(16, 16));
    QByteArray pngSigned(reinterpret_cast<const char*>(j.data()), int(j.size()));
    pngSigned.replace(0, 8, QByteArray("\x89PNG\r\n\x1a\n", 8));
    QTest::newRow("JPEG data behind a PNG signature") << pngSigned << "starts like a PNG";
    QByteArray animated("RIFF\x24\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00", 20);
    animated += QByteArray("\x02\x00\x00\x00\x0f\x00\x00\x0f\x00\x00", 10); // animation
    animated += QByteArray("ANIM\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00", 14);
    QTest::newRow("animated WebP") << animated << "animated WebP images are not read";
}

void TestDamagedImages::messagesSayWhatTheFileIs() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    const QString why = refusal(std::vector<uint8_t>(bytes.begin(), bytes.end())); // "photo.jpg: …"
    QVERIFY2(why.contains(expected), qPrintable(why));
    QVERIFY2(!why.contains("BigTIFF"), qPrintable(why));
}

void TestDamagedImages::pngDecodesAsOpenCvDoes_data() {
    QTest::addColumn<int>("colorType");
    QTest::addColumn<int>("depth");
    QTest::addColumn<bool>("interlaced");
    QTest::addColumn<bool>("transparency");
    const std::vector<std::pair<int, std::vector<int>>> depths = {
        {0, {1, 2, 4, 8, 16}}, {2, {8, 16}}, {3, {1, 2, 4, 8}}, {4, {8, 16}}, {6, {8, 16}}};
    for (const auto& [type, ds] : depths)
        for (const int depth : ds)
            for (const bool interlaced : {false, true})
                for (const bool transparency : {false, true}) {
                    if (transparency && (type == 4 || type == 6))
                        continue; // they carry alpha already
                    const QByteArray tag = QStringLiteral("type %1, %2-bit%3%4")
                                               .arg(type)
                                               .arg(depth)
                                               .arg(interlaced ? ", interlaced" : "")
                                               .arg(transparency ? ", tRNS" : "")
                                               .toLatin1();
                    QTest::newRow(tag.constData()) << type << depth << interlaced << transparency;
                }
}

void TestDamagedImages::pngDecodesAsOpenCvDoes() {
    QFETCH(int, colorType);
    QFETCH(int, depth);
    QFETCH(bool, interlaced);
    QFETCH(bool, transparency);
    PngSpec spec;
    spec.colorType = colorType;
    spec.depth = depth;
    spec.interlaced = interlaced;
    spec.transparency = transparency;
    const std::vector<uint8_t> png = buildPng(spec);
    const cv::Mat expected = cv::imdecode(png, cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR |
                                                   cv::IMREAD_IGNORE_ORIENTATION);
    QVERIFY(!expected.empty());
    florence::detail::checkPng(png, "x.png");
    const cv::Mat ours = florence::detail::decodePng(png, "x.png");
    QCOMPARE(ours.type(), expected.type());
    QCOMPARE(ours.size(), expected.size());
    QCOMPARE(cv::norm(ours, expected, cv::NORM_INF), 0.0);
}

void TestDamagedImages::decodersPrintNothing_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("problem"); // "" = decodes
    auto bytes = [](const std::vector<uint8_t>& v) {
        return QByteArray(reinterpret_cast<const char*>(v.data()), qsizetype(v.size()));
    };
    PngSpec extra;
    extra.extraPixelBytes = 300; // libpng: "IDAT: Too much image data"
    QTest::newRow("PNG, pixel data after the last row") << bytes(buildPng(extra)) << "";
    // libpng would print "zTXt: CRC error" and an iCCP warning while decoding the pixels.
    PngSpec metadata;
    metadata.damagedAncillary = {{"iCCP", {'p', 0, 0, 'x', 'y'}}, {"zTXt", {'k', 0, 0, 'z'}}};
    QTest::newRow("PNG, damaged colour profile and text") << bytes(buildPng(metadata)) << "";
    // A BMP declaring 4000 x 3000 24-bit pixels with a few KB of them.
    QByteArray bmp("BM", 2);
    auto le32 = [](QByteArray& b, uint32_t v) {
        for (int i = 0; i < 4; ++i)
            b.append(char((v >> (8 * i)) & 0xff));
    };
    le32(bmp, 54 + 3000);
    le32(bmp, 0);
    le32(bmp, 54);
    le32(bmp, 40);
    le32(bmp, 4000);
    le32(bmp, 3000);
    bmp.append("\x01\x00\x18\x00", 4); // one plane, 24 bits
    for (int i = 0; i < 6; ++i)
        le32(bmp, 0); // no compression, sizes and colours left to the reader
    bmp.append(QByteArray(3000, '\x40'));
    QTest::newRow("BMP, rows missing") << bmp << "the BMP is damaged: 3054 bytes cannot hold";
    // A TIFF whose one strip lies past the end of the file: OpenCV logs a warning and prints
    // its exception on std::cerr before returning nothing.
    QByteArray tiff("II*\x00\x08\x00\x00\x00", 8);
    const uint16_t entries[][2] = {{256, 4}, {257, 4}, {258, 3}, {259, 3},
                                   {262, 3}, {273, 4}, {277, 3}, {279, 4}};
    const uint32_t values[] = {2000, 1500, 8, 1, 1, 1u << 20, 1, 2000 * 1500};
    tiff.append(char(8));
    tiff.append(char(0));
    for (int i = 0; i < 8; ++i) {
        tiff.append(char(entries[i][0] & 0xff));
        tiff.append(char(entries[i][0] >> 8));
        tiff.append(char(entries[i][1]));
        tiff.append(char(0));
        le32(tiff, 1);
        le32(tiff, values[i]);
    }
    le32(tiff, 0);
    tiff.append(QByteArray(100, '\0'));
    QTest::newRow("TIFF, strip past the end") << tiff << "the TIFF file is damaged";
}

void TestDamagedImages::decodersPrintNothing() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, problem);
    const std::vector<uint8_t> d(bytes.begin(), bytes.end());
    QString why;
    const QString printed = stderrOf([&] { why = refusal(d); });
    QCOMPARE(printed, QString());
    if (problem.isEmpty()) {
        QVERIFY2(why.isEmpty(), qPrintable(why));
    } else {
        QVERIFY2(why.startsWith("photo.jpg: " + problem), qPrintable(why));
        QVERIFY2(!why.contains('\n'), qPrintable(why));
    }
}

QTEST_GUILESS_MAIN(TestDamagedImages)
#include "TestDamagedImages.moc"
