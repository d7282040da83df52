// Image files an attacker would hand the app, and damaged ones: each gives one clear error at
// once, naming the file, before any decoder allocates the canvas it declares or a read blocks;
// libpng's own messages never reach stderr; GIFs are refused with a reason.
#include <florence/image.h>

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace florence;

namespace {

QString dataPath(const QString& name) {
    return QStringLiteral(FLORENCE_SOURCE_DIR) + QStringLiteral("/tests/engine/data/") + name;
}

void writeBytes(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    QCOMPARE(file.write(bytes), bytes.size());
}

} // namespace

class TestImageFaults : public QObject {
    Q_OBJECT

private slots:
    void hostileFiles_data();
    void hostileFiles();
    void gifIsRefusedClearly_data();
    void gifIsRefusedClearly();
    void damagedPngIsReportedQuietly_data();
    void damagedPngIsReportedQuietly();
};

// Files an attacker would hand the app: each gives one clear error at once, before
// any decoder allocates the canvas it declares or a read blocks.
void TestImageFaults::hostileFiles_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("problem");
    QTest::newRow("FIFO") << "fifo"
                          << "FIFO";
    QTest::newRow("symlink to /dev/zero") << "devzero"
                                          << "device";
    QTest::newRow("JPEG 2000 declaring 30000x30000") << "jp2"
                                                     << "not an image in a supported format";
    QTest::newRow("Radiance HDR declaring 12000x12000") << "hdr"
                                                        << "not an image in a supported format";
    QTest::newRow("OpenEXR signature") << "exr"
                                       << "not an image in a supported format";
    QTest::newRow("PPM") << "ppm"
                         << "not an image in a supported format";
    QTest::newRow("TIFF declaring 2^32-1 squared") << "tiff-huge"
                                                   << "too large";
    QTest::newRow("BMP of height INT_MIN") << "bmp-intmin"
                                           << "too large";
    QTest::newRow("WebP VP8X declaring 2^24 squared") << "webp-huge"
                                                      << "too large";
    QTest::newRow("BigTIFF") << "bigtiff"
                             << "not an image";
}

void TestImageFaults::hostileFiles() {
    QFETCH(QString, kind);
    QFETCH(QString, problem);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("hostile-" + kind);
    if (kind == "fifo") {
        QCOMPARE(::mkfifo(QFile::encodeName(path).constData(), 0600), 0);
    } else if (kind == "devzero") {
        QVERIFY(QFile::link("/dev/zero", path));
    } else if (kind == "jp2") {
        // The attacker's 3 KB JPEG 2000: signature and file-type boxes, an image header box
        // and a codestream whose SIZ marker declare 30000x30000.
        auto be32 = [](uint32_t v) {
            QByteArray b;
            for (int shift = 24; shift >= 0; shift -= 8)
                b.append(char((v >> shift) & 0xff));
            return b;
        };
        QByteArray j("\x00\x00\x00\x0cjP  \x0d\x0a\x87\x0a", 12);
        j.append("\x00\x00\x00\x14"
                 "ftypjp2 \x00\x00\x00\x00jp2 ",
                 20);
        j.append("\x00\x00\x00\x2d"
                 "jp2h\x00\x00\x00\x16ihdr",
                 16);
        j.append(be32(30000) + be32(30000) + QByteArray("\x00\x03\x07\x07\x00\x00", 6));
        j.append("\x00\x00\x00\x0f"
                 "colr\x01\x00\x00\x00\x00\x00\x10",
                 15);
        j.append("\x00\x00\x00\x00jp2c\xff\x4f\xff\x51\x00\x2f\x00\x00", 16);
        j.append(be32(30000) + be32(30000) + QByteArray(3000, '\x00'));
        writeBytes(path, j);
    } else if (kind == "hdr") {
        writeBytes(path, QByteArray("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 12000 +X 12000\n") +
                             QByteArray(64, '\x02'));
    } else if (kind == "exr") {
        writeBytes(path, QByteArray("\x76\x2f\x31\x01\x02\x00\x00\x00", 8) + QByteArray(300, 0));
    } else if (kind == "ppm") {
        writeBytes(path, QByteArray("P6\n30000 30000\n255\n") + QByteArray(30, 'x'));
    } else if (kind == "tiff-huge") {
        // Little-endian TIFF, one IFD with LONG width and height of 0xffffffff.
        QByteArray t("II\x2a\x00\x08\x00\x00\x00\x02\x00", 10);
        t.append("\x00\x01\x04\x00\x01\x00\x00\x00\xff\xff\xff\xff", 12);
        t.append("\x01\x01\x04\x00\x01\x00\x00\x00\xff\xff\xff\xff", 12);
        t.append("\x00\x00\x00\x00", 4);
        writeBytes(path, t);
    } else if (kind == "bmp-intmin") {
        QByteArray b("BM", 2);
        b.append(QByteArray(12, 0));
        b.append("\x28\x00\x00\x00", 4);                 // BITMAPINFOHEADER
        b.append("\x10\x00\x00\x00\x00\x00\x00\x80", 8); // width 16, height INT_MIN
        b.append(QByteArray(40, 0));
        writeBytes(path, b);
    } else if (kind == "webp-huge") {
        QByteArray w("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00", 20);
        w.append("\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff", 10);
        writeBytes(path, w);
    } else if (kind == "bigtiff") {
        writeBytes(path, QByteArray("II\x2b\x00\x08\x00\x00\x00", 8) + QByteArray(64, 0));
    }
    try {
        loadImage(path.toStdString());
        QFAIL("no error");
    } catch (const ImageError& e) {
        const QString message = QString::fromStdString(e.what());
        QVERIFY2(message.contains(path), qPrintable(message));
        QVERIFY2(message.contains(problem, Qt::CaseInsensitive), qPrintable(message));
        QVERIFY2(!message.contains('\n'), qPrintable(message));
    }
}

namespace {

void appendBe32(QByteArray& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
        out.append(char((v >> shift) & 0xff));
}

uint32_t be32At(const QByteArray& b, int at) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
        v = (v << 8) | uint8_t(b[at + i]);
    return v;
}

void appendChunk(QByteArray& png, const char* type, const QByteArray& data) {
    appendBe32(png, uint32_t(data.size()));
    const QByteArray body = QByteArray(type, 4) + data;
    png.append(body);
    appendBe32(png, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(body.constData()),
                                   uInt(body.size()))));
}

// A gray 8-bit PNG written by hand (OpenCV cannot write interlaced ones), with correct
// checksums whatever `raw` holds: the filtered rows, Adam7 passes one after another.
QByteArray grayPng(int w, int h, bool interlaced, const QByteArray& raw, int depth = 8) {
    QByteArray ihdr;
    appendBe32(ihdr, uint32_t(w));
    appendBe32(ihdr, uint32_t(h));
    ihdr.append(char(depth)).append(char(0)).append(char(0)).append(char(0));
    ihdr.append(char(interlaced ? 1 : 0));
    uLongf size = compressBound(uLong(raw.size()));
    QByteArray z(int(size), 0);
    compress(reinterpret_cast<Bytef*>(z.data()), &size,
             reinterpret_cast<const Bytef*>(raw.constData()), uLong(raw.size()));
    z.resize(int(size));
    QByteArray png("\x89PNG\r\n\x1a\n", 8);
    appendChunk(png, "IHDR", ihdr);
    appendChunk(png, "IDAT", z);
    appendChunk(png, "IEND", QByteArray());
    return png;
}

// Filter byte 0 and a ramp for each row of each pass.
QByteArray grayRows(int w, int h, bool interlaced) {
    static const int x0[7] = {0, 4, 0, 2, 0, 1, 0}, dx[7] = {8, 8, 4, 4, 2, 2, 1};
    static const int y0[7] = {0, 0, 4, 0, 2, 0, 1}, dy[7] = {8, 8, 8, 4, 4, 2, 2};
    QByteArray raw;
    for (int p = 0; p < (interlaced ? 7 : 1); ++p) {
        const int pw = interlaced ? (w - x0[p] + dx[p] - 1) / dx[p] : w;
        const int ph = interlaced ? (h - y0[p] + dy[p] - 1) / dy[p] : h;
        if (pw <= 0 || ph <= 0)
            continue;
        for (int y = 0; y < ph; ++y) {
            raw.append(char(0));
            for (int x = 0; x < pw; ++x)
                raw.append(char((x * 13 + y * 7 + p) & 0xff));
        }
    }
    return raw;
}

} // namespace

// libpng prints "libpng error: …" on stderr; the engine checks the PNG first, so a damaged one
// gets our one-line message and nothing else is printed. Hand-made files with valid checksums
// reach the checks past the chunk structure; the interlaced ones must still decode.
void TestImageFaults::damagedPngIsReportedQuietly_data() {
    QTest::addColumn<QByteArray>("png");
    QTest::addColumn<QString>("problem"); // "" = decodes
    QTest::addColumn<int>("secondPixel"); // when it decodes: pixel (1, 0)
    const QByteArray rows = grayRows(13, 11, false);
    const QByteArray passes = grayRows(13, 11, true);
    // Pixel (1, 0) is the second of a row, or the first of Adam7's sixth pass.
    QTest::newRow("valid") << grayPng(13, 11, false, rows) << "" << 13;
    QTest::newRow("valid interlaced") << grayPng(13, 11, true, passes) << "" << 5;
    QTest::newRow("valid interlaced, one row")
        << grayPng(13, 1, true, grayRows(13, 1, true)) << "" << 5;
    QTest::newRow("trailing pixel data ignored")
        << grayPng(13, 11, false, rows + QByteArray(20, 0)) << "" << 13;
    QTest::newRow("cut") << grayPng(13, 11, false, rows).left(60) << "ends before its last chunk"
                         << 0;
    QByteArray flipped = grayPng(13, 11, false, rows);
    flipped[45] = char(flipped[45] ^ 0x55);
    QTest::newRow("checksum") << flipped << "fails its checksum" << 0;
    QTest::newRow("too little data")
        << grayPng(13, 11, false, rows.left(rows.size() - 5)) << "less pixel data" << 0;
    QTest::newRow("interlaced, too little data")
        << grayPng(13, 11, true, passes.left(passes.size() - 1)) << "less pixel data" << 0;
    QByteArray badFilter = rows;
    badFilter[14 * 3] = char(9);
    QTest::newRow("filter type 9")
        << grayPng(13, 11, false, badFilter) << "unknown filter type" << 0;
    QTest::newRow("depth 3") << grayPng(13, 11, false, rows, 3) << "header is invalid" << 0;
    QByteArray noDeflate = grayPng(13, 11, false, rows);
    const int idat = int(noDeflate.indexOf("IDAT"));
    noDeflate.replace(idat + 4, 4, QByteArray("\x78\x9c\xff\xff", 4)); // invalid block type
    const QByteArray body = noDeflate.mid(idat, 4 + int(be32At(noDeflate, idat - 4)));
    QByteArray crc;
    appendBe32(crc, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(body.constData()),
                                   uInt(body.size()))));
    noDeflate.replace(idat + body.size(), 4, crc);
    QTest::newRow("corrupt deflate") << noDeflate << "compressed pixel data is corrupt" << 0;
}

void TestImageFaults::damagedPngIsReportedQuietly() {
    QFETCH(QByteArray, png);
    QFETCH(QString, problem);
    QFETCH(int, secondPixel);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("damaged.png");
    writeBytes(path, png);
    // What the libraries print goes to a file for the length of the call.
    const QString errPath = dir.filePath("stderr.txt");
    fflush(stderr);
    const int saved = ::dup(2);
    const int err = ::open(QFile::encodeName(errPath).constData(), O_WRONLY | O_CREAT, 0600);
    QVERIFY(saved >= 0 && err >= 0);
    ::dup2(err, 2);
    ::close(err);
    QString message;
    RgbImage image;
    try {
        image = loadImage(path.toStdString());
    } catch (const ImageError& e) {
        message = QString::fromStdString(e.what());
    }
    fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    QFile printed(errPath);
    QVERIFY(printed.open(QIODevice::ReadOnly));
    // Nothing of libpng's own, whether the image opens (pixel data after the last row, "Too
    // much image data", is ignored quietly) or not (the message is ours alone).
    QCOMPARE(QString::fromLocal8Bit(printed.readAll()), QString());
    if (problem.isEmpty()) {
        QVERIFY2(message.isEmpty(), qPrintable(message));
        QCOMPARE(image.width, 13);
        QVERIFY(image.height == 11 || image.height == 1);
        QCOMPARE(int(image.pixels[3 * 1]), secondPixel);
    } else {
        QVERIFY2(message.contains(path) && message.contains("PNG file is damaged") &&
                     message.contains(problem),
                 qPrintable(message));
    }
}

// GIF is not decoded (this OpenCV has no GIF reader): a normal one and one declaring a
// 65535×65535 canvas both get the same one-line message, from a file or from memory.
void TestImageFaults::gifIsRefusedClearly_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("normal 16x12") << "small.gif";
    QTest::newRow("canvas 65535x65535") << "bomb.gif";
}

void TestImageFaults::gifIsRefusedClearly() {
    QFETCH(QString, file);
    const QString path = dataPath(file);
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    QVERIFY(bytes.startsWith("GIF89a"));
    for (const bool fromFile : {true, false}) {
        try {
            if (fromFile)
                loadImage(path.toStdString());
            else
                decodeImage(std::vector<uint8_t>(bytes.begin(), bytes.end()), "dropped image");
            QFAIL("no error");
        } catch (const ImageError& e) {
            const QString message = QString::fromStdString(e.what());
            QVERIFY2(message.contains(fromFile ? path : QStringLiteral("dropped image")),
                     qPrintable(message));
            QVERIFY2(message.contains("GIF images are not read"), qPrintable(message));
            QVERIFY2(message.contains("PNG"), qPrintable(message));
            QVERIFY2(!message.contains('\n'), qPrintable(message));
        }
    }
}

QTEST_GUILESS_MAIN(TestImageFaults)
#include "TestImageFaults.moc"
