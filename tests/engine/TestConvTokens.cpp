// florence::conv_tokens and florence::residual_dwconv, the vision encoder's convolutions on
// channels-last tokens (engine/ops/ConvTokens.cpp): against LibTorch's convolution in double
// precision on every kernel path the CPU has (AVX-512, AVX2 + FMA, LibTorch; rows for a path the
// CPU lacks are skipped), for Florence-2's shapes and the ones the kernels treat specially
// (output channels not a multiple of 16, positions not a multiple of the six-row tiles, more
// than one block of 256 along k, channels not a multiple of 32 or 8, no bias, images one or
// two pixels wide), the same result on one thread as on two, a weight changed in place packed
// again, clear refusals of mismatched shapes, and that the TorchScript interpreter finds both.
#include "KernelPath.h"
#include "Ops.h"
#include "engine/KernelPaths.h"

#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/runtime/operator.h>
#include <torch/torch.h>

#include <QtTest>

#include <algorithm>
#include <functional>

namespace {

// What `run` returns with LibTorch's pool held to one thread (given back however it ends).
template <class Run> at::Tensor onOneThread(const Run& run) {
    struct Restore {
        int threads = at::get_num_threads();
        ~Restore() { at::set_num_threads(threads); }
    } restore;
    at::set_num_threads(1);
    return run();
}

using florence::ops::KernelPath;
using florence::test::kPaths;
using florence::test::OnPath;

at::Tensor convTokens(const at::Tensor& x, int64_t h, int64_t w, const at::Tensor& weight,
                      const c10::optional<at::Tensor>& bias, int64_t stride, int64_t padding) {
    static const auto op =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("florence::conv_tokens", "")
            .typed<at::Tensor(const at::Tensor&, int64_t, int64_t, const at::Tensor&,
                              const c10::optional<at::Tensor>&, int64_t, int64_t)>();
    return op.call(x, h, w, weight, bias, stride, padding);
}

at::Tensor residualDwconv(const at::Tensor& x, int64_t h, int64_t w, const at::Tensor& weight,
                          const c10::optional<at::Tensor>& bias) {
    static const auto op =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("florence::residual_dwconv", "")
            .typed<at::Tensor(const at::Tensor&, int64_t, int64_t, const at::Tensor&,
                              const c10::optional<at::Tensor>&)>();
    return op.call(x, h, w, weight, bias);
}

c10::optional<at::Tensor> toDouble(const c10::optional<at::Tensor>& t) {
    return t ? c10::optional<at::Tensor>(t->to(at::kDouble)) : c10::nullopt;
}

// What model.py's conv_tokens() computes without the operator, in double precision.
at::Tensor convReference(const at::Tensor& x, int64_t h, int64_t w, const at::Tensor& weight,
                         const c10::optional<at::Tensor>& bias, int64_t stride, int64_t padding) {
    const int64_t b = x.size(0), c = x.size(2);
    const at::Tensor y =
        at::conv2d(x.to(at::kDouble).reshape({b, h, w, c}).permute({0, 3, 1, 2}),
                   weight.to(at::kDouble), toDouble(bias), {stride, stride}, {padding, padding});
    return y.permute({0, 2, 3, 1}).reshape({b, -1, y.size(1)});
}

// What model.py's residual_dwconv() computes without the operator, in double precision.
at::Tensor dwReference(const at::Tensor& x, int64_t h, int64_t w, const at::Tensor& weight,
                       const c10::optional<at::Tensor>& bias) {
    const int64_t b = x.size(0), c = x.size(2);
    const at::Tensor xd = x.to(at::kDouble);
    const at::Tensor y =
        at::conv2d(xd.reshape({b, h, w, c}).permute({0, 3, 1, 2}), weight.to(at::kDouble),
                   toDouble(bias), {1, 1}, {1, 1}, {1, 1}, c);
    return xd + y.permute({0, 2, 3, 1}).reshape({b, h * w, c});
}

double relativeError(const at::Tensor& got, const at::Tensor& want) {
    const double scale = std::max(1e-30, want.abs().max().item<double>());
    return (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>() / scale;
}

QString thrownBy(const std::function<void()>& call) {
    try {
        call();
    } catch (const c10::Error& e) {
        return QString::fromStdString(e.what_without_backtrace());
    }
    return {};
}

} // namespace

class TestConvTokens : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void convMatchesLibTorch_data();
    void convMatchesLibTorch();
    void convOfManyTilesNonSquareAndStrided();
    void convPacksAWeightChangedInPlaceAgain();
    void convRefusesMismatchedShapes();
    void dwMatchesLibTorch_data();
    void dwMatchesLibTorch();
    void dwRefusesMismatchedShapes();
    void otherDtypesGoToLibTorch();
    void interpreterFindsTheOperators();
};

void TestConvTokens::initTestCase() {
    torch::manual_seed(23);
    // At least two threads, so the tasks are split between them as in the app.
    at::set_num_threads(std::max(2, at::get_num_threads()));
    QVERIFY(QFileInfo::exists(QString::fromUtf8(florence_ops_library_path())));
}

void TestConvTokens::convMatchesLibTorch_data() {
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("images");
    QTest::addColumn<int>("h");
    QTest::addColumn<int>("w");
    QTest::addColumn<int>("channels");
    QTest::addColumn<int>("out");
    QTest::addColumn<int>("kernel");
    QTest::addColumn<int>("stride");
    QTest::addColumn<int>("padding");
    QTest::addColumn<bool>("bias");
    struct Shape {
        int images, h, w, channels, out, kernel, stride, padding;
    };
    // Florence-2's downsampling is 3 x 3, stride 2, padding 1 (base stage 1 reads 192 x 192 x 128
    // into 256 channels; the first row here is its last stage's shape at a smaller image). The
    // others: 20 output channels (a panel of 16 and one of 4), 7 x 9 positions and two images
    // (tiles of six cut short, an image's last row), k = 3 * 3 * 64 = 576 (three blocks of 256),
    // stride 1, a 1 x 1 kernel, no padding, an image one pixel wide, a 2 x 2 kernel with
    // padding larger than the image's edge needs.
    const Shape shapes[] = {{1, 12, 12, 512, 64, 3, 2, 1}, {2, 7, 9, 24, 20, 3, 2, 1},
                            {1, 10, 10, 64, 40, 3, 2, 1},  {1, 5, 6, 8, 16, 3, 1, 1},
                            {1, 4, 4, 8, 33, 1, 1, 0},     {1, 9, 9, 8, 16, 3, 2, 0},
                            {2, 5, 1, 16, 16, 3, 2, 1},    {1, 3, 4, 5, 7, 2, 1, 2}};
    for (KernelPath path : kPaths)
        for (const Shape& s : shapes)
            for (bool bias : {true, false})
                QTest::addRow("%s: %d x %d x %d x %d -> %d, %dx%d stride %d padding %d%s",
                              florence::ops::kernelPathName(path), s.images, s.h, s.w, s.channels,
                              s.out, s.kernel, s.kernel, s.stride, s.padding,
                              bias ? "" : ", no bias")
                    << int(path) << s.images << s.h << s.w << s.channels << s.out << s.kernel
                    << s.stride << s.padding << bias;
}

void TestConvTokens::convMatchesLibTorch() {
    QFETCH(int, path);
    QFETCH(int, images);
    QFETCH(int, h);
    QFETCH(int, w);
    QFETCH(int, channels);
    QFETCH(int, out);
    QFETCH(int, kernel);
    QFETCH(int, stride);
    QFETCH(int, padding);
    QFETCH(bool, bias);
    SKIP_UNLESS_SUPPORTED(KernelPath(path));
    const OnPath onPath{KernelPath(path)};
    c10::InferenceMode guard;
    const at::Tensor x = torch::randn({images, h * w, channels});
    const at::Tensor weight = torch::randn({out, channels, kernel, kernel}) * 0.1;
    const c10::optional<at::Tensor> b =
        bias ? c10::optional<at::Tensor>(torch::randn({out})) : c10::nullopt;
    const at::Tensor got = convTokens(x, h, w, weight, b, stride, padding);
    const int64_t h2 = (h + 2 * padding - kernel) / stride + 1;
    const int64_t w2 = (w + 2 * padding - kernel) / stride + 1;
    QCOMPARE(got.scalar_type(), at::kFloat);
    QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{images, h2 * w2, out}));
    const double err = relativeError(got, convReference(x, h, w, weight, b, stride, padding));
    QVERIFY2(err < 1e-5, qPrintable(QString("relative error %1 against LibTorch").arg(err)));
    // Each output is one sum in order along k, whichever task computes it: the same on one
    // thread. Only the AVX2 path runs the own kernels; the others run LibTorch's convolution
    // (oneDNN on AVX-512), which need not be: on a Zen 5 with AVX-VNNI its 64 -> 40 channel
    // case differed between one thread and two.
    if (KernelPath(path) != KernelPath::Avx2)
        return;
    QVERIFY(at::equal(
        got, onOneThread([&] { return convTokens(x, h, w, weight, b, stride, padding); })));
}

void TestConvTokens::convOfManyTilesNonSquareAndStrided() {
    // As at base size, where a task holds up to 16 tiles of six positions: 21 x 17 outputs (357
    // positions, several tiles a task on one thread and on two), a 2 x 3 kernel (kh and kw
    // apart), 37 output channels (three panels, the last of 5), and x a transposed view, not
    // contiguous.
    for (KernelPath path : kPaths) {
        if (!florence::ops::kernelPathSupported(path))
            continue;
        const OnPath onPath{path};
        c10::InferenceMode guard;
        const int64_t h = 41, w = 34, c = 24;
        const at::Tensor x = torch::randn({2, c, h * w}).transpose(1, 2);
        QVERIFY(!x.is_contiguous());
        const at::Tensor weight = torch::randn({37, c, 2, 3}) * 0.1;
        const at::Tensor bias = torch::randn({37});
        const at::Tensor got = convTokens(x, h, w, weight, bias, 2, 1);
        QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{2, 21 * 17, 37}));
        const double err = relativeError(got, convReference(x, h, w, weight, bias, 2, 1));
        QVERIFY2(err < 1e-5, qPrintable(QString("%1: relative error %2")
                                            .arg(florence::ops::kernelPathName(path))
                                            .arg(err)));
        if (path != KernelPath::Avx2) // LibTorch's convolution (see convMatchesLibTorch)
            continue;
        QVERIFY(
            at::equal(got, onOneThread([&] { return convTokens(x, h, w, weight, bias, 2, 1); })));
    }
}

void TestConvTokens::convPacksAWeightChangedInPlaceAgain() {
    // The packed weights are kept while the tensor lives (PackCache.h); a change in place must not
    // leave the old ones in use.
    for (KernelPath path : kPaths) {
        if (!florence::ops::kernelPathSupported(path))
            continue;
        const OnPath onPath{path};
        at::Tensor weight = torch::randn({16, 8, 3, 3});
        const at::Tensor x = torch::randn({1, 36, 8});
        const at::Tensor bias = torch::randn({16});
        at::Tensor first;
        {
            c10::InferenceMode guard;
            first = convTokens(x, 6, 6, weight, bias, 2, 1);
        }
        weight.mul_(-2.0);
        c10::InferenceMode guard;
        const at::Tensor second = convTokens(x, 6, 6, weight, bias, 2, 1);
        const double err = relativeError(second, convReference(x, 6, 6, weight, bias, 2, 1));
        QVERIFY2(err < 1e-5, qPrintable(QString("%1: relative error %2 after the change")
                                            .arg(florence::ops::kernelPathName(path))
                                            .arg(err)));
        QVERIFY(!at::equal(first, second));
    }
}

void TestConvTokens::convRefusesMismatchedShapes() {
    c10::InferenceMode guard;
    const at::Tensor weight = torch::randn({16, 8, 3, 3});
    QString message = thrownBy([&] { convTokens(torch::randn({36, 8}), 6, 6, weight, {}, 2, 1); });
    QVERIFY2(message.contains("x must be [images, h * w, channels]"), qPrintable(message));
    message = thrownBy([&] { convTokens(torch::randn({1, 35, 8}), 6, 6, weight, {}, 2, 1); });
    QVERIFY2(message.contains("h * w = 6 * 6"), qPrintable(message));
    message = thrownBy([&] { convTokens(torch::randn({1, 36, 9}), 6, 6, weight, {}, 2, 1); });
    QVERIFY2(message.contains("weight must be [out, 9, kh, kw]"), qPrintable(message));
    message = thrownBy([&] {
        convTokens(torch::randn({1, 36, 8}), 6, 6, weight, torch::randn({15}), 2, 1);
    });
    QVERIFY2(message.contains("bias must be [16]"), qPrintable(message));
    message = thrownBy([&] { convTokens(torch::randn({1, 36, 8}), 6, 6, weight, {}, 0, 1); });
    QVERIFY2(message.contains("must be at least 1 and 0"), qPrintable(message));
    message = thrownBy([&] {
        convTokens(torch::randn({1, 4, 8}), 2, 2, torch::randn({16, 8, 5, 5}), {}, 1, 0);
    });
    QVERIFY2(message.contains("does not fit 2 x 2 tokens"), qPrintable(message));
}

void TestConvTokens::dwMatchesLibTorch_data() {
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("images");
    QTest::addColumn<int>("h");
    QTest::addColumn<int>("w");
    QTest::addColumn<int>("channels");
    QTest::addColumn<bool>("bias");
    struct Shape {
        int images, h, w, channels;
    };
    // Florence-2's position encodings: 128 to 1024 channels, 192 x 192 to 24 x 24 positions at
    // base size. The others: 40 channels (32 at a time, then 8), 13 (8, then one at a time),
    // images one pixel high or wide (every neighbour on an edge), two images.
    const Shape shapes[] = {{1, 24, 24, 128}, {2, 7, 5, 40}, {1, 6, 9, 13},
                            {1, 1, 7, 32},    {1, 5, 1, 64}, {1, 1, 1, 8}};
    for (KernelPath path : kPaths)
        for (const Shape& s : shapes)
            for (bool bias : {true, false})
                QTest::addRow("%s: %d x %d x %d x %d%s", florence::ops::kernelPathName(path),
                              s.images, s.h, s.w, s.channels, bias ? "" : ", no bias")
                    << int(path) << s.images << s.h << s.w << s.channels << bias;
}

void TestConvTokens::dwMatchesLibTorch() {
    QFETCH(int, path);
    QFETCH(int, images);
    QFETCH(int, h);
    QFETCH(int, w);
    QFETCH(int, channels);
    QFETCH(bool, bias);
    SKIP_UNLESS_SUPPORTED(KernelPath(path));
    const OnPath onPath{KernelPath(path)};
    c10::InferenceMode guard;
    const at::Tensor x = torch::randn({images, h * w, channels});
    const at::Tensor weight = torch::randn({channels, 1, 3, 3});
    const c10::optional<at::Tensor> b =
        bias ? c10::optional<at::Tensor>(torch::randn({channels})) : c10::nullopt;
    const at::Tensor got = residualDwconv(x, h, w, weight, b);
    QCOMPARE(got.scalar_type(), at::kFloat);
    QCOMPARE(got.sizes().vec(), x.sizes().vec());
    const double err = relativeError(got, dwReference(x, h, w, weight, b));
    QVERIFY2(err < 1e-6, qPrintable(QString("relative error %1 against LibTorch").arg(err)));
    if (KernelPath(path) != KernelPath::Avx2) // LibTorch's (see convMatchesLibTorch)
        return;
    QVERIFY(at::equal(got, onOneThread([&] { return residualDwconv(x, h, w, weight, b); })));
}

void TestConvTokens::dwRefusesMismatchedShapes() {
    c10::InferenceMode guard;
    QString message = thrownBy([&] {
        residualDwconv(torch::randn({1, 35, 8}), 6, 6, torch::randn({8, 1, 3, 3}), {});
    });
    QVERIFY2(message.contains("h * w = 6 * 6"), qPrintable(message));
    message = thrownBy([&] {
        residualDwconv(torch::randn({1, 36, 8}), 6, 6, torch::randn({8, 1, 5, 5}), {});
    });
    QVERIFY2(message.contains("weight must be [8, 1, 3, 3]"), qPrintable(message));
    message = thrownBy([&] {
        residualDwconv(torch::randn({1, 36, 8}), 6, 6, torch::randn({8, 1, 3, 3}),
                       torch::randn({7}));
    });
    QVERIFY2(message.contains("bias must be [8]"), qPrintable(message));
}

void TestConvTokens::otherDtypesGoToLibTorch() {
    // bfloat16 tokens (the AVX-512 class's reduced-precision encoders) are LibTorch's, on the
    // AVX2 path too.
    const OnPath onPath{florence::ops::kernelPathSupported(KernelPath::Avx2) ? KernelPath::Avx2
                                                                             : KernelPath::Torch};
    c10::InferenceMode guard;
    const at::Tensor x = torch::randn({1, 36, 16});
    const at::Tensor weight = torch::randn({16, 16, 3, 3}) * 0.1;
    const at::Tensor bias = torch::randn({16});
    const at::Tensor got = convTokens(x.to(at::kBFloat16), 6, 6, weight.to(at::kBFloat16),
                                      bias.to(at::kBFloat16), 2, 1);
    QCOMPARE(got.scalar_type(), at::kBFloat16);
    QVERIFY(relativeError(got, convReference(x, 6, 6, weight, bias, 2, 1)) < 5e-2);
    const at::Tensor dw = torch::randn({16, 1, 3, 3});
    const at::Tensor gotDw =
        residualDwconv(x.to(at::kBFloat16), 6, 6, dw.to(at::kBFloat16), bias.to(at::kBFloat16));
    QCOMPARE(gotDw.scalar_type(), at::kBFloat16);
    QVERIFY(relativeError(gotDw, dwReference(x, 6, 6, dw, bias)) < 5e-2);
}

void TestConvTokens::interpreterFindsTheOperators() {
    // What a package's vision.pt needs: the interpreter looks "ops.florence.conv_tokens" and
    // "ops.florence.residual_dwconv" up by name when it loads the code.
    c10::InferenceMode guard;
    const auto conv =
        torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString("florence::conv_tokens"));
    QCOMPARE(conv.size(), size_t(1));
    const at::Tensor x = torch::randn({1, 36, 8});
    const at::Tensor weight = torch::randn({16, 8, 3, 3});
    torch::jit::Stack stack{x,          int64_t(6), int64_t(6), weight, c10::IValue(),
                            int64_t(2), int64_t(1)};
    conv[0]->getOperation()(stack);
    QCOMPARE(stack.size(), size_t(1));
    QVERIFY(relativeError(stack[0].toTensor(), convReference(x, 6, 6, weight, {}, 2, 1)) < 1e-5);
    QCOMPARE(
        torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString("florence::residual_dwconv"))
            .size(),
        size_t(1));
}

QTEST_GUILESS_MAIN(TestConvTokens)
#include "TestConvTokens.moc"
