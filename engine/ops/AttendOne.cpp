#include "AttendKernels.h"
#include "Avx2Kernels.h"
#include "KernelPath.h"
#include "Ops.h"
#include "StepThreads.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <cmath>
#include <vector>

namespace florence::ops {

namespace {

// What the model did before this operator existed (model.py's attend()): one query row per head
// as multiply-and-sum, which reads the keys and values at memory speed where a batched GEMM runs
// one tiny product per head; more query rows as batched products.
at::Tensor fallback(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                    const at::Tensor& mask) {
    if (q.size(2) == 1) {
        const at::Tensor probs = ((k * q).sum(-1).unsqueeze(2) + mask).softmax(-1);
        return (probs.transpose(-1, -2) * v).sum(-2, /*keepdim=*/true);
    }
    return at::matmul((at::matmul(q, k.transpose(-1, -2)) + mask).softmax(-1), v);
}

at::Tensor attendOne(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask) {
    TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
                "florence::attend_one: q, k and v must be 4-D [batch, heads, positions, dim]");
    const int64_t b = q.size(0), h = q.size(1), d = q.size(3), s = k.size(2);
    TORCH_CHECK(k.size(0) == b && k.size(1) == h && k.size(3) == d && v.sizes() == k.sizes(),
                "florence::attend_one: q of shape ", q.sizes(), " does not fit k of shape ",
                k.sizes(), " and v of shape ", v.sizes());
    const KernelPath path = kernelPath();
    const auto isF32Rows = [](const at::Tensor& t) {
        return t.scalar_type() == at::kFloat && t.is_cpu() && t.stride(3) == 1;
    };
    if (path == KernelPath::Torch || q.size(2) != 1 || d < 1 || d > kAttendMaxDim || s < 1 ||
        !isF32Rows(q) || !isF32Rows(k) || !isF32Rows(v) || !mask.is_cpu())
        return fallback(q, k, v, mask);

    // The mask as a view with the output's layout (zero strides where it broadcasts); expand
    // refuses a mask that does not broadcast, as the fallback's addition would.
    const at::Tensor m = mask.to(at::kFloat).expand({b, h, 1, s});
    // Written as [batch, 1, heads, dim] and returned as the [batch, heads, 1, dim] view: the
    // heads are merged next (transpose(1, 2) and reshape), which is then free.
    at::Tensor out = at::empty({b, 1, h, d}, q.options());
    const float* qp = q.data_ptr<float>();
    const float* kp = k.data_ptr<float>();
    const float* vp = v.data_ptr<float>();
    const float* mp = m.data_ptr<float>();
    float* op = out.data_ptr<float>();
    // Chunks of whole (batch, head) pairs, at least ~64k floats of keys and values each: a
    // self-attention cache of a few dozen positions is not worth another core (StepThreads.h).
    const int64_t chunk = std::max<int64_t>(1, 65536 / (2 * s * d));
    const auto kernel = path == KernelPath::Avx512 ? attendOneF32Avx512 : attendOneF32Avx2;
    splitOverCores(b * h, chunk, [&](int64_t begin, int64_t end) {
        std::vector<float> scratch(static_cast<size_t>(s));
        for (int64_t i = begin; i < end; ++i) {
            const int64_t bi = i / h, hi = i % h;
            kernel(qp + bi * q.stride(0) + hi * q.stride(1),
                   kp + bi * k.stride(0) + hi * k.stride(1), k.stride(2),
                   vp + bi * v.stride(0) + hi * v.stride(1), v.stride(2),
                   mp + bi * m.stride(0) + hi * m.stride(1), m.stride(3), s, d, scratch.data(),
                   op + i * d);
        }
    });
    return out.permute({0, 2, 1, 3});
}

} // namespace

double sumExp(const float* x, int64_t n, float shift) {
    switch (kernelPath()) {
    case KernelPath::Avx512:
        return sumExpAvx512(x, n, shift);
    case KernelPath::Avx2:
        return sumExpAvx2(x, n, shift);
    case KernelPath::Torch:
        break;
    }
    double sum = 0;
    for (int64_t i = 0; i < n; ++i)
        sum += std::exp(double(x[i]) - shift);
    return sum;
}

} // namespace florence::ops

TORCH_LIBRARY_FRAGMENT(florence, m) {
    m.def("attend_one(Tensor q, Tensor k, Tensor v, Tensor mask) -> Tensor");
}

TORCH_LIBRARY_IMPL(florence, CPU, m) {
    m.impl("attend_one", &florence::ops::attendOne);
}
