// florence::attend_one, the operator every decoding step of an exported model runs its
// one-query attention with (engine/ops/): against LibTorch's softmax(q k^T + mask) v for the
// cases the kernel treats specially (key counts not a multiple of four or 16, head sizes not a
// multiple of 16, masked positions, keys and values as views of a larger preallocated cache,
// several beams or images, a mask per image or one for all) on every kernel path the CPU has
// (AVX-512, AVX2 + FMA, LibTorch; rows for a path the CPU lacks are skipped), and that the
// TorchScript interpreter finds it, as loading a package needs. Also florence::attend_windows,
// the vision encoder's window attention, florence::attend_channels, its channel attention, and
// florence::attend_many, attention with several
// queries per head (the text encoder's, a prompt's, beams sharing the encoder's keys, the
// uncached path's causal mask), against LibTorch's batched products on each path, and
// florence::ops::sumExp, the greedy search's softmax sum, against double precision.
#include "KernelPath.h"
#include "Ops.h"
#include "engine/KernelPaths.h"

#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/runtime/operator.h>
#include <torch/torch.h>

#include <QtTest>

#include <cmath>
#include <limits>
#include <utility>

namespace {

using florence::ops::KernelPath;
using florence::test::kPaths;
using florence::test::OnPath;

at::Tensor attendOne(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("florence::attend_one", "")
                               .typed<at::Tensor(const at::Tensor&, const at::Tensor&,
                                                 const at::Tensor&, const at::Tensor&)>();
    return op.call(q, k, v, mask);
}

// What the model computes for more than one query (model.py's attend()), in double precision.
at::Tensor reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask) {
    const at::Tensor scores =
        at::matmul(q.to(at::kDouble), k.to(at::kDouble).transpose(-1, -2)) + mask.to(at::kDouble);
    return at::matmul(scores.softmax(-1), v.to(at::kDouble));
}

at::Tensor attendMany(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                      const at::Tensor& mask) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("florence::attend_many", "")
                               .typed<at::Tensor(const at::Tensor&, const at::Tensor&,
                                                 const at::Tensor&, const at::Tensor&)>();
    return op.call(q, k, v, mask);
}

at::Tensor attendWindows(const at::Tensor& qkv, int64_t heads, double scale) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("florence::attend_windows", "")
                               .typed<at::Tensor(const at::Tensor&, int64_t, double)>();
    return op.call(qkv, heads, scale);
}

// What model.py's window_attention() computes without the operator, in double precision.
at::Tensor windowReference(const at::Tensor& qkv, int64_t heads, double scale) {
    const int64_t windows = qkv.size(0), n = qkv.size(1), c = qkv.size(2) / 3;
    const at::Tensor parts = qkv.to(at::kDouble)
                                 .reshape({windows, n, 3, heads, c / heads})
                                 .permute({2, 0, 3, 1, 4});
    const at::Tensor attn = at::matmul(parts[0] * scale, parts[1].transpose(-2, -1)).softmax(-1);
    return at::matmul(attn, parts[2]).transpose(1, 2).reshape({windows, n, c});
}

at::Tensor attendChannels(const at::Tensor& qkv, int64_t groups, double scale) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("florence::attend_channels", "")
                               .typed<at::Tensor(const at::Tensor&, int64_t, double)>();
    return op.call(qkv, groups, scale);
}

// What model.py's channel_attention() computes without the operator, in double precision.
at::Tensor channelReference(const at::Tensor& qkv, int64_t groups, double scale) {
    const int64_t images = qkv.size(0), n = qkv.size(1), c = qkv.size(2) / 3;
    const at::Tensor parts =
        qkv.to(at::kDouble).reshape({images, n, 3, groups, c / groups}).permute({2, 0, 3, 1, 4});
    const at::Tensor attn = at::matmul((parts[0] * scale).transpose(-1, -2), parts[1]).softmax(-1);
    return at::matmul(attn, parts[2].transpose(-1, -2))
        .transpose(-1, -2)
        .transpose(1, 2)
        .reshape({images, n, c});
}

double relativeError(const at::Tensor& got, const at::Tensor& want) {
    const double scale = std::max(1e-30, want.abs().max().item<double>());
    return (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>() / scale;
}

// How a test masks a position: with -inf, or with float32's lowest value as padding_mask() and
// causal_mask() in model.py do.
enum Masking { NoMask, InfMask, LowestMask };

// How attend_many's test lays out q, k, v and the mask (manyMatchLibTorch).
enum ManyLayout { ManyContiguous, ManySplitHeads, ManyBeams, ManySharedKeys, ManyCausal };

} // namespace

class TestAttendOne : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void matchesLibTorch_data();
    void matchesLibTorch();
    void everyPositionMasked_data();
    void everyPositionMasked();
    void otherShapesGoToLibTorch();
    void refusesMismatchedShapes();
    void interpreterFindsTheOperator();
    void windowsMatchLibTorch_data();
    void windowsMatchLibTorch();
    void windowsOfOtherShapesGoToLibTorch();
    void windowsRefuseMismatchedShapes();
    void channelsMatchLibTorch_data();
    void channelsMatchLibTorch();
    void channelsOfOtherShapesGoToLibTorch();
    void channelsRefuseMismatchedShapes();
    void manyMatchLibTorch_data();
    void manyMatchLibTorch();
    void manyOfOtherShapesGoToLibTorch();
    void sumExpMatchesDouble_data();
    void sumExpMatchesDouble();
};

void TestAttendOne::initTestCase() {
    torch::manual_seed(11);
    // At least two threads, so the heads are split between them as in the app.
    at::set_num_threads(std::max(2, at::get_num_threads()));
    QVERIFY(QFileInfo::exists(QString::fromUtf8(florence_ops_library_path())));
}

void TestAttendOne::matchesLibTorch_data() {
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("positions");
    QTest::addColumn<int>("dim");
    QTest::addColumn<int>("masking");
    QTest::addColumn<bool>("cacheView");
    QTest::addColumn<bool>("maskPerBatch");
    struct Shape {
        int batch, heads, positions, dim;
    };
    // Florence-2's heads are 64 wide (base and large); 1, 7, 40, 72 and 128 leave masked tails or
    // fill every register the kernel has; 1, 3 and 577 keys leave keys after the groups of four.
    const Shape shapes[] = {{1, 12, 1, 64},  {1, 12, 3, 64},   {1, 12, 32, 64}, {1, 12, 577, 64},
                            {3, 12, 33, 64}, {2, 4, 17, 7},    {1, 2, 9, 1},    {2, 3, 50, 40},
                            {1, 5, 255, 72}, {4, 16, 129, 128}};
    for (KernelPath path : kPaths)
        for (const Shape& s : shapes)
            for (int masking : {NoMask, InfMask, LowestMask})
                for (bool cacheView : {false, true}) {
                    const bool maskPerBatch = (s.positions + masking) % 2 == 1;
                    QTest::addRow(
                        "%s: %dx%d heads, %d keys of %d%s%s%s", florence::ops::kernelPathName(path),
                        s.batch, s.heads, s.positions, s.dim,
                        masking == InfMask      ? ", -inf mask"
                        : masking == LowestMask ? ", lowest-float mask"
                                                : "",
                        cacheView ? ", cache view" : "", maskPerBatch ? ", mask [B,1,1,S]" : "")
                        << int(path) << s.batch << s.heads << s.positions << s.dim << masking
                        << cacheView << maskPerBatch;
                }
}

void TestAttendOne::matchesLibTorch() {
    QFETCH(int, path);
    QFETCH(int, batch);
    QFETCH(int, heads);
    QFETCH(int, positions);
    QFETCH(int, dim);
    QFETCH(int, masking);
    QFETCH(bool, cacheView);
    QFETCH(bool, maskPerBatch);
    SKIP_UNLESS_SUPPORTED(KernelPath(path));
    const OnPath onPath{KernelPath(path)};
    c10::InferenceMode guard;
    const at::Tensor q = torch::randn({batch, heads, 1, dim}) * (1.0 / std::sqrt(double(dim)));
    at::Tensor k, v;
    if (cacheView) {
        // As Decoder.step passes them: the first positions of a preallocated
        // [layers, 2, B, heads, capacity, d] cache.
        const at::Tensor cache = torch::randn({2, 2, batch, heads, positions + 13, dim});
        k = cache[1][0].slice(2, 0, positions);
        v = cache[1][1].slice(2, 0, positions);
        QVERIFY(!k.is_contiguous());
    } else {
        k = torch::randn({batch, heads, positions, dim});
        v = torch::randn({batch, heads, positions, dim});
    }
    // Scores spread like a trained model's, with a few positions far ahead of the others.
    k = k * 3.0;
    at::Tensor mask = torch::zeros({maskPerBatch ? batch : 1, 1, 1, positions});
    if (masking != NoMask) {
        const float low = masking == InfMask ? -std::numeric_limits<float>::infinity()
                                             : std::numeric_limits<float>::lowest();
        // Every third position, never the last one (a query always sees itself).
        for (int s = 0; s + 1 < positions; s += 3)
            mask.select(3, s).fill_(low);
        if (maskPerBatch && batch > 1 && positions > 2)
            mask[batch - 1].select(2, 1).fill_(low); // images padded differently
    }
    const at::Tensor got = attendOne(q, k, v, mask);
    QCOMPARE(got.scalar_type(), at::kFloat);
    QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{batch, heads, 1, dim}));
    QVERIFY(bool(got.isfinite().all().item<bool>()));
    const double err = relativeError(got, reference(q, k, v, mask));
    QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1 against LibTorch").arg(err)));
    // The heads merge into one row per image without a copy (what Attention.output does next).
    QVERIFY(got.transpose(1, 2).is_contiguous());
}

void TestAttendOne::everyPositionMasked_data() {
    QTest::addColumn<int>("path");
    for (KernelPath path : kPaths)
        QTest::addRow("%s", florence::ops::kernelPathName(path)) << int(path);
}

void TestAttendOne::everyPositionMasked() {
    // Nothing to attend to: LibTorch's softmax gives NaN for -inf everywhere and the plain mean
    // of the values for float32's lowest value everywhere; the operator gives the same.
    QFETCH(int, path);
    SKIP_UNLESS_SUPPORTED(KernelPath(path));
    const OnPath onPath{KernelPath(path)};
    c10::InferenceMode guard;
    const at::Tensor q = torch::randn({1, 2, 1, 64});
    const at::Tensor k = torch::randn({1, 2, 21, 64});
    const at::Tensor v = torch::randn({1, 2, 21, 64});
    const at::Tensor inf = torch::full({1, 1, 1, 21}, -std::numeric_limits<float>::infinity());
    QVERIFY(bool(attendOne(q, k, v, inf).isnan().all().item<bool>()));
    const at::Tensor lowest = torch::full({1, 1, 1, 21}, std::numeric_limits<float>::lowest());
    const double err = relativeError(attendOne(q, k, v, lowest), v.mean(2, /*keepdim=*/true));
    QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1 against the mean").arg(err)));
    // attend_many the same, for the second of two images only, the first unaffected.
    const at::Tensor qs = torch::randn({2, 2, 5, 32});
    const at::Tensor ks = torch::randn({2, 2, 21, 32});
    const at::Tensor vs = torch::randn({2, 2, 21, 32});
    at::Tensor infPart = torch::zeros({2, 1, 1, 21});
    infPart[1].fill_(-std::numeric_limits<float>::infinity());
    const at::Tensor gotInf = attendMany(qs, ks, vs, infPart);
    QVERIFY(bool(gotInf[1].isnan().all().item<bool>()));
    QVERIFY(relativeError(gotInf[0], reference(qs, ks, vs, infPart)[0]) < 1e-5);
    at::Tensor lowestPart = torch::zeros({2, 1, 1, 21});
    lowestPart[1].fill_(std::numeric_limits<float>::lowest());
    const at::Tensor gotLowest = attendMany(qs, ks, vs, lowestPart);
    const double errMany =
        relativeError(gotLowest[1], vs[1].mean(1, /*keepdim=*/true).expand({2, 5, 32}));
    QVERIFY2(errMany < 1e-5,
             qPrintable(QString("attend_many: relative error %1 against the mean").arg(errMany)));
}

void TestAttendOne::otherShapesGoToLibTorch() {
    // Several queries, bfloat16, head sizes beyond the kernel's and keys with a strided last
    // dimension are computed by LibTorch, with the same result.
    c10::InferenceMode guard;
    const at::Tensor mask = torch::zeros({1, 1, 1, 30});
    const at::Tensor k = torch::randn({2, 3, 30, 48});
    const at::Tensor v = torch::randn({2, 3, 30, 48});
    const at::Tensor q4 = torch::randn({2, 3, 4, 48});
    QVERIFY(relativeError(attendOne(q4, k, v, mask), reference(q4, k, v, mask)) < 1e-5);
    const at::Tensor q = torch::randn({2, 3, 1, 48});
    const at::Tensor got16 =
        attendOne(q.to(at::kBFloat16), k.to(at::kBFloat16), v.to(at::kBFloat16), mask);
    QVERIFY(relativeError(got16, reference(q, k, v, mask)) < 5e-2);
    const at::Tensor padded = torch::full({1, 1, 1, 30}, std::numeric_limits<float>::lowest());
    const at::Tensor gotPadded16 =
        attendMany(q.to(at::kBFloat16), k.to(at::kBFloat16), v.to(at::kBFloat16), padded);
    QVERIFY(relativeError(gotPadded16, v.mean(2, /*keepdim=*/true).expand({2, 3, 4, 48})) < 5e-2);
    const at::Tensor kWide = torch::randn({2, 3, 30, 96}).slice(3, 0, 96, 2);
    QCOMPARE(kWide.stride(3), int64_t(2));
    QVERIFY(relativeError(attendOne(q, kWide, v, mask), reference(q, kWide, v, mask)) < 1e-5);
    const at::Tensor qBig = torch::randn({1, 2, 1, 160});
    const at::Tensor kBig = torch::randn({1, 2, 30, 160});
    QVERIFY(relativeError(attendOne(qBig, kBig, kBig, mask), reference(qBig, kBig, kBig, mask)) <
            1e-5);
}

void TestAttendOne::refusesMismatchedShapes() {
    // attend_one with its one query, attend_many with three.
    c10::InferenceMode guard;
    using Op =
        at::Tensor (*)(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&);
    for (const auto& [op, queries] : {std::pair<Op, int>{attendOne, 1}, {attendMany, 3}}) {
        QString message;
        try {
            op(torch::randn({1, 2, queries, 16}), torch::randn({1, 2, 5, 15}),
               torch::randn({1, 2, 5, 15}), torch::zeros({1, 1, 1, 5}));
        } catch (const c10::Error& e) {
            message = QString::fromStdString(e.what_without_backtrace());
        }
        QVERIFY2(message.contains("does not fit k"), qPrintable(message));
        message.clear();
        try {
            op(torch::randn({1, 2, queries, 16}), torch::randn({1, 2, 5, 16}),
               torch::randn({1, 2, 5, 16}), torch::zeros({1, 1, 1, 6}));
        } catch (const c10::Error& e) {
            message = QString::fromStdString(e.what_without_backtrace());
        }
        QVERIFY2(!message.isEmpty(), "a mask of 6 positions for 5 keys was accepted");
    }
    QVERIFY_THROWS_EXCEPTION(c10::Error,
                             attendMany(torch::randn({2, 3, 16}), torch::randn({1, 2, 5, 16}),
                                        torch::randn({1, 2, 5, 16}), torch::zeros({1, 1, 1, 5})));
}

void TestAttendOne::interpreterFindsTheOperator() {
    // What a package's decoder.pt needs: the interpreter looks "ops.florence.attend_one" up by
    // name when it loads the code.
    c10::InferenceMode guard;
    const auto ops =
        torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString("florence::attend_one"));
    QCOMPARE(ops.size(), size_t(1));
    const at::Tensor q = torch::randn({1, 12, 1, 64});
    const at::Tensor k = torch::randn({1, 12, 9, 64});
    const at::Tensor v = torch::randn({1, 12, 9, 64});
    const at::Tensor mask = torch::zeros({1, 1, 1, 9});
    torch::jit::Stack stack{q, k, v, mask};
    ops[0]->getOperation()(stack);
    QCOMPARE(stack.size(), size_t(1));
    QVERIFY(relativeError(stack[0].toTensor(), reference(q, k, v, mask)) < 1e-5);
    // And "ops.florence.attend_windows" and "ops.florence.attend_channels" in a package's
    // vision.pt, "ops.florence.attend_many" in its text_encoder.pt and decoder.pt.
    for (const char* name :
         {"florence::attend_windows", "florence::attend_channels", "florence::attend_many"})
        QVERIFY2(torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(name)).size() == 1,
                 name);
}

void TestAttendOne::windowsMatchLibTorch_data() {
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("windows");
    QTest::addColumn<int>("positions");
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("dim");
    QTest::addColumn<bool>("strided");
    struct Shape {
        int windows, positions, heads, dim;
    };
    // Florence-2's windows are 12 x 12 with heads of 32 (every stage, base and large); the others
    // leave key counts that are not a multiple of 8 or 48, query blocks and pairs cut short, a
    // single position, and every head width the kernel has (8 to 64).
    const Shape shapes[] = {{4, 144, 4, 32}, {3, 49, 2, 16}, {2, 13, 3, 64}, {1, 1, 1, 8},
                            {2, 25, 2, 56},  {2, 17, 5, 40}, {1, 200, 1, 48}, {2, 50, 3, 24}};
    for (KernelPath path : kPaths)
        for (const Shape& s : shapes)
            for (bool strided : {false, true})
                QTest::addRow("%s: %d windows of %d, %d heads of %d%s",
                              florence::ops::kernelPathName(path), s.windows, s.positions, s.heads,
                              s.dim, strided ? ", strided" : "")
                    << int(path) << s.windows << s.positions << s.heads << s.dim << strided;
}

void TestAttendOne::windowsMatchLibTorch() {
    QFETCH(int, path);
    QFETCH(int, windows);
    QFETCH(int, positions);
    QFETCH(int, heads);
    QFETCH(int, dim);
    QFETCH(bool, strided);
    SKIP_UNLESS_SUPPORTED(KernelPath(path));
    const OnPath onPath{KernelPath(path)};
    c10::InferenceMode guard;
    const int64_t columns = 3 * int64_t(heads) * dim;
    // Spread like a trained model's scores; `strided`: a view whose rows are further apart.
    at::Tensor qkv = torch::randn({windows, positions, columns + (strided ? 5 : 0)}) * 3.0;
    if (strided)
        qkv = qkv.slice(2, 0, columns);
    const double scale = 1.0 / std::sqrt(double(dim));
    const at::Tensor got = attendWindows(qkv, heads, scale);
    QCOMPARE(got.scalar_type(), at::kFloat);
    QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{windows, positions, heads * int64_t(dim)}));
    QVERIFY(bool(got.isfinite().all().item<bool>()));
    const double err = relativeError(got, windowReference(qkv, heads, scale));
    QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1 against LibTorch").arg(err)));
}

void TestAttendOne::windowsOfOtherShapesGoToLibTorch() {
    // Heads not a multiple of 8 wide or wider than 64, and bfloat16, are computed by LibTorch.
    c10::InferenceMode guard;
    for (int dim : {20, 72}) {
        const at::Tensor qkv = torch::randn({2, 9, 3 * 2 * dim});
        const double err = relativeError(attendWindows(qkv, 2, 0.2), windowReference(qkv, 2, 0.2));
        QVERIFY2(err < 1e-5, qPrintable(QString("heads of %1: relative error %2").arg(dim).arg(err)));
    }
    const at::Tensor qkv = torch::randn({2, 9, 3 * 2 * 32});
    const at::Tensor got16 = attendWindows(qkv.to(at::kBFloat16), 2, 0.2);
    QCOMPARE(got16.scalar_type(), at::kBFloat16);
    QVERIFY(relativeError(got16, windowReference(qkv, 2, 0.2)) < 5e-2);
}

void TestAttendOne::windowsRefuseMismatchedShapes() {
    c10::InferenceMode guard;
    QString message;
    try {
        attendWindows(torch::randn({9, 96}), 2, 0.2);
    } catch (const c10::Error& e) {
        message = QString::fromStdString(e.what_without_backtrace());
    }
    QVERIFY2(message.contains("must be 3-D"), qPrintable(message));
    message.clear();
    try {
        attendWindows(torch::randn({1, 9, 100}), 2, 0.2);
    } catch (const c10::Error& e) {
        message = QString::fromStdString(e.what_without_backtrace());
    }
    QVERIFY2(message.contains("do not split into q, k and v of 2 heads"), qPrintable(message));
    QVERIFY_THROWS_EXCEPTION(c10::Error, attendWindows(torch::randn({1, 9, 96}), 0, 0.2));
}

void TestAttendOne::channelsMatchLibTorch_data() {
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("images");
    QTest::addColumn<int>("positions");
    QTest::addColumn<int>("groups");
    QTest::addColumn<int>("dim");
    QTest::addColumn<bool>("strided");
    struct Shape {
        int images, positions, groups, dim;
    };
    // Florence-2's groups are 32 channels wide (every stage, base and large), over 36864 to 576
    // positions at base size; the others leave the Gram products' 64-row steps and the weighted
    // values' six-row tiles cut short, slices of the positions added up (2000: 32 of them), a
    // single position, several images, and every group width the kernel has (8 to 64: six rows
    // of the Gram matrix at a time leave 0, 2 or 4, 16 columns leave 0 or 8).
    const Shape shapes[] = {{1, 2304, 4, 32}, {2, 130, 3, 32}, {1, 2000, 2, 16},
                            {1, 1, 2, 8},     {2, 13, 1, 64},  {1, 67, 2, 24},
                            {1, 200, 2, 40},  {1, 65, 1, 48},  {1, 7, 3, 56}};
    for (KernelPath path : kPaths)
        for (const Shape& s : shapes)
            for (bool strided : {false, true})
                QTest::addRow("%s: %d images of %d, %d groups of %d%s",
                              florence::ops::kernelPathName(path), s.images, s.positions, s.groups,
                              s.dim, strided ? ", strided" : "")
                    << int(path) << s.images << s.positions << s.groups << s.dim << strided;
}

void TestAttendOne::channelsMatchLibTorch() {
    QFETCH(int, path);
    QFETCH(int, images);
    QFETCH(int, positions);
    QFETCH(int, groups);
    QFETCH(int, dim);
    QFETCH(bool, strided);
    SKIP_UNLESS_SUPPORTED(KernelPath(path));
    const OnPath onPath{KernelPath(path)};
    c10::InferenceMode guard;
    const int64_t columns = 3 * int64_t(groups) * dim;
    at::Tensor qkv = torch::randn({images, positions, columns + (strided ? 5 : 0)}) * 3.0;
    if (strided)
        qkv = qkv.slice(2, 0, columns);
    // As the model scales: by the number of positions.
    const double scale = 1.0 / std::sqrt(double(positions));
    const at::Tensor got = attendChannels(qkv, groups, scale);
    QCOMPARE(got.scalar_type(), at::kFloat);
    QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{images, positions, groups * int64_t(dim)}));
    QVERIFY(bool(got.isfinite().all().item<bool>()));
    const double err = relativeError(got, channelReference(qkv, groups, scale));
    QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1 against LibTorch").arg(err)));
    // The kernels split the positions into slices by their number alone: the same result on
    // one thread (LibTorch's products need not be).
    if (KernelPath(path) == KernelPath::Torch)
        return;
    const int threads = at::get_num_threads();
    at::set_num_threads(1);
    const at::Tensor alone = attendChannels(qkv, groups, scale);
    at::set_num_threads(threads);
    QVERIFY(at::equal(got, alone));
}

void TestAttendOne::channelsOfOtherShapesGoToLibTorch() {
    // Groups not a multiple of 8 wide or wider than 64, and bfloat16, are computed by LibTorch.
    c10::InferenceMode guard;
    for (int dim : {20, 72}) {
        const at::Tensor qkv = torch::randn({2, 9, 3 * 2 * dim});
        const double err =
            relativeError(attendChannels(qkv, 2, 0.3), channelReference(qkv, 2, 0.3));
        QVERIFY2(err < 1e-5,
                 qPrintable(QString("groups of %1: relative error %2").arg(dim).arg(err)));
    }
    const at::Tensor qkv = torch::randn({2, 9, 3 * 2 * 32});
    const at::Tensor got16 = attendChannels(qkv.to(at::kBFloat16), 2, 0.3);
    QCOMPARE(got16.scalar_type(), at::kBFloat16);
    QVERIFY(relativeError(got16, channelReference(qkv, 2, 0.3)) < 5e-2);
}

void TestAttendOne::channelsRefuseMismatchedShapes() {
    c10::InferenceMode guard;
    QString message;
    try {
        attendChannels(torch::randn({9, 96}), 2, 0.3);
    } catch (const c10::Error& e) {
        message = QString::fromStdString(e.what_without_backtrace());
    }
    QVERIFY2(message.contains("must be 3-D"), qPrintable(message));
    message.clear();
    try {
        attendChannels(torch::randn({1, 9, 100}), 2, 0.3);
    } catch (const c10::Error& e) {
        message = QString::fromStdString(e.what_without_backtrace());
    }
    QVERIFY2(message.contains("do not split into q, k and v of 2 groups"), qPrintable(message));
    QVERIFY_THROWS_EXCEPTION(c10::Error, attendChannels(torch::randn({1, 9, 96}), 0, 0.3));
}

void TestAttendOne::manyMatchLibTorch_data() {
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("queries");
    QTest::addColumn<int>("keys");
    QTest::addColumn<int>("dim");
    QTest::addColumn<int>("masking");
    QTest::addColumn<int>("layout");
    struct Shape {
        int batch, heads, queries, keys, dim;
    };
    // The base text encoder's self-attention (577 image features and a 13-token prompt), three
    // beams' queries against one image's 577 keys, a prompt of one and of a few tokens, and
    // shapes that leave query blocks (12), value tiles (6 rows, 16 columns) and key groups (8,
    // 48) cut short (every tail of 1 to 5 rows, 8 to 40 keys), with every head width the kernel
    // has.
    const Shape shapes[] = {{1, 12, 590, 590, 64}, {1, 12, 3, 577, 64}, {2, 12, 1, 1, 64},
                            {2, 4, 13, 13, 8},     {3, 3, 37, 50, 40},  {1, 5, 7, 200, 56},
                            {2, 2, 25, 25, 24},    {1, 2, 6, 49, 48},   {2, 3, 19, 11, 16},
                            {1, 2, 10, 40, 16},    {2, 2, 16, 88, 32},  {3, 3, 23, 33, 64}};
    for (KernelPath path : kPaths)
        for (const Shape& s : shapes)
            for (int masking : {NoMask, InfMask, LowestMask})
                for (int layout :
                     {ManyContiguous, ManySplitHeads, ManyBeams, ManySharedKeys, ManyCausal}) {
                    if (layout == ManyBeams && s.queries > 8)
                        continue; // beams are a decoding step's few queries
                    QTest::addRow("%s: %dx%d heads, %d queries, %d keys of %d%s, %s",
                                  florence::ops::kernelPathName(path), s.batch, s.heads, s.queries,
                                  s.keys, s.dim,
                                  masking == InfMask      ? ", -inf mask"
                                  : masking == LowestMask ? ", lowest-float mask"
                                                          : "",
                                  layout == ManyContiguous   ? "contiguous"
                                  : layout == ManySplitHeads ? "heads split from [B, T, H d]"
                                  : layout == ManyBeams      ? "beams of one image"
                                  : layout == ManySharedKeys ? "keys of one image for all"
                                                             : "causal mask [1, 1, T, S]")
                        << int(path) << s.batch << s.heads << s.queries << s.keys << s.dim
                        << masking << layout;
                }
}

void TestAttendOne::manyMatchLibTorch() {
    QFETCH(int, path);
    QFETCH(int, batch);
    QFETCH(int, heads);
    QFETCH(int, queries);
    QFETCH(int, keys);
    QFETCH(int, dim);
    QFETCH(int, masking);
    QFETCH(int, layout);
    SKIP_UNLESS_SUPPORTED(KernelPath(path));
    const OnPath onPath{KernelPath(path)};
    c10::InferenceMode guard;
    const double scale = 1.0 / std::sqrt(double(dim));
    // As Attention.split makes them: [B, T, H d] projections viewed as [B, H, T, d].
    const auto split = [&](const at::Tensor& x) {
        return x.view({x.size(0), x.size(1), heads, dim}).transpose(1, 2);
    };
    at::Tensor q, k, v;
    if (layout == ManySplitHeads) {
        q = split(torch::randn({batch, queries, heads * dim}) * scale);
        k = split(torch::randn({batch, keys, heads * dim}));
        v = split(torch::randn({batch, keys, heads * dim}));
        QVERIFY(queries == 1 || !q.is_contiguous());
    } else if (layout == ManyBeams) {
        // DecoderLayer's cross-attention for beams sharing one image: the beams' one-token
        // queries [beams, H, 1, d] transposed into the rows of a single image's attention.
        q = (torch::randn({batch, heads, 1, dim}) * scale).transpose(0, 2);
        k = torch::randn({1, heads, keys, dim});
        v = torch::randn({1, heads, keys, dim});
    } else {
        // ManySharedKeys: several prompts (or beams' prompts) against one image's keys, each
        // masked differently below.
        const int64_t keyBatch = layout == ManySharedKeys ? 1 : batch;
        q = torch::randn({batch, heads, queries, dim}) * scale;
        k = torch::randn({keyBatch, heads, keys, dim});
        v = torch::randn({keyBatch, heads, keys, dim});
    }
    // Scores spread like a trained model's, with a few positions far ahead of the others.
    k = k * 3.0;
    const int64_t rows = q.size(2);
    at::Tensor mask = layout == ManyCausal ? torch::zeros({1, 1, rows, keys})
                                           : torch::zeros({q.size(0), 1, 1, keys});
    if (masking != NoMask) {
        const float low = masking == InfMask ? -std::numeric_limits<float>::infinity()
                                             : std::numeric_limits<float>::lowest();
        if (layout == ManyCausal) {
            // Row t sees the keys up to its own position (the last rows' when keys > queries).
            for (int64_t t = 0; t < rows; ++t)
                for (int64_t j = t + 1 + std::max<int64_t>(0, keys - rows); j < keys; ++j)
                    mask[0][0][t][j] = low;
        } else {
            // Every third position, never the last one, and one more in the last image (padded
            // differently).
            for (int j = 0; j + 1 < keys; j += 3)
                mask.select(3, j).fill_(low);
            if (mask.size(0) > 1 && keys > 2)
                mask[mask.size(0) - 1].select(2, 1).fill_(low);
        }
    }
    const at::Tensor got = attendMany(q, k, v, mask);
    QCOMPARE(got.scalar_type(), at::kFloat);
    QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{q.size(0), heads, rows, dim}));
    QVERIFY(bool(got.isfinite().all().item<bool>()));
    const double err = relativeError(got, reference(q, k, v, mask));
    QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1 against LibTorch").arg(err)));
    // The heads merge into one row per position without a copy (what Attention.merge does next).
    if (KernelPath(path) != KernelPath::Torch)
        QVERIFY(got.transpose(1, 2).is_contiguous());
}

void TestAttendOne::manyOfOtherShapesGoToLibTorch() {
    // bfloat16 (its mask clamped as the model's bfloat16 attention does: float32's lowest value
    // would be -inf), heads not a multiple of 8 wide or wider than 64 and keys with a strided
    // last dimension are computed by LibTorch; a mask broadcast along the keys is read in place
    // by the kernel. The same results.
    c10::InferenceMode guard;
    const at::Tensor mask = torch::zeros({1, 1, 1, 30});
    for (int dim : {20, 72}) {
        const at::Tensor q = torch::randn({2, 3, 4, dim}), k = torch::randn({2, 3, 30, dim});
        const double err = relativeError(attendMany(q, k, k, mask), reference(q, k, k, mask));
        QVERIFY2(err < 1e-5,
                 qPrintable(QString("heads of %1: relative error %2").arg(dim).arg(err)));
    }
    const at::Tensor q = torch::randn({2, 3, 4, 48});
    const at::Tensor k = torch::randn({2, 3, 30, 48});
    const at::Tensor v = torch::randn({2, 3, 30, 48});
    const at::Tensor got16 =
        attendMany(q.to(at::kBFloat16), k.to(at::kBFloat16), v.to(at::kBFloat16), mask);
    QVERIFY(relativeError(got16, reference(q, k, v, mask)) < 5e-2);
    const at::Tensor kWide = torch::randn({2, 3, 30, 96}).slice(3, 0, 96, 2);
    QCOMPARE(kWide.stride(3), int64_t(2));
    QVERIFY(relativeError(attendMany(q, kWide, v, mask), reference(q, kWide, v, mask)) < 1e-5);
    const at::Tensor perQuery = torch::randn({2, 1, 4, 1}); // one value for all keys of a query
    QVERIFY(relativeError(attendMany(q, k, v, perQuery), reference(q, k, v, perQuery)) < 1e-5);
}

void TestAttendOne::sumExpMatchesDouble_data() {
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("n");
    QTest::addColumn<double>("spread");
    // Lengths around the vectors (8, 16) and the float blocks (1024), and a vocabulary's; a spread
    // of 0.5 leaves the largest score near 2, where an unmasked tail would add e^-2 a lane.
    for (KernelPath path : kPaths)
        for (int n : {1, 7, 8, 17, 1023, 1024, 1025, 3000, 51289})
            for (double spread : {0.5, 4.0})
                QTest::addRow("%s: %d scores, spread %g", florence::ops::kernelPathName(path), n,
                              spread)
                    << int(path) << n << spread;
}

void TestAttendOne::sumExpMatchesDouble() {
    // The greedy search's log-probability of its token (decoding/Generator.cpp): the sum of
    // exp(x - largest) over the step's scores, -inf (banned tokens) adding nothing.
    QFETCH(int, path);
    QFETCH(int, n);
    QFETCH(double, spread);
    SKIP_UNLESS_SUPPORTED(KernelPath(path));
    const OnPath onPath{KernelPath(path)};
    c10::InferenceMode guard;
    at::Tensor x = torch::randn({n}) * spread;
    float* p = x.data_ptr<float>();
    for (int i = 3; i < n; i += 5)
        p[i] = -std::numeric_limits<float>::infinity();
    const float top = x.max().item<float>();
    double want = 0;
    for (int i = 0; i < n; ++i)
        want += std::exp(double(p[i]) - top);
    const double got = florence::ops::sumExp(p, n, top);
    QVERIFY2(
        std::abs(got - want) <= 2e-6 * want,
        qPrintable(
            QString("sum %1 against %2 in double").arg(got, 0, 'g', 10).arg(want, 0, 'g', 10)));
    // A score that is no number makes the sum none.
    p[n / 2] = std::numeric_limits<float>::quiet_NaN();
    QVERIFY(std::isnan(florence::ops::sumExp(p, n, top)));
}

QTEST_GUILESS_MAIN(TestAttendOne)
#include "TestAttendOne.moc"
