// florence::attend_channels: the vision encoder's channel attention (model.py's
// ChannelAttention with float32 activations), every image and group at once. See Ops.h.
//
// Why an operator: each group's attention is over its channels, not its positions: two products
// of d x n by n x d and n x d by d x d (d = 32 channels, n up to 36864 positions at base size).
// LibTorch ran them as batched products on q, k and v permuted out of the qkv projection, then
// copied the result back to [positions, channels]: at two AVX2 cores about 60 ms of batched
// products, 20 ms of copies and 8 ms of scaling q per base image, the most after the linear
// layers, window attention and convolutions (CHANGELOG.md). Here q, k and v are read
// in place, the long products split over the cores by slices of positions, and the result is
// written with the groups merged (AttendKernelsAvx2.cpp).
#include "Avx2Kernels.h"
#include "KernelPath.h"
#include "Ops.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

namespace florence::ops {

namespace {

// The Gram products' tasks: each image's positions in up to kSlices slices of at least
// kMinSliceRows, a partition fixed by the shape alone (not by the number of threads), so that the
// slices' partial sums, added in order, give the same result on any machine.
constexpr int64_t kSlices = 32;
constexpr int64_t kMinSliceRows = 64;
// Positions per task of the weighted values.
constexpr int64_t kMixRows = 64;

// What the model computes without the operator (model.py's channel_attention()).
at::Tensor reference(const at::Tensor& qkv, int64_t groups, double scale) {
    const int64_t b = qkv.size(0), n = qkv.size(1), c = qkv.size(2) / 3;
    const at::Tensor parts = qkv.reshape({b, n, 3, groups, c / groups}).permute({2, 0, 3, 1, 4});
    const at::Tensor q = parts[0] * scale, k = parts[1], v = parts[2];
    const at::Tensor attn = at::matmul(q.transpose(-1, -2), k).softmax(-1);
    return at::matmul(attn, v.transpose(-1, -2))
        .transpose(-1, -2)
        .transpose(1, 2)
        .reshape({b, n, c});
}

at::Tensor attendChannels(const at::Tensor& qkv, int64_t groups, double scale) {
    throwIfInterrupted();
    TORCH_CHECK(qkv.dim() == 3,
                "florence::attend_channels: qkv must be 3-D [images, positions, "
                "3 * channels], not of shape ",
                qkv.sizes());
    TORCH_CHECK(groups >= 1 && qkv.size(2) % (3 * groups) == 0,
                "florence::attend_channels: ", qkv.size(2),
                " columns do not split into q, k and v of ", groups, " groups");
    const int64_t images = qkv.size(0), n = qkv.size(1), c = qkv.size(2) / 3, d = c / groups;
    if (kernelPath() == KernelPath::Torch || !kernelPathSupported(KernelPath::Avx2) ||
        qkv.scalar_type() != at::kFloat || !qkv.is_cpu() || d % 8 != 0 || d > kBlockMaxDim ||
        n < 1 || images < 1)
        return reference(qkv, groups, scale);

    const at::Tensor x = qkv.contiguous();
    at::Tensor out = at::empty({images, n, c}, x.options());
    const float* xp = x.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const int64_t items = images * groups, dd = d * d, stride = 3 * c;

    const int64_t sliceRows = std::max(kMinSliceRows, (n + kSlices - 1) / kSlices);
    const int64_t slices = (n + sliceRows - 1) / sliceRows;
    // [images][slices][groups][d][d]
    std::vector<float> gram(static_cast<size_t>(images * slices * groups * dd));
    at::parallel_for(0, images * slices, 1, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
            const int64_t t0 = (task % slices) * sliceRows;
            const float* q = xp + ((task / slices) * n + t0) * stride;
            channelGramAvx2(q, q + c, stride, std::min(sliceRows, n - t0), d, groups,
                            gram.data() + task * groups * dd);
        }
    });
    // [images][groups][d][d]
    std::vector<float> mix(static_cast<size_t>(items * dd));
    at::parallel_for(0, items, 1, [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
            const int64_t image = item / groups, g = item % groups;
            float* total = gram.data() + (image * slices * groups + g) * dd;
            for (int64_t slice = 1; slice < slices; ++slice) {
                const float* part = total + slice * groups * dd;
                for (int64_t e = 0; e < dd; ++e)
                    total[e] += part[e];
            }
            channelMixingAvx2(total, d, static_cast<float>(scale), mix.data() + item * dd);
        }
    });
    const int64_t blocks = (n + kMixRows - 1) / kMixRows;
    at::parallel_for(0, images * blocks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
            const int64_t image = task / blocks, t0 = (task % blocks) * kMixRows;
            channelMixAvx2(xp + (image * n + t0) * stride + 2 * c, stride,
                           std::min(kMixRows, n - t0), mix.data() + image * groups * dd, d, groups,
                           op + (image * n + t0) * c, c);
        }
    });
    return out;
}

} // namespace

} // namespace florence::ops

TORCH_LIBRARY_FRAGMENT(florence, m) {
    m.def("attend_channels(Tensor qkv, int groups, float scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(florence, CPU, m) {
    m.impl("attend_channels", &florence::ops::attendChannels);
}
