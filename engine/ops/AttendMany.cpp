// florence::attend_many: attention with several query rows per head (the text encoder's
// self-attention, a prompt's pass through the decoder, beams' cross-attention, the uncached
// path). See Ops.h.
//
// Why an operator: LibTorch's softmax(q k^T + mask) v writes the scores, the masked scores and
// the probabilities as three tensors of [batch, heads, queries, keys] (the base text encoder's
// 12 x 590 x 590 floats are 16.7 MB each, larger than the cache) and runs one GEMM per head for
// each product. Here every (batch, head) pair is one task, its scores kept for 12 query rows at a
// time in the second-level cache and its output written with the heads merged
// (AttendKernelsAvx2.cpp's attendBlockF32Avx2, as florence::attend_windows). One base
// text-encoder layer's attention on two cores held to AVX2: 12-13 ms -> 9.3-10 ms; the int8
// text encoder 240 -> 211 ms (CHANGELOG.md).
#include "Avx2Kernels.h"
#include "KernelPath.h"
#include "Ops.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <vector>

namespace florence::ops {

namespace {

// What model.py's attend() computes without the operator, the mask in q's dtype (a float32 mask
// would promote bfloat16 scores, which then do not multiply bfloat16 values), clamped first as
// the model's bfloat16 attention does: float32's lowest value, the model's padding, is -inf in
// bfloat16, and a row padded throughout would give NaN instead of the values' mean.
at::Tensor reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask) {
    const at::Tensor m =
        mask.scalar_type() == q.scalar_type() ? mask : mask.clamp_min(-1e30).to(q.scalar_type());
    const at::Tensor scores = at::matmul(q, k.transpose(-1, -2)) + m;
    return at::matmul(scores.softmax(-1), v);
}

at::Tensor attendMany(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                      const at::Tensor& mask) {
    throwIfInterrupted();
    TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
                "florence::attend_many: q, k and v must be 4-D [batch, heads, positions, dim]");
    const int64_t b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3), s = k.size(2);
    TORCH_CHECK(k.size(1) == h && k.size(3) == d && v.sizes() == k.sizes(),
                "florence::attend_many: q of shape ", q.sizes(), " does not fit k of shape ",
                k.sizes(), " and v of shape ", v.sizes());
    const auto isF32Rows = [](const at::Tensor& x) {
        return x.scalar_type() == at::kFloat && x.is_cpu() && x.stride(3) == 1;
    };
    // Keys and values of one image for several (beams sharing the encoder output) broadcast as
    // in the batched products; other batch sizes are left to them.
    if (kernelPath() == KernelPath::Torch || !kernelPathSupported(KernelPath::Avx2) ||
        (k.size(0) != b && k.size(0) != 1) || d < 8 || d % 8 != 0 || d > kBlockMaxDim || t < 1 ||
        s < 1 || !isF32Rows(q) || !isF32Rows(k) || !isF32Rows(v) || !mask.is_cpu())
        return reference(q, k, v, mask);

    // The mask as a view with the scores' layout (zero strides where it broadcasts, never
    // copied out to that size); expand refuses a mask that does not broadcast, as the
    // reference's addition would.
    const at::Tensor m = mask.to(at::kFloat).expand({b, h, t, s});
    // Written as [batch, queries, heads, dim] and returned as the [batch, heads, queries, dim]
    // view: the heads are merged next (transpose(1, 2) and reshape), which is then free.
    at::Tensor out = at::empty({b, t, h, d}, q.options());
    const float* qp = q.data_ptr<float>();
    const float* kp = k.data_ptr<float>();
    const float* vp = v.data_ptr<float>();
    const float* mp = m.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const int64_t kb = k.size(0) == b ? k.stride(0) : 0, vb = v.size(0) == b ? v.stride(0) : 0;
    at::parallel_for(0, b * h, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> scratch(static_cast<size_t>(blockScratchFloats(s, d)));
        for (int64_t i = begin; i < end; ++i) {
            const int64_t bi = i / h, hi = i % h;
            BlockAttention a;
            a.q = qp + bi * q.stride(0) + hi * q.stride(1);
            a.qStride = q.stride(2);
            a.k = kp + bi * kb + hi * k.stride(1);
            a.kStride = k.stride(2);
            a.v = vp + bi * vb + hi * v.stride(1);
            a.vStride = v.stride(2);
            a.rows = t;
            a.keys = s;
            a.dim = d;
            a.mask = mp + bi * m.stride(0) + hi * m.stride(1);
            a.maskRowStride = m.stride(2);
            a.maskKeyStride = m.stride(3);
            a.out = op + bi * t * h * d + hi * d;
            a.outStride = h * d;
            attendBlockF32Avx2(a, scratch.data());
        }
    });
    return out.permute({0, 2, 1, 3});
}

} // namespace

} // namespace florence::ops

TORCH_LIBRARY_FRAGMENT(florence, m) {
    m.def("attend_many(Tensor q, Tensor k, Tensor v, Tensor mask) -> Tensor");
}

TORCH_LIBRARY_IMPL(florence, CPU, m) {
    m.impl("attend_many", &florence::ops::attendMany);
}
