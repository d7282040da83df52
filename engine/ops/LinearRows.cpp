#include "Ops.h"
#include "RowKernels.h"
#include "StepThreads.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <dlfcn.h>

#include <vector>

namespace florence::ops {

bool haveAvx512() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

namespace {

bool useAvx512() {
    static const bool yes = haveAvx512();
    return yes;
}

// What the model did before this operator existed: one BLAS matrix-vector product per row for
// float32 (a one-row GEMM reads the weights at half the speed), oneDNN for bfloat16.
at::Tensor fallback(const at::Tensor& x, const at::Tensor& weight,
                    const c10::optional<at::Tensor>& bias) {
    const bool hasBias = bias.has_value() && bias->defined();
    if (weight.scalar_type() != at::kFloat) {
        const at::Tensor b = hasBias ? bias->to(weight.scalar_type()) : at::Tensor();
        return at::linear(x.to(weight.scalar_type()), weight, b).to(at::kFloat);
    }
    const int64_t k = weight.size(1);
    const int64_t rows = k > 0 ? x.numel() / k : 0;
    const at::Tensor xf = x.to(at::kFloat);
    if (rows < 1 || rows > 4)
        return at::linear(xf, weight, hasBias ? bias->to(at::kFloat) : at::Tensor());
    const at::Tensor flat = xf.reshape({rows, k});
    std::vector<at::Tensor> outs;
    for (int64_t r = 0; r < rows; ++r)
        outs.push_back(hasBias ? at::addmv(bias->to(at::kFloat), weight, flat[r])
                               : at::mv(weight, flat[r]));
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = weight.size(0);
    return at::stack(outs).view(shape);
}

at::Tensor linearRows(const at::Tensor& x, const at::Tensor& weight,
                      const c10::optional<at::Tensor>& bias) {
    TORCH_CHECK(weight.dim() == 2, "florence::linear_rows: weight must be 2-D, not ", weight.dim(),
                "-D");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "florence::linear_rows: x of shape ",
                x.sizes(), " does not fit weight of shape ", weight.sizes());
    const bool hasBias = bias.has_value() && bias->defined();
    const int64_t n = weight.size(0), k = weight.size(1);
    TORCH_CHECK(!hasBias || bias->numel() == n, "florence::linear_rows: bias has ",
                hasBias ? bias->numel() : 0, " elements, weight has ", n, " rows");
    const int64_t rows = k > 0 ? x.numel() / k : 0;
    const bool kernelDtype =
        weight.scalar_type() == at::kFloat || weight.scalar_type() == at::kBFloat16;
    if (!useAvx512() || rows < 1 || rows > 4 || n == 0 || !kernelDtype || !x.is_cpu() ||
        !weight.is_cpu())
        return fallback(x, weight, bias);

    const at::Tensor xc = x.reshape({rows, k}).to(at::kFloat).contiguous();
    const at::Tensor wc = weight.contiguous();
    const at::Tensor bc = hasBias ? bias->to(at::kFloat).contiguous() : at::Tensor();
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = n;
    at::Tensor y = at::empty(shape, x.options().dtype(at::kFloat));

    const float* bp = hasBias ? bc.data_ptr<float>() : nullptr;
    float* yp = y.data_ptr<float>();
    const int r = static_cast<int>(rows);
    // Chunks of whole groups of four output columns (what the kernels compute at once): at least
    // ~32k weights each (below that, handing a chunk to another core costs more than it saves)
    // and at most ~32 per product, so a helper that starts late leaves little for the caller to
    // wait for (StepThreads.h).
    const int64_t groups = (n + 3) / 4;
    const int64_t chunk = std::max((32768 / 4 + k - 1) / std::max<int64_t>(k, 1), (groups + 31) / 32);
    if (wc.scalar_type() == at::kFloat) {
        const float* xp = xc.data_ptr<float>();
        const float* wp = wc.data_ptr<float>();
        splitOverCores(groups, chunk, [&](int64_t begin, int64_t end) {
            rowsF32Avx512(xp, r, wp, bp, yp, n, k, begin * 4, std::min(end * 4, n));
        });
    } else {
        std::vector<float> prepared(static_cast<size_t>(rows * bf16InputFloats(k)));
        prepareBf16Input(xc.data_ptr<float>(), r, k, prepared.data());
        const float* xp = prepared.data();
        const auto* wp = reinterpret_cast<const uint16_t*>(wc.data_ptr<at::BFloat16>());
        splitOverCores(groups, chunk, [&](int64_t begin, int64_t end) {
            rowsBf16Avx512(xp, r, wp, bp, yp, n, k, begin * 4, std::min(end * 4, n));
        });
    }
    return y;
}

} // namespace

std::string rowKernelName() {
    return useAvx512() ? "AVX-512" : "LibTorch";
}

} // namespace florence::ops

extern "C" const char* florence_ops_library_path() {
    static const std::string path = [] {
        Dl_info info{};
        if (dladdr(reinterpret_cast<void*>(&florence_ops_library_path), &info) && info.dli_fname)
            return std::string(info.dli_fname);
        return std::string();
    }();
    return path.c_str();
}

TORCH_LIBRARY(florence, m) {
    m.def("linear_rows(Tensor x, Tensor weight, Tensor? bias) -> Tensor");
}

TORCH_LIBRARY_IMPL(florence, CPU, m) {
    m.impl("linear_rows", &florence::ops::linearRows);
}
