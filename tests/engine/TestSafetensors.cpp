// Safetensors: the fixture the parity tests read, a round trip through the writer for every
// dtype, the half-precision conversions, and the damaged files a user may point the app at.
#include <florence/safetensors.h>

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <limits>

using namespace florence;

namespace {

QString fixturePath() {
    return QStringLiteral(FLORENCE_TEST_DATA_DIR "/florence2-tiny-random/reference.safetensors");
}

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(T));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

SafetensorsTensor makeTensor(const std::string& dtype, std::vector<int64_t> shape,
                             std::vector<uint8_t> data) {
    SafetensorsTensor t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.data = std::move(data);
    return t;
}

QByteArray headerFile(const QByteArray& json, const QByteArray& data) {
    QByteArray file;
    const quint64 size = quint64(json.size());
    for (int i = 0; i < 8; ++i)
        file.append(char((size >> (8 * i)) & 0xff));
    return file + json + data;
}

} // namespace

class TestSafetensors : public QObject {
    Q_OBJECT

private slots:
    void readsFixture();
    void roundTrip();
    void halfToFloatValues_data();
    void halfToFloatValues();
    void bfloat16Values();
    void conversionsRejectWrongKind();
    void damagedFilesNameTheFile_data();
    void damagedFilesNameTheFile();
    void truncatedFixtureCopies_data();
    void truncatedFixtureCopies();
};

void TestSafetensors::readsFixture() {
    const SafetensorsFile f = SafetensorsFile::open(fixturePath().toStdString());
    QVERIFY(f.contains("pixel_values"));
    QVERIFY(f.contains("image_features"));
    QVERIFY(!f.contains("no such tensor"));
    const SafetensorsTensor& pv = f.tensor("pixel_values");
    QCOMPARE(pv.dtype, std::string("F16"));
    QCOMPARE(pv.shape, (std::vector<int64_t>{1, 3, 768, 768}));
    const std::vector<float> values = f.toFloat("pixel_values");
    QCOMPARE(values.size(), size_t(3 * 768 * 768));
    // Normalized pixels lie within (0 - 0.485) / 0.229 … (1 - 0.406) / 0.225.
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    QVERIFY2(*lo >= -2.12f && *hi <= 2.65f, qPrintable(QString("%1 %2").arg(*lo).arg(*hi)));
    QVERIFY(*hi - *lo > 3.0f); // a real photograph, not zeros
    QCOMPARE(f.tensor("image_features").shape, (std::vector<int64_t>{1, 577, 64}));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, f.tensor("no such tensor"));
}

void TestSafetensors::roundTrip() {
    std::map<std::string, SafetensorsTensor> tensors;
    tensors["f32"] =
        makeTensor("F32", {2, 3}, bytesOf(std::vector<float>{1, -2, 3.5f, 0, 1e-8f, -1e8f}));
    tensors["f64"] = makeTensor("F64", {2}, bytesOf(std::vector<double>{0.25, -7.5}));
    // 1.0, -2.0, 65504 (largest), 2^-24 (smallest subnormal)
    tensors["f16"] =
        makeTensor("F16", {4}, bytesOf(std::vector<uint16_t>{0x3c00, 0xc000, 0x7bff, 0x0001}));
    tensors["bf16"] = makeTensor("BF16", {2}, bytesOf(std::vector<uint16_t>{0x3f80, 0xc0a0}));
    tensors["i64"] = makeTensor("I64", {3}, bytesOf(std::vector<int64_t>{-1, 0, int64_t(1) << 40}));
    tensors["i32"] = makeTensor("I32", {2}, bytesOf(std::vector<int32_t>{-100000, 7}));
    tensors["i16"] = makeTensor("I16", {2}, bytesOf(std::vector<int16_t>{-300, 300}));
    tensors["i8"] = makeTensor("I8", {2}, bytesOf(std::vector<int8_t>{-128, 127}));
    tensors["u8"] = makeTensor("U8", {1, 3}, {0, 128, 255});
    tensors["bool"] = makeTensor("BOOL", {2}, {1, 0});
    tensors["scalar"] = makeTensor("F32", {}, bytesOf(std::vector<float>{42}));
    tensors["empty"] = makeTensor("F32", {0, 5}, {});

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QStringLiteral("t.safetensors")).toStdString();
    writeSafetensors(path, tensors);

    QFile raw(QString::fromStdString(path));
    QVERIFY(raw.open(QIODevice::ReadOnly));
    const QByteArray bytes = raw.readAll();
    quint64 headerSize = 0;
    std::memcpy(&headerSize, bytes.constData(), 8);
    QCOMPARE((8 + headerSize) % 8, quint64(0)); // data starts aligned

    const SafetensorsFile f = SafetensorsFile::open(path);
    QCOMPARE(f.names().size(), tensors.size());
    for (const auto& [name, t] : tensors) {
        QCOMPARE(f.tensor(name).dtype, t.dtype);
        QCOMPARE(f.tensor(name).shape, t.shape);
        QCOMPARE(f.tensor(name).data, t.data);
    }
    QCOMPARE(f.toFloat("f32"), (std::vector<float>{1, -2, 3.5f, 0, 1e-8f, -1e8f}));
    QCOMPARE(f.toFloat("f64"), (std::vector<float>{0.25f, -7.5f}));
    QCOMPARE(f.toFloat("f16"), (std::vector<float>{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24)}));
    QCOMPARE(f.toFloat("bf16"), (std::vector<float>{1.0f, -5.0f}));
    QCOMPARE(f.toInt64("i64"), (std::vector<int64_t>{-1, 0, int64_t(1) << 40}));
    QCOMPARE(f.toInt64("i32"), (std::vector<int64_t>{-100000, 7}));
    QCOMPARE(f.toInt64("i16"), (std::vector<int64_t>{-300, 300}));
    QCOMPARE(f.toInt64("i8"), (std::vector<int64_t>{-128, 127}));
    QCOMPARE(f.toInt64("u8"), (std::vector<int64_t>{0, 128, 255}));
    QCOMPARE(f.toInt64("bool"), (std::vector<int64_t>{1, 0}));
    QCOMPARE(f.toFloat("scalar"), std::vector<float>{42});
    QCOMPARE(f.tensor("scalar").numel(), int64_t(1));
    QVERIFY(f.toFloat("empty").empty());

    // A tensor whose bytes contradict its shape must not be written.
    std::map<std::string, SafetensorsTensor> bad;
    bad["x"] = makeTensor("F32", {3}, {0, 0, 0, 0});
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, writeSafetensors(path, bad));
}

void TestSafetensors::halfToFloatValues_data() {
    QTest::addColumn<uint>("half");
    QTest::addColumn<float>("expected");
    QTest::newRow("zero") << 0x0000u << 0.0f;
    QTest::newRow("one") << 0x3c00u << 1.0f;
    QTest::newRow("minus two") << 0xc000u << -2.0f;
    QTest::newRow("one third") << 0x3555u << 0.333251953125f;
    QTest::newRow("max") << 0x7bffu << 65504.0f;
    QTest::newRow("smallest normal") << 0x0400u << std::ldexp(1.0f, -14);
    QTest::newRow("largest subnormal") << 0x03ffu << std::ldexp(1023.0f, -24);
    QTest::newRow("smallest subnormal") << 0x0001u << std::ldexp(1.0f, -24);
    QTest::newRow("negative subnormal") << 0x8200u << -std::ldexp(1.0f, -15);
    QTest::newRow("inf") << 0x7c00u << std::numeric_limits<float>::infinity();
    QTest::newRow("-inf") << 0xfc00u << -std::numeric_limits<float>::infinity();
}

void TestSafetensors::halfToFloatValues() {
    QFETCH(uint, half);
    QFETCH(float, expected);
    QCOMPARE(halfToFloat(uint16_t(half)), expected);
    if (half == 0x8000u)
        QVERIFY(std::signbit(halfToFloat(0x8000)));
}

void TestSafetensors::bfloat16Values() {
    QCOMPARE(bfloat16ToFloat(0x3f80), 1.0f);
    QCOMPARE(bfloat16ToFloat(0xc2f7), -123.5f);
    QVERIFY(std::isnan(bfloat16ToFloat(0x7fc0)));
    QVERIFY(std::isnan(halfToFloat(0x7e00)));
    QVERIFY(std::isnan(halfToFloat(0xfc01)));
    QVERIFY(std::signbit(halfToFloat(0x8000)) && halfToFloat(0x8000) == 0.0f);
}

void TestSafetensors::conversionsRejectWrongKind() {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("k.safetensors")).toStdString();
    std::map<std::string, SafetensorsTensor> tensors;
    tensors["ids"] = makeTensor("I64", {1}, bytesOf(std::vector<int64_t>{5}));
    tensors["x"] = makeTensor("F32", {1}, bytesOf(std::vector<float>{5}));
    writeSafetensors(path, tensors);
    const SafetensorsFile f = SafetensorsFile::open(path);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, f.toFloat("ids"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, f.toInt64("x"));
}

void TestSafetensors::damagedFilesNameTheFile_data() {
    QTest::addColumn<QByteArray>("content"); // null: the file is not created
    QTest::addColumn<QString>("problem");
    QTest::newRow("missing") << QByteArray() << "does not exist";
    QTest::newRow("empty") << QByteArray("") << "truncated";
    QTest::newRow("shorter than size field") << QByteArray("\x10\0\0", 3) << "truncated";
    QTest::newRow("header cut short")
        << headerFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "").left(30)
        << "truncated";
    QTest::newRow("absurd header size")
        << QByteArray("\xff\xff\xff\xff\xff\xff\x00\x00{}", 10) << "implausible";
    QTest::newRow("not json") << headerFile("this is not json", "") << "JSON";
    QTest::newRow("json array") << headerFile("[1,2]", "") << "not a JSON object";
    QTest::newRow("data cut short")
        << headerFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                      QByteArray(4, 'x'))
        << "outside the data";
    QTest::newRow("offsets reversed")
        << headerFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})",
                      QByteArray(8, 'x'))
        << "outside the data";
    QTest::newRow("size contradicts shape")
        << headerFile(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                      QByteArray(8, 'x'))
        << "need 12";
    QTest::newRow("huge shape")
        << headerFile(
               R"({"a":{"dtype":"F64","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})",
               QByteArray(8, 'x'))
        << "implausible shape";
    // Holds no bytes, but its sides multiply past any integer (UBSan caught the overflow).
    QTest::newRow("overflowing sides with a zero")
        << headerFile(
               R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})",
               "")
        << "implausible shape";
    QTest::newRow("overlapping tensors")
        << headerFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                      QByteArray(8, 'x'))
        << "overlap";
    QTest::newRow("unknown dtype")
        << headerFile(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", "x")
        << "unknown dtype";
    QTest::newRow("negative dim")
        << headerFile(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", "x")
        << "invalid shape";
    QTest::newRow("missing offsets")
        << headerFile(R"({"a":{"dtype":"U8","shape":[1]}})", "x") << "data_offsets";
}

void TestSafetensors::damagedFilesNameTheFile() {
    QFETCH(QByteArray, content);
    QFETCH(QString, problem);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("damaged.safetensors"));
    if (!content.isNull()) {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(content);
    }
    try {
        SafetensorsFile::open(path.toStdString());
        QFAIL("no error");
    } catch (const std::runtime_error& e) {
        const QString message = QString::fromUtf8(e.what());
        QVERIFY2(message.contains(path), qPrintable(message));
        QVERIFY2(message.contains(problem, Qt::CaseInsensitive), qPrintable(message));
    }
}

void TestSafetensors::truncatedFixtureCopies_data() {
    QTest::addColumn<double>("fraction");
    QTest::newRow("header only") << 0.0001;
    QTest::newRow("half") << 0.5;
    QTest::newRow("last byte missing") << -1.0;
}

void TestSafetensors::truncatedFixtureCopies() {
    // A download that stopped early is the common real-world damage.
    QFETCH(double, fraction);
    QFile source(fixturePath());
    QVERIFY(source.open(QIODevice::ReadOnly));
    const QByteArray all = source.readAll();
    const qsizetype keep = fraction < 0 ? all.size() - 1 : qsizetype(all.size() * fraction);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("partial.safetensors"));
    QFile out(path);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(all.left(keep));
    out.close();
    try {
        SafetensorsFile::open(path.toStdString());
        QFAIL("no error");
    } catch (const std::runtime_error& e) {
        const QString message = QString::fromUtf8(e.what());
        QVERIFY2(message.contains(path), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("truncated")), qPrintable(message));
    }
}

QTEST_GUILESS_MAIN(TestSafetensors)
#include "TestSafetensors.moc"
