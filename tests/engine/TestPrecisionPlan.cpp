// Which precision the encoders and the decoder load in, which int8 quantization runs and what
// the model reports (engine/runtime/PrecisionPlan.h), for every precision asked for on every
// kind of machine and package. The expected plans are written out row by row.
#include "runtime/PrecisionPlan.h"

#include <QtTest>

using namespace florence;

Q_DECLARE_METATYPE(florence::Precision)
Q_DECLARE_METATYPE(florence::EncoderInt8)

namespace {

constexpr Precision kF32 = Precision::Float32;
constexpr Precision kBF16 = Precision::BFloat16;
constexpr Precision kInt8 = Precision::Int8;
constexpr EncoderInt8 kNone = EncoderInt8::None;
constexpr EncoderInt8 kLow = EncoderInt8::LowActivations;
constexpr EncoderInt8 kFloat = EncoderInt8::FloatActivations;

// The facts, by name.
// linear_int8 on the own int8 GEMM (the AVX2 kernel class, AVX-512 with VNNI), or on oneDNN's.
constexpr bool kOwnGemm = true, kOneDnn = false;
constexpr bool kAccurate = true, kInaccurate = false;
constexpr bool kGemm = true, kNoGemm = false;
constexpr bool kCode = true, kOldCode = false;
constexpr bool kWide = true; // encoders wider than Florence-2-base's
// The plan's flags, by name.
constexpr bool kQuantizeDecoder = true, kKeepDecoder = false;
constexpr bool kNote = true, kNoNote = false;

QString name(Precision p) {
    switch (p) {
    case Precision::Float32:
        return QStringLiteral("float32");
    case Precision::BFloat16:
        return QStringLiteral("bfloat16");
    case Precision::Int8:
        return QStringLiteral("int8");
    }
    return QStringLiteral("?");
}

QString name(EncoderInt8 q) {
    switch (q) {
    case EncoderInt8::None:
        return QStringLiteral("none");
    case EncoderInt8::LowActivations:
        return QStringLiteral("low activations");
    case EncoderInt8::FloatActivations:
        return QStringLiteral("float activations");
    }
    return QStringLiteral("?");
}

void row(Precision requested, bool own, bool accurate, bool gemm, bool code, Precision encoders,
         Precision decoder, EncoderInt8 encoderInt8, bool quantizeDecoder, Precision report,
         bool note, bool wide = false) {
    const QString title =
        QStringLiteral("%1, %2, bf16 %3, %4, %5%6")
            .arg(name(requested), own ? "own int8 GEMM" : "oneDNN",
                 accurate ? "accurate" : "inaccurate", gemm ? "int8 GEMM" : "no int8 GEMM",
                 code ? "float-activation code" : "older code", wide ? ", wider than base" : "");
    QTest::newRow(qPrintable(title))
        << requested << own << accurate << gemm << code << wide << encoders << decoder
        << encoderInt8 << quantizeDecoder << report << note;
}

} // namespace

class TestPrecisionPlan : public QObject {
    Q_OBJECT
private slots:
    void plan_data();
    void plan();
};

void TestPrecisionPlan::plan_data() {
    QTest::addColumn<Precision>("requested");
    QTest::addColumn<bool>("own");
    QTest::addColumn<bool>("accurate");
    QTest::addColumn<bool>("gemm");
    QTest::addColumn<bool>("code");
    QTest::addColumn<bool>("wide");
    QTest::addColumn<Precision>("encoders");
    QTest::addColumn<Precision>("decoder");
    QTest::addColumn<EncoderInt8>("encoderInt8");
    QTest::addColumn<bool>("quantizeDecoder");
    QTest::addColumn<Precision>("report");
    QTest::addColumn<bool>("note");

    // float32: everything as exported, whatever the machine or the package.
    // Each row: asked for, the int8 GEMM's kind, bfloat16 products, int8 GEMM, package code; then
    // the plan: encoders, decoder, int8 encoders, int8 decoder, encoders reported, note.
    row(kF32, kOneDnn, kAccurate, kGemm, kCode, kF32, kF32, kNone, kKeepDecoder, kF32, kNoNote);
    row(kF32, kOneDnn, kAccurate, kGemm, kOldCode, kF32, kF32, kNone, kKeepDecoder, kF32, kNoNote);
    row(kF32, kOneDnn, kAccurate, kNoGemm, kCode, kF32, kF32, kNone, kKeepDecoder, kF32, kNoNote);
    row(kF32, kOneDnn, kAccurate, kNoGemm, kOldCode, kF32, kF32, kNone, kKeepDecoder, kF32,
        kNoNote);
    row(kF32, kOneDnn, kInaccurate, kGemm, kCode, kF32, kF32, kNone, kKeepDecoder, kF32, kNoNote);
    row(kF32, kOneDnn, kInaccurate, kGemm, kOldCode, kF32, kF32, kNone, kKeepDecoder, kF32,
        kNoNote);
    row(kF32, kOneDnn, kInaccurate, kNoGemm, kCode, kF32, kF32, kNone, kKeepDecoder, kF32, kNoNote);
    row(kF32, kOneDnn, kInaccurate, kNoGemm, kOldCode, kF32, kF32, kNone, kKeepDecoder, kF32,
        kNoNote);
    row(kF32, kOwnGemm, kAccurate, kGemm, kCode, kF32, kF32, kNone, kKeepDecoder, kF32, kNoNote);
    row(kF32, kOwnGemm, kAccurate, kGemm, kOldCode, kF32, kF32, kNone, kKeepDecoder, kF32, kNoNote);
    row(kF32, kOwnGemm, kAccurate, kNoGemm, kCode, kF32, kF32, kNone, kKeepDecoder, kF32, kNoNote);
    row(kF32, kOwnGemm, kAccurate, kNoGemm, kOldCode, kF32, kF32, kNone, kKeepDecoder, kF32,
        kNoNote);
    row(kF32, kOwnGemm, kInaccurate, kGemm, kCode, kF32, kF32, kNone, kKeepDecoder, kF32, kNoNote);
    row(kF32, kOwnGemm, kInaccurate, kGemm, kOldCode, kF32, kF32, kNone, kKeepDecoder, kF32,
        kNoNote);
    row(kF32, kOwnGemm, kInaccurate, kNoGemm, kCode, kF32, kF32, kNone, kKeepDecoder, kF32,
        kNoNote);
    row(kF32, kOwnGemm, kInaccurate, kNoGemm, kOldCode, kF32, kF32, kNone, kKeepDecoder, kF32,
        kNoNote);

    // bfloat16: the whole model where bfloat16 products sum accurately, on either kernel class;
    // elsewhere the encoders stay float32 (with the note) and only the decoder takes it.
    row(kBF16, kOneDnn, kAccurate, kGemm, kCode, kBF16, kBF16, kNone, kKeepDecoder, kBF16, kNoNote);
    row(kBF16, kOneDnn, kAccurate, kGemm, kOldCode, kBF16, kBF16, kNone, kKeepDecoder, kBF16,
        kNoNote);
    row(kBF16, kOneDnn, kAccurate, kNoGemm, kCode, kBF16, kBF16, kNone, kKeepDecoder, kBF16,
        kNoNote);
    row(kBF16, kOneDnn, kAccurate, kNoGemm, kOldCode, kBF16, kBF16, kNone, kKeepDecoder, kBF16,
        kNoNote);
    row(kBF16, kOneDnn, kInaccurate, kGemm, kCode, kF32, kBF16, kNone, kKeepDecoder, kF32, kNote);
    row(kBF16, kOneDnn, kInaccurate, kGemm, kOldCode, kF32, kBF16, kNone, kKeepDecoder, kF32,
        kNote);
    row(kBF16, kOneDnn, kInaccurate, kNoGemm, kCode, kF32, kBF16, kNone, kKeepDecoder, kF32, kNote);
    row(kBF16, kOneDnn, kInaccurate, kNoGemm, kOldCode, kF32, kBF16, kNone, kKeepDecoder, kF32,
        kNote);
    row(kBF16, kOwnGemm, kAccurate, kGemm, kCode, kBF16, kBF16, kNone, kKeepDecoder, kBF16,
        kNoNote);
    row(kBF16, kOwnGemm, kAccurate, kGemm, kOldCode, kBF16, kBF16, kNone, kKeepDecoder, kBF16,
        kNoNote);
    row(kBF16, kOwnGemm, kAccurate, kNoGemm, kCode, kBF16, kBF16, kNone, kKeepDecoder, kBF16,
        kNoNote);
    row(kBF16, kOwnGemm, kAccurate, kNoGemm, kOldCode, kBF16, kBF16, kNone, kKeepDecoder, kBF16,
        kNoNote);
    row(kBF16, kOwnGemm, kInaccurate, kGemm, kCode, kF32, kBF16, kNone, kKeepDecoder, kF32, kNote);
    row(kBF16, kOwnGemm, kInaccurate, kGemm, kOldCode, kF32, kBF16, kNone, kKeepDecoder, kF32,
        kNote);
    row(kBF16, kOwnGemm, kInaccurate, kNoGemm, kCode, kF32, kBF16, kNone, kKeepDecoder, kF32,
        kNote);
    row(kBF16, kOwnGemm, kInaccurate, kNoGemm, kOldCode, kF32, kBF16, kNone, kKeepDecoder, kF32,
        kNote);

    // int8 on oneDNN's int8 GEMM (AVX-512 without VNNI): bfloat16 encoders with int8 large products
    // and an int8 decoder where bfloat16 products are accurate (reported int8 even when the
    // quantization skips both encoders, as for Florence-2-large or older code); elsewhere the
    // encoders stay float32 without int8 products, with the note, and only the decoder is int8.
    row(kInt8, kOneDnn, kAccurate, kGemm, kCode, kBF16, kF32, kLow, kQuantizeDecoder, kInt8,
        kNoNote);
    row(kInt8, kOneDnn, kAccurate, kGemm, kOldCode, kBF16, kF32, kLow, kQuantizeDecoder, kInt8,
        kNoNote);
    row(kInt8, kOneDnn, kAccurate, kNoGemm, kCode, kBF16, kF32, kLow, kQuantizeDecoder, kInt8,
        kNoNote);
    row(kInt8, kOneDnn, kAccurate, kNoGemm, kOldCode, kBF16, kF32, kLow, kQuantizeDecoder, kInt8,
        kNoNote);
    row(kInt8, kOneDnn, kInaccurate, kGemm, kCode, kF32, kF32, kNone, kQuantizeDecoder, kF32,
        kNote);
    row(kInt8, kOneDnn, kInaccurate, kGemm, kOldCode, kF32, kF32, kNone, kQuantizeDecoder, kF32,
        kNote);
    row(kInt8, kOneDnn, kInaccurate, kNoGemm, kCode, kF32, kF32, kNone, kQuantizeDecoder, kF32,
        kNote);
    row(kInt8, kOneDnn, kInaccurate, kNoGemm, kOldCode, kF32, kF32, kNone, kQuantizeDecoder, kF32,
        kNote);

    // int8 on the own int8 GEMM (the AVX2 kernel class, AVX-512 with VNNI): float32 encoders
    // whatever the bfloat16 products, their large products on it only when LibTorch has it and the
    // package's code takes float32 activations; reported float32 until an encoder is quantized,
    // always with the note. Older code where bfloat16 products are accurate: as on oneDNN.
    row(kInt8, kOwnGemm, kAccurate, kGemm, kCode, kF32, kF32, kFloat, kQuantizeDecoder, kF32,
        kNote);
    row(kInt8, kOwnGemm, kAccurate, kGemm, kOldCode, kBF16, kF32, kLow, kQuantizeDecoder, kInt8,
        kNoNote);
    row(kInt8, kOwnGemm, kAccurate, kNoGemm, kCode, kF32, kF32, kNone, kQuantizeDecoder, kF32,
        kNote);
    row(kInt8, kOwnGemm, kAccurate, kNoGemm, kOldCode, kBF16, kF32, kLow, kQuantizeDecoder, kInt8,
        kNoNote);
    row(kInt8, kOwnGemm, kInaccurate, kGemm, kCode, kF32, kF32, kFloat, kQuantizeDecoder, kF32,
        kNote);
    row(kInt8, kOwnGemm, kInaccurate, kGemm, kOldCode, kF32, kF32, kNone, kQuantizeDecoder, kF32,
        kNote);
    row(kInt8, kOwnGemm, kInaccurate, kNoGemm, kCode, kF32, kF32, kNone, kQuantizeDecoder, kF32,
        kNote);
    row(kInt8, kOwnGemm, kInaccurate, kNoGemm, kOldCode, kF32, kF32, kNone, kQuantizeDecoder, kF32,
        kNote);

    // Encoders wider than Florence-2-base's take no int8 products: int8 loads them as bfloat16
    // does (bfloat16 where its products are accurate, reported int8 as on oneDNN), whatever the
    // int8 GEMM; the other precisions do not look at the width.
    row(kInt8, kOwnGemm, kAccurate, kGemm, kCode, kBF16, kF32, kLow, kQuantizeDecoder, kInt8,
        kNoNote, kWide);
    row(kInt8, kOwnGemm, kInaccurate, kGemm, kCode, kF32, kF32, kNone, kQuantizeDecoder, kF32,
        kNote, kWide);
    row(kInt8, kOneDnn, kAccurate, kGemm, kCode, kBF16, kF32, kLow, kQuantizeDecoder, kInt8,
        kNoNote, kWide);
    row(kInt8, kOneDnn, kInaccurate, kGemm, kCode, kF32, kF32, kNone, kQuantizeDecoder, kF32, kNote,
        kWide);
    row(kBF16, kOwnGemm, kAccurate, kGemm, kCode, kBF16, kBF16, kNone, kKeepDecoder, kBF16, kNoNote,
        kWide);
    row(kF32, kOwnGemm, kAccurate, kGemm, kCode, kF32, kF32, kNone, kKeepDecoder, kF32, kNoNote,
        kWide);
}

void TestPrecisionPlan::plan() {
    QFETCH(Precision, requested);
    QFETCH(bool, own);
    QFETCH(bool, accurate);
    QFETCH(bool, gemm);
    QFETCH(bool, code);
    QFETCH(bool, wide);
    QFETCH(Precision, encoders);
    QFETCH(Precision, decoder);
    QFETCH(EncoderInt8, encoderInt8);
    QFETCH(bool, quantizeDecoder);
    QFETCH(Precision, report);
    QFETCH(bool, note);
    PrecisionFacts facts;
    facts.ownInt8Gemm = own;
    facts.bfloat16ProductsAccurate = accurate;
    facts.int8GemmAvailable = gemm;
    facts.floatActivationInt8Code = code;
    facts.encodersTooWideForInt8 = wide;
    const PrecisionPlan plan = planPrecision(requested, facts);
    QCOMPARE(name(plan.encoders), name(encoders));
    QCOMPARE(name(plan.decoder), name(decoder));
    QCOMPARE(name(plan.encoderInt8), name(encoderInt8));
    QCOMPARE(plan.quantizeDecoder, quantizeDecoder);
    QCOMPARE(name(plan.encoderReport), name(report));
    QCOMPARE(plan.floatEncodersNote, note);
    // Model::load plans the loading for this exporter's code and plans again with the package's:
    // the decoder loads as it will run, and an earlier package's encoders can only turn from
    // float32 to bfloat16 (converted after loading), never the other way.
    facts.floatActivationInt8Code = true;
    const PrecisionPlan loading = planPrecision(requested, facts);
    QCOMPARE(name(loading.decoder), name(decoder));
    if (loading.encoders != encoders)
        QVERIFY(loading.encoders == Precision::Float32 && encoders == Precision::BFloat16 && !code);
}

QTEST_GUILESS_MAIN(TestPrecisionPlan)
#include "TestPrecisionPlan.moc"
