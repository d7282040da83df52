// florence::attend_windows: the vision encoder's window attention (model.py's WindowAttention
// with float32 activations), every window and head at once. See Ops.h.
//
// Why an operator: LibTorch's batched product runs one small GEMM per window and head, one after
// the other, each threaded by OpenBLAS (144 x 32 x 144 at Florence-2's window size), which
// reached about 12 G multiply-adds per second on two AVX2 cores and took 400 ms of the base
// vision encoder's 2.5-3 s in the int8 mode. Here the (window, head) pairs are split over the
// cores and each runs its two products and the softmax between them in registers and cache
// (AttendKernelsAvx2.cpp), reading q, k and v in place from the qkv projection and writing the
// heads merged, which also saves the permutes and copies around the products.
#include "Avx2Kernels.h"
#include "KernelPath.h"
#include "Ops.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <vector>

namespace florence::ops {

namespace {

// What the model computes without the operator (model.py's window_attention()).
at::Tensor reference(const at::Tensor& qkv, int64_t heads, double scale) {
    const int64_t windows = qkv.size(0), n = qkv.size(1), c = qkv.size(2) / 3;
    const at::Tensor parts = qkv.reshape({windows, n, 3, heads, c / heads}).permute({2, 0, 3, 1, 4});
    const at::Tensor q = parts[0], k = parts[1], v = parts[2];
    const at::Tensor attn = at::matmul(q * scale, k.transpose(-2, -1)).softmax(-1);
    return at::matmul(attn, v).transpose(1, 2).reshape({windows, n, c});
}

at::Tensor attendWindows(const at::Tensor& qkv, int64_t heads, double scale) {
    throwIfInterrupted();
    TORCH_CHECK(qkv.dim() == 3, "florence::attend_windows: qkv must be 3-D [windows, positions, "
                                "3 * channels], not of shape ",
                qkv.sizes());
    TORCH_CHECK(heads >= 1 && qkv.size(2) % (3 * heads) == 0, "florence::attend_windows: ",
                qkv.size(2), " columns do not split into q, k and v of ", heads, " heads");
    const int64_t windows = qkv.size(0), n = qkv.size(1), c = qkv.size(2) / 3, d = c / heads;
    if (kernelPath() == KernelPath::Torch || !kernelPathSupported(KernelPath::Avx2) ||
        qkv.scalar_type() != at::kFloat || !qkv.is_cpu() || d % 8 != 0 || d > kBlockMaxDim ||
        n < 1 || windows < 1)
        return reference(qkv, heads, scale);

    const at::Tensor x = qkv.contiguous();
    at::Tensor out = at::empty({windows, n, c}, x.options());
    const float* xp = x.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const auto s = static_cast<float>(scale);
    at::parallel_for(0, windows * heads, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> scratch(static_cast<size_t>(blockScratchFloats(n, d)));
        for (int64_t i = begin; i < end; ++i) {
            const int64_t w = i / heads, h = i % heads;
            const float* base = xp + w * n * 3 * c + h * d;
            BlockAttention a;
            a.q = base;
            a.k = base + c;
            a.v = base + 2 * c;
            a.qStride = a.kStride = a.vStride = 3 * c;
            a.rows = a.keys = n;
            a.dim = d;
            a.scale = s;
            a.out = op + w * n * c + h * d;
            a.outStride = c;
            attendBlockF32Avx2(a, scratch.data());
        }
    });
    return out;
}

} // namespace

} // namespace florence::ops

TORCH_LIBRARY_FRAGMENT(florence, m) {
    m.def("attend_windows(Tensor qkv, int heads, float scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(florence, CPU, m) {
    m.impl("attend_windows", &florence::ops::attendWindows);
}
