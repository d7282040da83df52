// Damaged images are refused, never answered (engine/image/JpegCheck.cpp): a JPEG cut short or
// one declaring far more pixels than its data can hold gives one line naming the file, while
// whole JPEGs, baseline and progressive, flat or busy, still decode. And a photo's EXIF
// orientation is applied and said to be, or left alone when asked (image/Orientation.cpp).
// Fixtures are made here.
#include <florence/image.h>

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdio>
#include <fcntl.h>
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
        if (d[i] == 0xff && (d[i + 1] == 0xc0 || d[i + 1] == 0xc2)) {
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
    void sizeBeyondItsDataIsRefused();
    void exifOrientationIsRecordedOrKept();
    void messagesSayWhatTheFileIs_data();
    void messagesSayWhatTheFileIs();
    void damagedPngMetadataIsNotPrinted();
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

void TestDamagedImages::sizeBeyondItsDataIsRefused() {
    // A few KB declaring 10000 x 10000 (within the pixel limit): refused before any decoding.
    std::vector<uint8_t> d = jpeg(scene(64, 64));
    QVERIFY(declare(d, 10000, 10000));
    const QString why = refusal(d);
    QVERIFY2(why.contains("cannot hold the 10000×10000 pixels"), qPrintable(why));
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

void TestDamagedImages::damagedPngMetadataIsNotPrinted() {
    // A zTXt chunk whose checksum fails: libpng would print "zTXt: CRC error" on stderr while
    // OpenCV decodes the image. The pixels are what matter and they are whole: decoded, quietly.
    std::vector<uint8_t> png;
    QVERIFY(cv::imencode(".png", scene(24, 16), png));
    const uint8_t ztxt[] = {0, 0, 0, 4, 'z', 'T', 'X', 't', 'a', 0, 0, 'x', 0xde, 0xad, 0xbe, 0xef};
    png.insert(png.begin() + 33, ztxt, ztxt + sizeof ztxt); // after the signature and IHDR
    QTemporaryDir dir;
    const QString errPath = dir.filePath("stderr.txt");
    std::fflush(stderr);
    const int saved = ::dup(2);
    const int err = ::open(QFile::encodeName(errPath).constData(), O_WRONLY | O_CREAT, 0600);
    QVERIFY(saved >= 0 && err >= 0);
    ::dup2(err, 2);
    ::close(err);
    QString why;
    florence::RgbImage img;
    try {
        img = florence::decodeImage(png, "notes.png");
    } catch (const florence::ImageError& e) {
        why = QString::fromStdString(e.what());
    }
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    QCOMPARE(img.width, 24);
    QFile printed(errPath);
    QVERIFY(printed.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromLocal8Bit(printed.readAll()), QString());
}

QTEST_GUILESS_MAIN(TestDamagedImages)
#include "TestDamagedImages.moc"
