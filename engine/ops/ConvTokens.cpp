// florence::conv_tokens and florence::residual_dwconv: the vision encoder's convolutions on
// channels-last tokens (model.py's ConvEmbed between stages and ResidualConv). See Ops.h.
//
// Why operators: LibTorch hands a convolution of a channels-last view to oneDNN, whose AVX2
// kernels for that layout are its slow ones. Held to AVX2 on an AMD Zen 5, one thread, the base
// vision encoder's 3x3 stride-2 convolution between stages 0 and 1 ran at 11 G multiply-adds a
// second (the same on an NCHW copy: 25), and its 3x3 depthwise convolutions (two a block) read
// and wrote at 4.5-9 GB/s, where each is one pass over the tokens. Here the strided convolution
// is a matrix product over patches gathered from the tokens (ConvKernelsAvx2.cpp's 6 x 16
// tiles), and the depthwise one adds its input as it writes (x + dwconv(x)), one pass.
#include "Avx2Kernels.h"
#include "KernelPath.h"
#include "Ops.h"
#include "PackCache.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace florence::ops {

namespace {

// What the model computes without the operators (model.py's conv_tokens() and
// residual_dwconv()).
at::Tensor convReference(const at::Tensor& x, int64_t h, int64_t w, const at::Tensor& weight,
                         const c10::optional<at::Tensor>& bias, int64_t stride, int64_t padding) {
    const int64_t b = x.size(0), c = x.size(2);
    const at::Tensor y = at::conv2d(x.reshape({b, h, w, c}).permute({0, 3, 1, 2}), weight, bias,
                                    {stride, stride}, {padding, padding});
    return y.permute({0, 2, 3, 1}).reshape({b, -1, y.size(1)});
}

at::Tensor dwReference(const at::Tensor& x, int64_t h, int64_t w, const at::Tensor& weight,
                       const c10::optional<at::Tensor>& bias) {
    const int64_t b = x.size(0), c = x.size(2);
    const at::Tensor y = at::conv2d(x.reshape({b, h, w, c}).permute({0, 3, 1, 2}), weight, bias,
                                    {1, 1}, {1, 1}, {1, 1}, c);
    return x + y.permute({0, 2, 3, 1}).reshape({b, h * w, c});
}

// On the AVX2 kernel path only: on the AVX-512 path oneDNN's kernels for channels-last views are
// the fast ones (model.py's ConvEmbed).
bool ownKernels(const at::Tensor& x, const at::Tensor& weight) {
    return kernelPath() == KernelPath::Avx2 && kernelPathSupported(KernelPath::Avx2) &&
           x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat && x.is_cpu() &&
           weight.is_cpu();
}

// The product's blocking: a task is up to kTilesPerTask tiles of output positions (their
// patches gathered once); it runs k in blocks of kBlockK, and each block over every panel of 16
// output channels and every tile, so a panel's block of weights (kBlockK x 16 floats, 16 KB)
// stays in the first-level cache while the tiles pass over it, and the tiles' block of patches
// in the second-level one while the panels do.
constexpr int64_t kTilesPerTask = 16;
constexpr int64_t kBlockK = 256;

// weight [out, c, kh, kw] as panels of 16 output channels: panel p's element (i, j) at
// p * k * 16 + i * 16 + j is output channel p * 16 + j's weight at i = (ky * kw + kx) * c + ch
// (zero past the last channel), so a tile's k steps read one panel front to back.
std::shared_ptr<const std::vector<float>> packConvWeights(const at::Tensor& weight,
                                                          int64_t panels) {
    const at::Tensor wc = weight.contiguous();
    const float* wp = wc.data_ptr<float>();
    const int64_t out = wc.size(0), c = wc.size(1), kh = wc.size(2), kw = wc.size(3);
    const int64_t k = kh * kw * c;
    auto packed = std::make_shared<std::vector<float>>(size_t(panels * k * 16), 0.0f);
    float* pp = packed->data();
    at::parallel_for(0, panels, 1, [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p)
            for (int64_t j = 0; j < 16 && p * 16 + j < out; ++j) {
                const float* src = wp + (p * 16 + j) * c * kh * kw;
                float* dst = pp + p * k * 16 + j;
                for (int64_t ch = 0; ch < c; ++ch)
                    for (int64_t ky = 0; ky < kh; ++ky)
                        for (int64_t kx = 0; kx < kw; ++kx)
                            dst[((ky * kw + kx) * c + ch) * 16] = src[(ch * kh + ky) * kw + kx];
            }
    });
    return packed;
}

at::Tensor convTokens(const at::Tensor& x, int64_t h, int64_t w, const at::Tensor& weight,
                      const c10::optional<at::Tensor>& bias, int64_t stride, int64_t padding) {
    throwIfInterrupted();
    TORCH_CHECK(x.dim() == 3 && h >= 1 && w >= 1 && x.size(1) == h * w,
                "florence::conv_tokens: x must be [images, h * w, channels] with h * w = ", h,
                " * ", w, ", not of shape ", x.sizes());
    TORCH_CHECK(weight.dim() == 4 && weight.size(1) == x.size(2) && weight.size(2) >= 1 &&
                    weight.size(3) >= 1,
                "florence::conv_tokens: weight must be [out, ", x.size(2),
                ", kh, kw], not of shape ", weight.sizes());
    TORCH_CHECK(stride >= 1 && padding >= 0, "florence::conv_tokens: stride ", stride,
                " and padding ", padding, " must be at least 1 and 0");
    const int64_t kh = weight.size(2), kw = weight.size(3);
    TORCH_CHECK(h + 2 * padding >= kh && w + 2 * padding >= kw, "florence::conv_tokens: a ", kh,
                " x ", kw, " kernel does not fit ", h, " x ", w, " tokens padded by ", padding);
    TORCH_CHECK(!bias || !bias->defined() || (bias->dim() == 1 && bias->size(0) == weight.size(0)),
                "florence::conv_tokens: bias must be [", weight.size(0), "]");
    if (!ownKernels(x, weight) || x.size(2) == 0 || x.size(0) == 0 ||
        (bias && bias->defined() && bias->scalar_type() != at::kFloat))
        return convReference(x, h, w, weight, bias, stride, padding);

    const int64_t images = x.size(0), c = x.size(2), out = weight.size(0);
    const int64_t h2 = (h + 2 * padding - kh) / stride + 1,
                  w2 = (w + 2 * padding - kw) / stride + 1;
    const int64_t k = kh * kw * c, panels = (out + 15) / 16, rows = images * h2 * w2;
    const at::Tensor xc = x.contiguous();
    const float* xp = xc.data_ptr<float>();

    // The weights in panels of 16 output channels, packed at their first use (PackCache.h); the
    // bias padded alike.
    const auto packed = cachedPack<std::shared_ptr<const std::vector<float>>>(
        weight, [&](const at::Tensor& wt) { return packConvWeights(wt, panels); });
    std::vector<float> biases(size_t(panels * 16), 0.0f);
    if (bias && bias->defined()) {
        const at::Tensor bc = bias->contiguous();
        std::memcpy(biases.data(), bc.data_ptr<float>(), sizeof(float) * size_t(out));
    }

    at::Tensor result = at::empty({images, h2 * w2, out}, xc.options());
    float* rp = result.data_ptr<float>();
    // Enough tasks for the cores: at least eight a thread where there are rows for them.
    const int64_t tileCount = (rows + kConvTileRows - 1) / kConvTileRows;
    const int64_t perTask =
        std::clamp<int64_t>(tileCount / (8 * at::get_num_threads()), 1, kTilesPerTask) *
        kConvTileRows;
    const int64_t tasks = (rows + perTask - 1) / perTask;
    at::parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> patches(size_t(perTask * k));
        for (int64_t task = begin; task < end; ++task) {
            const int64_t row0 = task * perTask, taskRows = std::min(perTask, rows - row0);
            const int64_t tiles = (taskRows + kConvTileRows - 1) / kConvTileRows;
            // Gather: tile t's patch r is output position row0 + t * kConvTileRows + r, its
            // elements interleaved with the tile's other patches.
            // Taps in the padding and the last tile's rows past the end are zeros; only they
            // are written as such (the buffer is reused from task to task).
            for (int64_t i = 0; i < tiles * kConvTileRows; ++i) {
                const int64_t row = row0 + i, image = row / (h2 * w2), pos = row % (h2 * w2);
                const int64_t oy = pos / w2, ox = pos % w2;
                float* tile = patches.data() + (i / kConvTileRows) * kConvTileRows * k;
                const int64_t r = i % kConvTileRows;
                for (int64_t ky = 0; ky < kh; ++ky) {
                    const int64_t iy = oy * stride - padding + ky;
                    for (int64_t kx = 0; kx < kw; ++kx) {
                        const int64_t ix = ox * stride - padding + kx;
                        float* dst = tile + ((ky * kw + kx) * c) * kConvTileRows + r;
                        if (i >= taskRows || iy < 0 || iy >= h || ix < 0 || ix >= w) {
                            for (int64_t ch = 0; ch < c; ++ch)
                                dst[ch * kConvTileRows] = 0.0f;
                            continue;
                        }
                        const float* src = xp + ((image * h + iy) * w + ix) * c;
                        for (int64_t ch = 0; ch < c; ++ch)
                            dst[ch * kConvTileRows] = src[ch];
                    }
                }
            }
            for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
                const int64_t kb = std::min(kBlockK, k - k0);
                for (int64_t p = 0; p < panels; ++p) {
                    const int cols = int(std::min<int64_t>(16, out - p * 16));
                    for (int64_t t = 0; t < tiles; ++t) {
                        const int tileRows =
                            int(std::min<int64_t>(kConvTileRows, taskRows - t * kConvTileRows));
                        convTileF32Avx2(
                            patches.data() + (t * k + k0) * kConvTileRows,
                            packed->data() + (p * k + k0) * 16, kb, biases.data() + p * 16, k0 > 0,
                            rp + (row0 + t * kConvTileRows) * out + p * 16, out, tileRows, cols);
                    }
                }
            }
        }
    });
    return result;
}

at::Tensor residualDwconv(const at::Tensor& x, int64_t h, int64_t w, const at::Tensor& weight,
                          const c10::optional<at::Tensor>& bias) {
    throwIfInterrupted();
    TORCH_CHECK(x.dim() == 3 && h >= 1 && w >= 1 && x.size(1) == h * w,
                "florence::residual_dwconv: x must be [images, h * w, channels] with h * w = ", h,
                " * ", w, ", not of shape ", x.sizes());
    const int64_t c = x.size(2);
    TORCH_CHECK(weight.dim() == 4 && weight.size(0) == c && weight.size(1) == 1 &&
                    weight.size(2) == 3 && weight.size(3) == 3,
                "florence::residual_dwconv: weight must be [", c, ", 1, 3, 3], not of shape ",
                weight.sizes());
    TORCH_CHECK(!bias || !bias->defined() || (bias->dim() == 1 && bias->size(0) == c),
                "florence::residual_dwconv: bias must be [", c, "]");
    if (!ownKernels(x, weight) || c == 0 || x.size(0) == 0 ||
        (bias && bias->defined() && bias->scalar_type() != at::kFloat))
        return dwReference(x, h, w, weight, bias);

    const int64_t images = x.size(0);
    const at::Tensor xc = x.contiguous();
    // The kernel as [9, c], (ky, kx) major, so eight channels' taps are one load.
    const at::Tensor taps = weight.reshape({c, 9}).t().contiguous();
    const at::Tensor b =
        bias && bias->defined() ? bias->contiguous() : at::zeros({c}, xc.options());
    at::Tensor result = at::empty_like(xc);
    const float* xp = xc.data_ptr<float>();
    const float* tp = taps.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    float* rp = result.data_ptr<float>();
    at::parallel_for(0, images * h, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int64_t image = i / h, y = i % h;
            residualDepthwise3x3Avx2(xp + image * h * w * c, h, w, c, tp, bp, y,
                                     rp + image * h * w * c);
        }
    });
    return result;
}

} // namespace

} // namespace florence::ops

TORCH_LIBRARY_FRAGMENT(florence, m) {
    m.def("conv_tokens(Tensor x, int h, int w, Tensor weight, Tensor? bias, int stride, "
          "int padding) -> Tensor");
    m.def("residual_dwconv(Tensor x, int h, int w, Tensor weight, Tensor? bias) -> Tensor");
}

TORCH_LIBRARY_IMPL(florence, CPU, m) {
    m.impl("conv_tokens", &florence::ops::convTokens);
    m.impl("residual_dwconv", &florence::ops::residualDwconv);
}
