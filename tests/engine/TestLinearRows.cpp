// florence::linear_rows, the operator every decoding step of an exported model runs its linear
// layers with (engine/ops/): its products against LibTorch's, for the shapes the kernels treat
// specially (output columns not a multiple of four, inner sizes not a multiple of 16 or 32,
// one to four rows), float32, bfloat16 and int8 weights, with and without bias, strided inputs, on
// every kernel path the CPU has (AVX-512, AVX2 + FMA, LibTorch; rows for a path the CPU lacks are
// skipped); and that the TorchScript interpreter finds it, as loading a package needs.
#include "Avx2Kernels.h"
#include "GemmInt8.h"
#include "KernelPath.h"
#include "Ops.h"
#include "RowKernels.h"
#include "engine/KernelPaths.h"

#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/runtime/operator.h>
#include <torch/torch.h>

#include <QtTest>

namespace {

using florence::ops::KernelPath;
using florence::test::kPaths;
using florence::test::OnPath;

// florence::linear_rows, florence::linear_int8 and linear_int8_gelu share one signature.
using LinearOp = at::Tensor(const at::Tensor&, const at::Tensor&, const c10::optional<at::Tensor>&);

c10::TypedOperatorHandle<LinearOp> linearOp(const char* name) {
    return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<LinearOp>();
}

at::Tensor linearRows(const at::Tensor& x, const at::Tensor& w,
                      const c10::optional<at::Tensor>& b) {
    static const auto op = linearOp("florence::linear_rows");
    return op.call(x, w, b);
}

at::Tensor linearInt8(const at::Tensor& x, const at::Tensor& w,
                      const c10::optional<at::Tensor>& b) {
    static const auto op = linearOp("florence::linear_int8");
    return op.call(x, w, b);
}

at::Tensor linearInt8Gelu(const at::Tensor& x, const at::Tensor& w,
                          const c10::optional<at::Tensor>& b) {
    static const auto op = linearOp("florence::linear_int8_gelu");
    return op.call(x, w, b);
}

// Largest difference relative to the largest magnitude of the reference.
double relativeError(const at::Tensor& got, const at::Tensor& want) {
    const double scale = std::max(1e-30, want.abs().max().item<double>());
    return (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>() / scale;
}

// Each kernel path the CPU has of the two with own int8 kernels (AVX-512, AVX2), with each
// variant of the own int8 GEMM (GemmInt8.h) the CPU can run.
std::vector<std::pair<KernelPath, florence::ops::Int8Gemm>> pathsAndGemms() {
    std::vector<std::pair<KernelPath, florence::ops::Int8Gemm>> out;
    for (KernelPath path : {KernelPath::Avx512, KernelPath::Avx2})
        for (auto gemm : {florence::ops::Int8Gemm::Avx2, florence::ops::Int8Gemm::AvxVnni})
            if (florence::ops::kernelPathSupported(path) && florence::ops::int8GemmSupported(gemm))
                out.emplace_back(path, gemm);
    return out;
}

// The int8 GEMM variant set while it lives, the one before restored after.
struct OnGemm {
    explicit OnGemm(florence::ops::Int8Gemm gemm) { florence::ops::setInt8Gemm(gemm); }
    ~OnGemm() { florence::ops::setInt8Gemm(before); }
    OnGemm(const OnGemm&) = delete;
    OnGemm& operator=(const OnGemm&) = delete;
    const florence::ops::Int8Gemm before = florence::ops::int8Gemm();
};

} // namespace

class TestLinearRows : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void matchesLibTorch_data();
    void matchesLibTorch();
    void int8MatchesItsFloatValue_data();
    void int8MatchesItsFloatValue();
    void int8KeepsTheProduct();
    void encoderInt8KeepsTheProduct();
    void encoderInt8WithinItsQuantization_data();
    void encoderInt8WithinItsQuantization();
    void encoderInt8FollowsItsWeight();
    void encoderInt8GeluIsGeluOfTheProduct();
    void int16KernelSumsAtTheLimit();
    void int8RowsWithNaNGiveNoNumber();
    void pathIsChosenAndNamed();
    void keepsLeadingDimensions();
    void moreRowsThanTheKernels();
    void refusesMismatchedShapes();
    void interpreterFindsTheOperator();
};

void TestLinearRows::initTestCase() {
    torch::manual_seed(7);
    // At least two threads, so the larger shapes are split between them as in the app (on one
    // core too).
    at::set_num_threads(std::max(2, at::get_num_threads()));
    qInfo("row kernels: %s, library %s", florence::ops::rowKernelName().c_str(),
          florence_ops_library_path());
    QVERIFY(QFileInfo::exists(QString::fromUtf8(florence_ops_library_path())));
}

void TestLinearRows::matchesLibTorch_data() {
    QTest::addColumn<int>("path");
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("rows");
    QTest::addColumn<bool>("bias");
    QTest::addColumn<bool>("strided");
    struct Shape {
        int n, k;
    };
    // The kernels take one column at a time in steps of four (float32: 4 x 16 weights, bfloat16:
    // 4 x 32): k % 64 (float32) and k % 128 (bfloat16) != 0 leave single steps, k % 16 and k % 32
    // a masked tail; k < 16 is all tail; n from 1 to 5003 gives one chunk or many over the
    // threads.
    const Shape shapes[] = {{1, 1}, {3, 7}, {37, 45}, {64, 768}, {769, 3071}, {5003, 129}};
    for (KernelPath path : kPaths)
        for (bool bf16 : {false, true})
            for (const Shape& s : shapes)
                for (int rows = 1; rows <= 4; ++rows)
                    for (bool bias : {false, true}) {
                        const bool strided = (rows + s.n) % 2 == 1;
                        QTest::addRow("%s: %s %dx%d, %d rows%s%s",
                                      florence::ops::kernelPathName(path),
                                      bf16 ? "bfloat16" : "float32", s.n, s.k, rows,
                                      bias ? ", bias" : "", strided ? ", strided x" : "")
                            << int(path) << bf16 << s.n << s.k << rows << bias << strided;
                    }
}

void TestLinearRows::matchesLibTorch() {
    QFETCH(int, path);
    QFETCH(bool, bf16);
    QFETCH(int, n);
    QFETCH(int, k);
    QFETCH(int, rows);
    QFETCH(bool, bias);
    QFETCH(bool, strided);
    SKIP_UNLESS_SUPPORTED(KernelPath(path));
    const OnPath onPath{KernelPath(path)};
    c10::InferenceMode guard;
    at::Tensor w = torch::randn({n, k});
    if (bf16)
        w = w.to(at::kBFloat16);
    const at::Tensor b = torch::randn({n});
    // A strided x: every other column of a wider matrix.
    const at::Tensor x =
        strided ? torch::randn({rows, 2 * k}).slice(1, 0, 2 * k, 2) : torch::randn({rows, k});
    QCOMPARE(x.is_contiguous(), !strided);
    const at::Tensor y = linearRows(x, w, bias ? c10::optional<at::Tensor>(b) : c10::nullopt);
    QCOMPARE(y.scalar_type(), at::kFloat);
    QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{rows, n}));

    // Against LibTorch's matrix-vector product of the same (bfloat16-exact) weights: both sum
    // float32 products, in different orders. On the LibTorch path bfloat16 weights go to
    // LibTorch's bfloat16 linear, which rounds x and the result to bfloat16 (8 bits of mantissa:
    // measured 0.0002-0.0047 on an AVX2 host), so there the bound is bfloat16's rounding.
    const at::Tensor wf = w.to(at::kFloat);
    std::vector<at::Tensor> ref;
    for (int r = 0; r < rows; ++r)
        ref.push_back(bias ? at::addmv(b, wf, x[r]) : at::mv(wf, x[r]));
    const double err = relativeError(y, at::stack(ref));
    const double bound = bf16 && KernelPath(path) == KernelPath::Torch ? 1.5e-2 : 2e-5;
    QVERIFY2(err < bound, qPrintable(QString("relative error %1 against at::mv").arg(err)));

    if (bf16) {
        // Against what the model did before (F.linear in bfloat16, x rounded to bfloat16): the
        // operator keeps x in float32, so it differs by x's rounding, no more.
        const at::Tensor old =
            at::linear(x.to(at::kBFloat16), w, bias ? b.to(at::kBFloat16) : at::Tensor());
        const double oldErr = relativeError(y, old);
        QVERIFY2(oldErr < 2e-2,
                 qPrintable(QString("relative error %1 against F.linear").arg(oldErr)));
    }
}

// Per-channel int8 as the engine quantizes (engine/runtime/Quantize.cpp, quantizeInt8): symmetric,
// zero points 0.
at::Tensor quantize(const at::Tensor& w) {
    const at::Tensor scales = (w.abs().amax({1}).to(at::kDouble) / 127.0).clamp_min(1e-30);
    return at::quantize_per_channel(w, scales, at::zeros({w.size(0)}, at::kLong), 0, at::kQInt8);
}

void TestLinearRows::int8MatchesItsFloatValue_data() {
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("rows");
    QTest::addColumn<bool>("bias");
    struct Shape {
        int n, k;
    };
    // The int8 kernels read 64 weights per step (AVX2 and AVX-VNNI: 32), four steps (VNNI: two)
    // at a time: k = 100, 129 and 3071 leave single steps and a tail (AVX-512: masked, AVX2: a
    // zero-padded copy), k < 32 is all tail. Five rows and more (a prompt, the uncached path, a
    // batch) go through weights widened block by block, or with a kernel that quantizes x
    // (AVX-512 VNNI, AVX-VNNI, AVX2 int16) in blocks of four rows (5, 6, 7 and 17 leave one to
    // three), with AVX-512 VNNI four columns at a time (n % 4 != 0: single columns).
    // The AVX2 int16 kernel sums blocks of 4096: k = 8200 takes two and a tail.
    const Shape shapes[] = {{1, 1},    {3, 7},      {37, 45},    {64, 768},
                            {13, 100}, {769, 3071}, {5003, 129}, {7, 8200}};
    for (KernelPath path : kPaths)
        for (const Shape& s : shapes)
            for (int rows : {1, 2, 3, 4, 5, 6, 7, 17})
                for (bool bias : {false, true})
                    QTest::addRow("%s: %dx%d, %d rows%s", florence::ops::kernelPathName(path), s.n,
                                  s.k, rows, bias ? ", bias" : "")
                        << int(path) << s.n << s.k << rows << bias;
}

void TestLinearRows::int8MatchesItsFloatValue() {
    // The product with int8 weights is the product with the float32 values they stand for
    // (int8 times scale): the quantization is the only error int8 mode adds, apart from the VNNI
    // kernel's 8-bit activations, which are checked against their own exact value.
    QFETCH(int, path);
    QFETCH(int, n);
    QFETCH(int, k);
    QFETCH(int, rows);
    QFETCH(bool, bias);
    SKIP_UNLESS_SUPPORTED(KernelPath(path));
    const OnPath onPath{KernelPath(path)};
    c10::InferenceMode guard;
    const at::Tensor w = quantize(torch::randn({n, k}));
    QCOMPARE(w.scalar_type(), at::kQInt8);
    const at::Tensor b = torch::randn({n});
    const at::Tensor x = torch::randn({rows, k});
    const at::Tensor y = linearRows(x, w, bias ? c10::optional<at::Tensor>(b) : c10::nullopt);
    QCOMPARE(y.scalar_type(), at::kFloat);
    QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{rows, n}));
    const at::Tensor wd = w.dequantize().to(at::kDouble);
    const at::Tensor bd = bias ? b.to(at::kDouble) : at::Tensor();
    const at::Tensor want = at::linear(x.to(at::kDouble), wd, bd);
    // With VNNI (AVX-512, or AVX-VNNI on the AVX2 path) the activations are quantized (largest
    // |x| / 510 per element at most); on either path without VNNI to int16 (largest |x| / 8190 at
    // most); else float32 products of the widened weights.
    const bool widenAsked = qgetenv("FLORENCE_INT8_KERNEL") == "widen";
    const bool avx2Step = KernelPath(path) == KernelPath::Avx2 && !widenAsked;
    const bool avxVnni = avx2Step && florence::ops::int8Gemm() == florence::ops::Int8Gemm::AvxVnni;
    const bool avx512Vnni =
        KernelPath(path) == KernelPath::Avx512 && florence::ops::haveAvx512Vnni() && !widenAsked;
    const bool vnni = avx512Vnni || avxVnni;
    const bool int16 = KernelPath(path) != KernelPath::Torch && !widenAsked && !vnni;
    const std::string kernel = florence::ops::int8StepKernelName();
    QCOMPARE(kernel, std::string(vnni    ? (avxVnni ? "AVX-VNNI" : "AVX-512 VNNI")
                                 : int16 ? "int16"
                                 : KernelPath(path) == KernelPath::Torch ? "LibTorch"
                                                                         : "widened"));
    if (qgetenv("FLORENCE_AVX512_VNNI") == "0")
        QVERIFY(!florence::ops::haveAvx512Vnni() &&
                !florence::ops::int8GemmSupported(florence::ops::Int8Gemm::Avx512Vnni));
    const double err = relativeError(y, want);
    QVERIFY2(err < (vnni    ? 2e-2
                    : int16 ? 2e-3
                            : 2e-5),
             qPrintable(QString("relative error %1 against the dequantized weights").arg(err)));
    if (KernelPath(path) == KernelPath::Torch)
        return;
    if (rows > 4) {
        // With a kernel that quantizes x, five rows and more are each what the kernel gives that
        // row alone (the uncached path and batches agree with cached decoding).
        for (int r = 0; (vnni || int16) && r < rows; ++r) {
            const at::Tensor one = linearRows(x.slice(0, r, r + 1), w,
                                              bias ? c10::optional<at::Tensor>(b) : c10::nullopt);
            QVERIFY2(at::equal(one, y.slice(0, r, r + 1)), qPrintable(QString("row %1").arg(r)));
        }
        return;
    }

    // Each kernel on its own, over a column range that starts and ends off a group of four.
    const int64_t begin = n > 5 ? 1 : 0, end = n > 5 ? n - 1 : n;
    const auto* wp = reinterpret_cast<const int8_t*>(w.data_ptr<c10::qint8>());
    const at::Tensor scales = w.q_per_channel_scales().contiguous();
    const float* bp = bias ? b.data_ptr<float>() : nullptr;
    at::Tensor widened = at::zeros({rows, n});
    const auto widen = KernelPath(path) == KernelPath::Avx512 ? florence::ops::rowsInt8Avx512
                                                              : florence::ops::rowsInt8Avx2;
    widen(x.data_ptr<float>(), rows, wp, scales.data_ptr<double>(), bp, widened.data_ptr<float>(),
          n, k, begin, end);
    const double widenErr = relativeError(widened.slice(1, begin, end), want.slice(1, begin, end));
    QVERIFY2(widenErr < 2e-5,
             qPrintable(QString("widening kernel: relative error %1").arg(widenErr)));
    if (KernelPath(path) != KernelPath::Torch) {
        // The int16 kernel (both paths run it where the CPU has no VNNI) against x as it sees it
        // (value times scale), and each row what it gives alone.
        florence::ops::Int16Input xq;
        florence::ops::prepareInt16Input(x.data_ptr<float>(), rows, k, xq);
        QCOMPARE(xq.stride % 32, int64_t(0));
        at::Tensor xv = at::zeros({rows, k}, at::kDouble);
        for (int r = 0; r < rows; ++r)
            for (int i = 0; i < k; ++i)
                xv[r][i] = double(xq.values[size_t(r * xq.stride + i)]) * xq.scales[size_t(r)];
        QVERIFY(relativeError(xv, x) < 1.0 / 8000); // half a step of 4095
        at::Tensor viaInt16 = at::zeros({rows, n});
        florence::ops::rowsInt8Int16Avx2(xq, 0, rows, wp, scales.data_ptr<double>(), bp,
                                         viaInt16.data_ptr<float>(), n, k, begin, end);
        const double err = relativeError(viaInt16.slice(1, begin, end),
                                         at::linear(xv, wd, bd).slice(1, begin, end));
        QVERIFY2(err < 2e-6, qPrintable(QString("int16 kernel: relative error %1").arg(err)));
        for (int r = 0; r < rows && rows > 1; ++r) {
            florence::ops::Int16Input one;
            florence::ops::prepareInt16Input(x[r].data_ptr<float>(), 1, k, one);
            at::Tensor alone = at::zeros({1, n});
            florence::ops::rowsInt8Int16Avx2(one, 0, 1, wp, scales.data_ptr<double>(), bp,
                                             alone.data_ptr<float>(), n, k, begin, end);
            QVERIFY2(at::equal(alone, viaInt16.slice(0, r, r + 1)),
                     qPrintable(QString("int16 kernel: row %1 alone differs").arg(r)));
        }
    }
    if (KernelPath(path) == KernelPath::Avx2 &&
        florence::ops::int8GemmSupported(florence::ops::Int8Gemm::AvxVnni)) {
        // The AVX-VNNI step kernel against x as it sees it: sign times magnitude times scale.
        florence::ops::AvxVnniInput xq;
        florence::ops::prepareAvxVnniInput(x.data_ptr<float>(), rows, k, xq);
        at::Tensor xv = at::zeros({rows, k}, at::kDouble);
        for (int r = 0; r < rows; ++r)
            for (int i = 0; i < k; ++i)
                xv[r][i] = double(xq.sign[size_t(r * xq.stride + i)]) *
                           xq.magnitude[size_t(r * xq.stride + i)] * double(xq.scales[size_t(r)]);
        QVERIFY(relativeError(xv, x) < 1.0 / 500); // half a step of 255
        at::Tensor viaVnni = at::zeros({rows, n});
        florence::ops::rowsInt8AvxVnni(xq, 0, rows, wp, scales.data_ptr<double>(), bp,
                                       viaVnni.data_ptr<float>(), n, k, begin, end);
        const double err = relativeError(viaVnni.slice(1, begin, end),
                                         at::linear(xv, wd, bd).slice(1, begin, end));
        QVERIFY2(err < 2e-5, qPrintable(QString("AVX-VNNI kernel: relative error %1").arg(err)));
    }
    if (KernelPath(path) != KernelPath::Avx512 || !florence::ops::haveAvx512Vnni())
        return;
    florence::ops::VnniInput xq;
    florence::ops::prepareVnniInput(x.data_ptr<float>(), rows, k, xq);
    // x as the VNNI kernel sees it: sign times magnitude times the row's scale.
    at::Tensor xv = at::zeros({rows, k}, at::kDouble);
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < k; ++i) {
            const bool neg = (xq.signs[size_t(r * (xq.stride / 64) + i / 64)] >> (i % 64)) & 1;
            xv[r][i] = (neg ? -1.0 : 1.0) * xq.magnitude[size_t(r * xq.stride + i)] *
                       double(xq.scales[size_t(r)]);
        }
    QVERIFY(relativeError(xv, x) < 1.0 / 500); // half a step of 255
    at::Tensor viaVnni = at::zeros({rows, n});
    florence::ops::rowsInt8Vnni(xq, 0, rows, wp, scales.data_ptr<double>(), bp,
                                viaVnni.data_ptr<float>(), n, k, begin, end);
    const double vnniErr =
        relativeError(viaVnni.slice(1, begin, end), at::linear(xv, wd, bd).slice(1, begin, end));
    QVERIFY2(vnniErr < 2e-5, qPrintable(QString("VNNI kernel: relative error %1").arg(vnniErr)));
}

void TestLinearRows::int8KeepsTheProduct() {
    // Against the float32 weights themselves: per-channel int8 keeps a decoding step's product
    // (cosine of the outputs well above the 0.999 the int8 mode's logits must reach).
    c10::InferenceMode guard;
    const at::Tensor w = torch::randn({512, 768}) * 0.02;
    const at::Tensor x = torch::randn({2, 1, 768});
    const at::Tensor y = linearRows(x, quantize(w), c10::nullopt);
    QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{2, 1, 512}));
    const at::Tensor ref = at::linear(x, w);
    const double cos = at::cosine_similarity(y.flatten(), ref.flatten(), 0).item<double>();
    QVERIFY2(cos > 0.9999, qPrintable(QString("cosine %1").arg(cos, 0, 'f', 6)));
    // Weights that are not per output channel are refused, not computed wrongly.
    const at::Tensor perTensor = at::quantize_per_tensor(w, 0.001, 0, at::kQInt8);
    QVERIFY_THROWS_EXCEPTION(c10::Error, linearRows(x, perTensor, c10::nullopt));
}

void TestLinearRows::encoderInt8KeepsTheProduct() {
    // florence::linear_int8, the encoders' large products in the int8 mode (the own int8 GEMM on
    // the AVX2 path and on AVX-512 with VNNI, else oneDNN's): an encoder-sized product against
    // the float32 weights, float32 and bfloat16 input, on each path the CPU has.
    c10::InferenceMode guard;
    const at::Tensor w = torch::randn({1024, 512}) * 0.02;
    const at::Tensor b = torch::randn({1024});
    const at::Tensor x = torch::randn({2, 300, 512});
    const at::Tensor ref = at::linear(x, w, b);
    for (KernelPath path : {KernelPath::Avx512, KernelPath::Avx2}) {
        if (!florence::ops::kernelPathSupported(path))
            continue;
        const OnPath onPath{path};
        for (const at::Tensor& in : {x, x.to(at::kBFloat16)}) {
            const at::Tensor y = linearInt8(in, quantize(w), b);
            QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{2, 300, 1024}));
            QCOMPARE(y.scalar_type(), at::kFloat);
            const double cos = at::cosine_similarity(y.flatten(), ref.flatten(), 0).item<double>();
            QVERIFY2(cos > 0.999, qPrintable(QString("%1: cosine %2")
                                                 .arg(florence::ops::kernelPathName(path))
                                                 .arg(cos, 0, 'f', 6)));
        }
    }
    const at::Tensor perTensor = at::quantize_per_tensor(w, 0.001, 0, at::kQInt8);
    QVERIFY_THROWS_EXCEPTION(c10::Error, linearInt8(x, perTensor, b));
    QVERIFY_THROWS_EXCEPTION(c10::Error, linearInt8(x, w, b)); // not int8
}

void TestLinearRows::encoderInt8WithinItsQuantization_data() {
    QTest::addColumn<int>("gemm");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("rows");
    QTest::addColumn<bool>("bias");
    QTest::addColumn<bool>("strided");
    struct Shape {
        int n, k;
    };
    // The kernels take 16 output columns (AVX-512 VNNI: one or two panels of 16) and four k at
    // a time, 4, 6 or 8 rows to a tile and 64, 96 or 96 rows to a quantized block: n % 16, an
    // odd number of panels, k % 4 and k % 32 (the quantizing loop) leave tails, and 1-7, 65
    // and 130 rows partial tiles and blocks.
    const Shape shapes[] = {{1, 1}, {27, 37}, {16, 4}, {100, 130}, {384, 128}, {129, 515}};
    for (auto gemm : {florence::ops::Int8Gemm::Avx2, florence::ops::Int8Gemm::AvxVnni,
                      florence::ops::Int8Gemm::Avx512Vnni})
        for (const Shape& s : shapes)
            for (int rows : {1, 3, 4, 7, 65, 130})
                for (bool bias : {false, true})
                    QTest::addRow("%s: %dx%d, %d rows%s", florence::ops::int8GemmName(gemm), s.n,
                                  s.k, rows, bias ? ", bias" : "")
                        << int(gemm) << s.n << s.k << rows << bias << (rows == 7);
}

void TestLinearRows::encoderInt8WithinItsQuantization() {
    // The own int8 GEMM (GemmInt8.h) against the product with the float32 values the int8
    // weights stand for, on each variant the CPU has (AVX2 and AVX-VNNI on the AVX2 kernel path,
    // AVX-512 VNNI on the AVX-512 path): each row of x is quantized to 0..127 (AVX2) or 0..255
    // (VNNI) steps of s_r = its range / steps, so every element is off by at most s_r / 2 and
    // output (r, c) by at most s_r / 2 * sum_k |W_ck| (plus float32's rounding). Rows of very
    // different magnitudes each keep their own precision.
    QFETCH(int, gemm);
    QFETCH(int, n);
    QFETCH(int, k);
    QFETCH(int, rows);
    QFETCH(bool, bias);
    QFETCH(bool, strided);
    const auto variant = florence::ops::Int8Gemm(gemm);
    const bool wide = variant == florence::ops::Int8Gemm::Avx512Vnni;
    const KernelPath path = wide ? KernelPath::Avx512 : KernelPath::Avx2;
    SKIP_UNLESS_SUPPORTED(path);
    if (!florence::ops::int8GemmSupported(variant))
        QSKIP(qPrintable(QString("this CPU cannot run the %1 int8 GEMM")
                             .arg(florence::ops::int8GemmName(variant))));
    const OnPath onPath{path};
    const florence::ops::Int8Gemm before = florence::ops::int8Gemm();
    if (!wide)
        florence::ops::setInt8Gemm(variant);
    QCOMPARE(QString::fromStdString(florence::ops::int8GemmKind()),
             QString(florence::ops::int8GemmName(variant)));
    c10::InferenceMode guard;
    const at::Tensor w = quantize(torch::randn({n, k}) * 0.05);
    const at::Tensor wf = w.dequantize().to(at::kDouble);
    const at::Tensor b = torch::randn({n});
    // Row magnitudes from 1e-3 to 1e3, one row all zeros, one all positive (its zero point 0).
    at::Tensor x = torch::randn({rows, strided ? 2 * k : k});
    x = x * at::pow(10.0, at::arange(rows, at::kFloat).remainder(7) - 3).unsqueeze(1);
    x[0].zero_();
    if (rows > 1)
        x[1].abs_();
    if (strided)
        x = x.slice(1, 0, 2 * k, 2); // every other column: not contiguous
    const at::Tensor y = linearInt8(x, w, bias ? c10::optional<at::Tensor>(b) : c10::nullopt);
    florence::ops::setInt8Gemm(before);
    QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{rows, n}));
    at::Tensor ref = at::matmul(x.to(at::kDouble), wf.t());
    if (bias)
        ref = ref + b.to(at::kDouble);
    const double steps = variant == florence::ops::Int8Gemm::Avx2 ? 127 : 255;
    const at::Tensor xd = x.to(at::kDouble);
    const at::Tensor range = xd.amax(1).clamp_min(0) - xd.amin(1).clamp_max(0);
    const at::Tensor bound = (range / steps / 2).unsqueeze(1) * wf.abs().sum(1).unsqueeze(0) +
                             1e-5 * (ref.abs() + 1e-30) + 1e-30;
    const at::Tensor excess = (y.to(at::kDouble) - ref).abs() / bound;
    const double worst = excess.max().item<double>();
    QVERIFY2(worst <= 1.0, qPrintable(QString("an output off by %1x its bound").arg(worst)));
    // The all-zero row is exact: bias alone.
    QVERIFY(at::allclose(y[0], bias ? b : at::zeros({n}), 0, 1e-6));
}

void TestLinearRows::encoderInt8FollowsItsWeight() {
    // The operator keeps each weight prepacked while it lives: a weight that is freed and
    // replaced (another model, another precision; the allocator often hands out the same
    // address) must never be computed with the old one's packing.
    c10::InferenceMode guard;
    const at::Tensor x = torch::randn({64, 512});
    for (int round = 0; round < 4; ++round) {
        const at::Tensor w = torch::randn({512, 512}) * 0.02 * (round + 1);
        const at::Tensor q = quantize(w);
        const at::Tensor ref = at::linear(x, w);
        for (int again = 0; again < 2; ++again) {
            const double cos =
                at::cosine_similarity(linearInt8(x, q, c10::nullopt).flatten(), ref.flatten(), 0)
                    .item<double>();
            QVERIFY2(cos > 0.999, qPrintable(QString("round %1: cosine %2").arg(round).arg(cos)));
        }
    }
}

void TestLinearRows::encoderInt8GeluIsGeluOfTheProduct() {
    // florence::linear_int8_gelu (the feed-forward's hidden layer in the int8 mode): GELU of
    // linear_int8's product, which the own int8 GEMM applies as it writes each tile (its own erf)
    // and oneDNN's path (AVX-512 without VNNI) after its product. Against float64's exact GELU of
    // the same product, on each path and GEMM variant the CPU has: shapes with column, k and row
    // tails, strided x, products from about 1e-4 to 30 (erf near 0, in its curve, and saturated on
    // both sides).
    c10::InferenceMode guard;
    struct Case {
        int rows, n, k;
        bool strided;
    };
    const Case cases[] = {{300, 512, 128, false}, {7, 27, 37, true}, {1, 16, 4, false}};
    int ran = 0;
    for (const auto& [path, gemm] : pathsAndGemms()) {
        if (path == KernelPath::Avx512 && gemm != florence::ops::Int8Gemm::Avx2)
            continue; // AVX-512 VNNI or oneDNN: the AVX2 path's GEMM variant does not apply
        const OnPath onPath{path};
        const OnGemm onGemm{gemm};
        double largest = 0;
        for (const Case& c : cases) {
            const at::Tensor w = quantize(torch::randn({c.n, c.k}) * 0.3);
            const at::Tensor b = torch::randn({c.n});
            at::Tensor x = torch::randn({c.rows, c.strided ? 2 * c.k : c.k});
            // Rows at 1e-3..10 times the rest: products from tiny to saturated.
            x = x * at::pow(10.0, at::arange(c.rows, at::kFloat).remainder(5) - 3).unsqueeze(1);
            if (c.strided)
                x = x.slice(1, 0, 2 * c.k, 2);
            const at::Tensor pre = linearInt8(x, w, b).to(at::kDouble);
            const at::Tensor y = linearInt8Gelu(x, w, b);
            QCOMPARE(y.sizes(), pre.sizes());
            QCOMPARE(y.scalar_type(), at::kFloat);
            const at::Tensor want = 0.5 * pre * (1 + at::erf(pre / std::sqrt(2.0)));
            const at::Tensor excess = (y.to(at::kDouble) - want).abs() / (1e-6 * pre.abs() + 1e-7);
            const double worst = excess.max().item<double>();
            QVERIFY2(worst <= 1.0,
                     qPrintable(QString("%1, %2 rows x %3 x %4: off by %5x the bound, at a "
                                        "product of %6")
                                    .arg(florence::ops::kernelPathName(path))
                                    .arg(c.rows)
                                    .arg(c.n)
                                    .arg(c.k)
                                    .arg(worst)
                                    .arg(pre.flatten()[excess.flatten().argmax()].item<double>())));
            largest = std::max(largest, pre.abs().max().item<double>());
            ++ran;
        }
        QVERIFY2(largest > 8, qPrintable(QString("largest product %1: GELU's saturated ends "
                                                 "were not met")
                                             .arg(largest)));
    }
    if (ran == 0)
        QSKIP("neither the AVX-512 nor the AVX2 kernel path runs on this CPU");
}

void TestLinearRows::int16KernelSumsAtTheLimit() {
    // The AVX2 int16 kernel's integer sums at their largest: every weight -128 or 127 and every
    // element of x at the row's largest magnitude (rows of 3, of -3 and alternating), so each
    // product is the largest the scale allows, +128 * levels included; the levels are the most
    // that keep a block of 4096 within int32, and the blocks add without loss. A row of values
    // near the smallest float quantizes to numbers, not NaN.
    SKIP_UNLESS_SUPPORTED(KernelPath::Avx2);
    constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
    for (int64_t k : {1, 768, 3072, 4095, 4096, 4097, 8192, 12345}) {
        const int64_t levels = florence::ops::int16Levels(k);
        const int64_t block = std::min(k, florence::ops::kInt16Block);
        QVERIFY2(128 * levels * block <= kLimit &&
                     (levels == 32767 || 128 * (levels + 1) * block > kLimit),
                 qPrintable(QString("k %1: %2 levels").arg(k).arg(levels)));
        QVERIFY(levels >= 4095);
        for (int8_t weight : {int8_t(-128), int8_t(127)}) {
            const int64_t n = 3;
            const int rows = 3;
            std::vector<int8_t> w(size_t(n * k), weight);
            const std::vector<double> scales(size_t(n), 0.5);
            std::vector<float> x(size_t(rows * k));
            for (int64_t i = 0; i < k; ++i) {
                x[size_t(i)] = 3.0f;
                x[size_t(k + i)] = -3.0f;
                x[size_t(2 * k + i)] = i % 2 ? -3.0f : 3.0f;
            }
            florence::ops::Int16Input xq;
            florence::ops::prepareInt16Input(x.data(), rows, k, xq);
            QCOMPARE(int64_t(xq.values[0]), levels);
            QCOMPARE(int64_t(xq.values[size_t(xq.stride)]), -levels);
            std::vector<float> y(size_t(rows * n));
            florence::ops::rowsInt8Int16Avx2(xq, 0, rows, w.data(), scales.data(), nullptr,
                                             y.data(), n, k, 0, n);
            const double want = 3.0 * double(k) * weight * 0.5;
            const double wants[] = {want, -want, double(k % 2) * 3.0 * weight * 0.5};
            for (int r = 0; r < rows; ++r)
                for (int64_t j = 0; j < n; ++j) {
                    const float got = y[size_t(r * n + j)];
                    QVERIFY2(std::abs(got - wants[r]) <= 1e-6 * std::abs(want),
                             qPrintable(QString("k %1, weight %2, row %3: %4, not %5")
                                            .arg(k)
                                            .arg(weight)
                                            .arg(r)
                                            .arg(got)
                                            .arg(wants[r])));
                }
        }
    }
    // Values near the smallest normal float, zeros among them.
    const std::vector<float> tiny = {1e-38f, 0.0f, -3e-39f, 0.0f, 5e-39f};
    florence::ops::Int16Input xq;
    florence::ops::prepareInt16Input(tiny.data(), 1, int64_t(tiny.size()), xq);
    QVERIFY(std::isfinite(xq.scales[0]) && xq.scales[0] > 0);
    QCOMPARE(int(xq.values[1]), 0);
    QVERIFY(xq.values[0] > 0 && xq.values[2] <= 0 && xq.values[4] >= 0);
    const std::vector<int8_t> w(tiny.size(), 100);
    const double scale = 1.0;
    float y = 1.0f;
    florence::ops::rowsInt8Int16Avx2(xq, 0, 1, w.data(), &scale, nullptr, &y, 1,
                                     int64_t(tiny.size()), 0, 1);
    QVERIFY2(std::isfinite(y) && std::abs(y) < 1e-35, qPrintable(QString::number(y)));
}

void TestLinearRows::int8RowsWithNaNGiveNoNumber() {
    // The int8 kernels that quantize x per row (the decoding step's VNNI kernels, the encoders'
    // own GEMM) take a row's range from its minimum and maximum, which pass a NaN over: a row
    // holding a NaN must not come out as numbers (LibTorch's float product gives NaN there), nor
    // one holding an infinity. Every output of such a row is not finite; the other rows are
    // exactly what they are with those rows zeroed. The NaN sits first (the vector loops) or last
    // (the scalar tails), on every path and GEMM variant the CPU has.
    c10::InferenceMode guard;
    struct Case {
        const char* op;
        int rows, n, k;
        int64_t nanAt;
    };
    const Case cases[] = {{"florence::linear_rows", 1, 37, 100, 0},
                          {"florence::linear_rows", 3, 37, 100, 99},
                          {"florence::linear_rows", 4, 13, 45, 44},
                          {"florence::linear_rows", 6, 37, 100, 0},
                          {"florence::linear_int8", 7, 27, 37, 36},
                          {"florence::linear_int8", 70, 40, 128, 0},
                          {"florence::linear_int8_gelu", 7, 27, 37, 36},
                          {"florence::linear_int8_gelu", 70, 40, 128, 0}};
    int ran = 0;
    for (const auto& [path, gemm] : pathsAndGemms()) {
        const OnPath onPath{path};
        const OnGemm onGemm{gemm};
        for (const Case& c : cases) {
            const bool encoder = std::string(c.op) != "florence::linear_rows";
            // Without VNNI the AVX-512 path's encoder products are oneDNN's, which quantizes x as
            // a whole.
            if (encoder && path == KernelPath::Avx512 &&
                (gemm != florence::ops::Int8Gemm::Avx2 ||
                 !florence::ops::int8GemmSupported(florence::ops::Int8Gemm::Avx512Vnni)))
                continue;
            const QString where = QString("%1, %2, %3 GEMM, %4 rows x %5 x %6")
                                      .arg(c.op)
                                      .arg(florence::ops::kernelPathName(path))
                                      .arg(florence::ops::int8GemmName(gemm))
                                      .arg(c.rows)
                                      .arg(c.n)
                                      .arg(c.k);
            const auto op = linearOp(c.op);
            const at::Tensor w = quantize(torch::randn({c.n, c.k}) * 0.1);
            const at::Tensor b = torch::randn({c.n});
            at::Tensor x = torch::randn({c.rows, c.k});
            const int nanRow = c.rows > 1 ? 1 : 0, infRow = c.rows > 2 ? 2 : -1;
            at::Tensor clean = x.clone();
            x[nanRow][c.nanAt] = std::numeric_limits<float>::quiet_NaN();
            clean[nanRow].zero_();
            if (infRow >= 0) {
                x[infRow][3] = std::numeric_limits<float>::infinity();
                clean[infRow].zero_();
            }
            const at::Tensor y = op.call(x, w, b);
            const at::Tensor yClean = op.call(clean, w, b);
            for (int r = 0; r < c.rows; ++r) {
                if (r == nanRow || r == infRow) {
                    QVERIFY2(!at::isfinite(y[r]).any().item<bool>(),
                             qPrintable(QString("%1: row %2 (%3) gave numbers")
                                            .arg(where)
                                            .arg(r)
                                            .arg(r == nanRow ? "NaN" : "infinity")));
                } else {
                    QVERIFY2(at::equal(y[r], yClean[r]),
                             qPrintable(QString("%1: row %2 changed").arg(where).arg(r)));
                }
            }
            ++ran;
        }
    }
    if (ran == 0)
        QSKIP("neither the AVX-512 nor the AVX2 kernel path runs on this CPU");
}

void TestLinearRows::pathIsChosenAndNamed() {
    // The runtime line names the kernels that run: a path the CPU lacks is never claimed, and
    // asking for one falls to the best the CPU has below it.
    const OnPath restore{florence::ops::kernelPath()};
    for (KernelPath path : kPaths) {
        florence::ops::setKernelPath(path);
        const KernelPath got = florence::ops::kernelPath();
        QVERIFY(florence::ops::kernelPathSupported(got));
        QVERIFY(int(got) <= int(path));
        QCOMPARE(florence::ops::rowKernelName(), std::string(florence::ops::kernelPathName(got)));
        if (florence::ops::kernelPathSupported(path))
            QCOMPARE(int(got), int(path));
    }
    QVERIFY(florence::ops::kernelPathSupported(KernelPath::Torch));
    QCOMPARE(florence::ops::kernelPathSupported(KernelPath::Avx512), florence::ops::haveAvx512());
}

void TestLinearRows::keepsLeadingDimensions() {
    // A decoding step's activations are [batch, 1, d]: the result is [batch, 1, n].
    c10::InferenceMode guard;
    const at::Tensor w = torch::randn({50, 40});
    const at::Tensor x = torch::randn({3, 1, 40});
    const at::Tensor y = linearRows(x, w, c10::nullopt);
    QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{3, 1, 50}));
    QVERIFY(relativeError(y, at::linear(x, w)) < 2e-5);
    // Weights in another layout (a transposed view) give the same result.
    const at::Tensor wt = w.t().contiguous().t();
    QVERIFY(!wt.is_contiguous());
    QVERIFY(relativeError(linearRows(x, wt, c10::nullopt), y) < 1e-6);
}

void TestLinearRows::moreRowsThanTheKernels() {
    // Five rows and more go to LibTorch's products; the result is the same product.
    c10::InferenceMode guard;
    const at::Tensor w = torch::randn({33, 70});
    const at::Tensor b = torch::randn({33});
    const at::Tensor x = torch::randn({2, 7, 70});
    QVERIFY(relativeError(linearRows(x, w, b), at::linear(x, w, b)) < 2e-5);
    const at::Tensor y16 = linearRows(x, w.to(at::kBFloat16), b);
    QCOMPARE(y16.scalar_type(), at::kFloat);
    QVERIFY(relativeError(y16, at::linear(x, w, b)) < 2e-2);
}

void TestLinearRows::refusesMismatchedShapes() {
    c10::InferenceMode guard;
    const at::Tensor w = torch::randn({8, 16});
    QString message;
    try {
        linearRows(torch::randn({1, 15}), w, c10::nullopt);
    } catch (const c10::Error& e) {
        message = QString::fromStdString(e.what_without_backtrace());
    }
    QVERIFY2(message.contains("does not fit weight"), qPrintable(message));
    message.clear();
    try {
        linearRows(torch::randn({1, 16}), w, torch::randn({7}));
    } catch (const c10::Error& e) {
        message = QString::fromStdString(e.what_without_backtrace());
    }
    QVERIFY2(message.contains("bias has 7 elements"), qPrintable(message));
}

void TestLinearRows::interpreterFindsTheOperator() {
    // What a package's decoder.pt needs: the TorchScript interpreter looks the operator up by
    // name in its registry when it loads the code ("ops.florence.linear_rows(...)"); a library
    // that was not loaded, or did not register, fails there with "Unknown builtin op".
    c10::InferenceMode guard;
    const auto ops =
        torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString("florence::linear_rows"));
    QCOMPARE(ops.size(), size_t(1));
    const at::Tensor w = torch::randn({10, 24});
    const at::Tensor x = torch::randn({1, 1, 24});
    torch::jit::Stack stack{x, w, c10::IValue()};
    ops[0]->getOperation()(stack);
    QCOMPARE(stack.size(), size_t(1));
    QVERIFY(relativeError(stack[0].toTensor(), at::linear(x, w)) < 2e-5);
}

QTEST_GUILESS_MAIN(TestLinearRows)
#include "TestLinearRows.moc"
