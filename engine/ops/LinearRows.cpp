#include "Avx2Kernels.h"
#include "GemmInt8.h"
#include "KernelPath.h"
#include "Ops.h"
#include "RowKernels.h"
#include "StepThreads.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace florence::ops {

// Scalar code, built for any x86-64 (not in RowKernels.cpp, which the compiler may vectorize
// with AVX-512): both bfloat16 kernels read x in this layout.
int64_t bf16InputFloats(int64_t k) {
    return (k + 31) / 32 * 32;
}

void prepareBf16Input(const float* x, int rows, int64_t k, float* out) {
    const int64_t stride = bf16InputFloats(k);
    for (int r = 0; r < rows; ++r) {
        const float* xr = x + r * k;
        float* o = out + r * stride;
        std::memset(o, 0, sizeof(float) * stride);
        for (int64_t i = 0; i < k; ++i) {
            const int64_t block = i / 32 * 32, lane = i % 32;
            o[block + (lane % 2) * 16 + lane / 2] = xr[i];
        }
    }
}

namespace {

bool useAvx512() {
    return kernelPath() == KernelPath::Avx512;
}

bool useTorch() {
    return kernelPath() == KernelPath::Torch;
}

// The step kernels of the path in use (AVX-512 or AVX2; the two sets share their signatures).
struct StepKernels {
    decltype(&rowsF32Avx512) f32;
    decltype(&rowsBf16Avx512) bf16;
    decltype(&rowsInt8Avx512) int8;
    decltype(&dequantizeInt8Avx512) dequantizeInt8;
};

const StepKernels& stepKernels() {
    static const StepKernels avx512{rowsF32Avx512, rowsBf16Avx512, rowsInt8Avx512,
                                    dequantizeInt8Avx512};
    static const StepKernels avx2{rowsF32Avx2, rowsBf16Avx2, rowsInt8Avx2, dequantizeInt8Avx2};
    return useAvx512() ? avx512 : avx2;
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

// Which int8 kernel runs a decoding step's rows: VNNI when the CPU has it, else the AVX2 int16
// one (Avx2Kernels.h), on the AVX-512 path too. FLORENCE_INT8_KERNEL=widen picks the kernel of
// the path that widens the weights to float32 instead, to measure both on one machine.
bool widenAsked() {
    static const bool yes = [] {
        const char* choice = std::getenv("FLORENCE_INT8_KERNEL");
        return choice && std::string(choice) == "widen";
    }();
    return yes;
}

// The int8 step's kernel that quantizes x: AVX-512 VNNI on the AVX-512 path where the CPU has it;
// AVX-VNNI on the AVX2 path where the CPU has it and FLORENCE_AVX_VNNI=0 does not ask otherwise
// (int8Gemm(), GemmInt8.h); else the AVX2 int16 kernel, on the AVX-512 path too (Intel
// Skylake-SP and -X: widening 16 weights to float32 costs two instructions and each row an FMA,
// where int16 costs one extension and each row a multiply-add and an add, and five rows and more
// run in its tiles instead of LibTorch's float32 GEMM over weights widened block by block). None
// where widening is asked for and on the LibTorch path.
enum class QuantizingKernel { None, Avx512Vnni, AvxVnni, Int16 };

QuantizingKernel quantizingKernel() {
    if (widenAsked() || useTorch())
        return QuantizingKernel::None;
    if (useAvx512() && haveAvx512Vnni())
        return QuantizingKernel::Avx512Vnni;
    if (kernelPath() == KernelPath::Avx2 && int8Gemm() == Int8Gemm::AvxVnni)
        return QuantizingKernel::AvxVnni;
    return QuantizingKernel::Int16;
}

bool isInt8(const at::Tensor& weight) {
    return weight.scalar_type() == at::kQInt8;
}

// The per-channel scales of int8 weights, float64 as LibTorch keeps them. The engine quantizes
// symmetrically (zero points 0) along the output channels; anything else is refused rather than
// computed wrongly.
void checkInt8(const at::Tensor& weight) {
    TORCH_CHECK(weight.qscheme() == at::kPerChannelAffine && weight.q_per_channel_axis() == 0,
                "florence::linear_rows: int8 weights must be quantized per output channel");
}

at::Tensor int8Scales(const at::Tensor& weight) {
    checkInt8(weight);
    return weight.q_per_channel_scales().to(at::kDouble).contiguous();
}

// int8 weights and five rows and more where the step widens them (FLORENCE_INT8_KERNEL=widen: a
// prompt, the uncached path, a batch), or on the LibTorch path:
// LibTorch's float32 products over blocks of output channels widened to float32 (about 1 MB each,
// so a block stays in cache and the whole weight never exists as float32).
at::Tensor int8ManyRows(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
    const int64_t n = weight.size(0), k = weight.size(1);
    const int64_t rows = k > 0 ? x.numel() / k : 0;
    const at::Tensor xf = x.reshape({rows, k}).to(at::kFloat);
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = n;
    at::Tensor y = at::empty({rows, n}, x.options().dtype(at::kFloat));
    if (useTorch() || !weight.is_cpu()) {
        y.copy_(at::linear(xf, weight.dequantize(), bias.defined() ? bias.to(at::kFloat) : bias));
        return y.view(shape);
    }
    const at::Tensor wc = weight.contiguous();
    const at::Tensor scales = int8Scales(wc);
    const auto* wp = reinterpret_cast<const int8_t*>(wc.data_ptr<c10::qint8>());
    const int64_t block = std::max<int64_t>(4, (int64_t(1) << 18) / std::max<int64_t>(k, 1));
    at::Tensor wf = at::empty({std::min(block, n), k}, x.options().dtype(at::kFloat));
    for (int64_t j = 0; j < n; j += block) {
        const int64_t len = std::min(block, n - j);
        stepKernels().dequantizeInt8(wp, scales.data_ptr<double>(), k, j, j + len,
                                     wf.data_ptr<float>());
        const at::Tensor b = bias.defined() ? bias.narrow(0, j, len).to(at::kFloat) : at::Tensor();
        y.narrow(1, j, len).copy_(at::linear(xf, wf.narrow(0, 0, len), b));
    }
    return y.view(shape);
}

// The int8 step kernel of the path in use that quantizes x (AVX-512 VNNI, AVX-VNNI, AVX2 int16),
// handed to f(input, prepare, rows, tile): an empty input, prepare(x, rows, k, input) quantizing
// x, rows(input, row0, rows, w, scales, bias, y, n, k, begin, end) computing one to four rows of
// the columns [begin, end), tile the same for a tile of weights in cache (AVX-512 VNNI: four
// columns at a time, same arithmetic; the others: the step's kernel). False where the step widens
// the weights instead (FLORENCE_INT8_KERNEL=widen, the LibTorch path) and f was not called.
template <class F> bool withQuantizingKernel(F&& f) {
    switch (quantizingKernel()) {
    case QuantizingKernel::Avx512Vnni:
        f(VnniInput{}, prepareVnniInput, rowsInt8Vnni, tileInt8Vnni);
        return true;
    case QuantizingKernel::AvxVnni:
        f(AvxVnniInput{}, prepareAvxVnniInput, rowsInt8AvxVnni, rowsInt8AvxVnni);
        return true;
    case QuantizingKernel::Int16:
        f(Int16Input{}, prepareInt16Input, rowsInt8Int16Avx2, rowsInt8Int16Avx2);
        return true;
    case QuantizingKernel::None:
        break;
    }
    return false;
}

// int8 weights, five rows and more, with a step kernel that quantizes x (withQuantizingKernel):
// blocks of four rows with the decoding step's arithmetic (tileInt8Vnni gives what
// rowsInt8Vnni gives; the AVX2 kernels are the step's own), so every row gets exactly what it
// gets in a step (its activations quantized on their own) and the uncached path, a prompt and a
// batch agree with cached decoding. Tiles of 64 output columns stay in cache while each block of
// rows reads them.
template <class Input, class Prepare, class Tile>
at::Tensor int8QuantizedRows(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                             Input xq, Prepare prepare, Tile tile) {
    const int64_t n = weight.size(0), k = weight.size(1);
    const int64_t rows = x.numel() / k;
    const at::Tensor xc = x.reshape({rows, k}).to(at::kFloat).contiguous();
    prepare(xc.data_ptr<float>(), static_cast<int>(rows), k, xq);
    const at::Tensor wc = weight.contiguous();
    const at::Tensor scales = int8Scales(wc);
    const at::Tensor bc = bias.defined() ? bias.to(at::kFloat).contiguous() : at::Tensor();
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = n;
    at::Tensor y = at::empty(shape, x.options().dtype(at::kFloat));
    const auto* wp = reinterpret_cast<const int8_t*>(wc.data_ptr<c10::qint8>());
    const double* sp = scales.data_ptr<double>();
    const float* bp = bias.defined() ? bc.data_ptr<float>() : nullptr;
    float* yp = y.data_ptr<float>();
    constexpr int64_t kTile = 64;
    at::parallel_for(0, (n + kTile - 1) / kTile, 1, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t)
            for (int64_t r0 = 0; r0 < rows; r0 += 4)
                tile(xq, static_cast<int>(r0), static_cast<int>(std::min<int64_t>(4, rows - r0)),
                     wp, sp, bp, yp + r0 * n, n, k, t * kTile, std::min(n, (t + 1) * kTile));
    });
    return y;
}

// One to four rows with the AVX-512 or AVX2 kernels of the weight's type (a decoding step).
at::Tensor stepRows(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                    int64_t rows) {
    const int64_t n = weight.size(0), k = weight.size(1);
    const at::Tensor xc = x.reshape({rows, k}).to(at::kFloat).contiguous();
    const at::Tensor wc = weight.contiguous();
    const at::Tensor bc = bias.defined() ? bias.to(at::kFloat).contiguous() : at::Tensor();
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = n;
    at::Tensor y = at::empty(shape, x.options().dtype(at::kFloat));

    const float* bp = bias.defined() ? bc.data_ptr<float>() : nullptr;
    float* yp = y.data_ptr<float>();
    const int r = static_cast<int>(rows);
    // Chunks of output columns: at least ~32k weights each (below that, handing a chunk to another
    // core costs more than it saves) and at most ~32 per product, so a helper that starts late
    // leaves little for the caller to wait for (StepThreads.h).
    const int64_t chunk = std::max((32768 + k - 1) / std::max<int64_t>(k, 1), (n + 31) / 32);
    const StepKernels& kernels = stepKernels();
    if (wc.scalar_type() == at::kFloat) {
        const float* xp = xc.data_ptr<float>();
        const float* wp = wc.data_ptr<float>();
        splitOverCores(n, chunk, [&](int64_t begin, int64_t end) {
            kernels.f32(xp, r, wp, bp, yp, n, k, begin, end);
        });
    } else if (isInt8(wc)) {
        const auto* wp = reinterpret_cast<const int8_t*>(wc.data_ptr<c10::qint8>());
        const at::Tensor scales = int8Scales(wc);
        const double* sp = scales.data_ptr<double>();
        // The kernels that quantize x take it prepared once for all columns.
        const bool quantized = withQuantizingKernel([&](auto xq, auto prepare, auto kernel, auto) {
            prepare(xc.data_ptr<float>(), r, k, xq);
            splitOverCores(n, chunk, [&](int64_t begin, int64_t end) {
                kernel(xq, 0, r, wp, sp, bp, yp, n, k, begin, end);
            });
        });
        if (!quantized) {
            const float* xp = xc.data_ptr<float>();
            splitOverCores(n, chunk, [&](int64_t begin, int64_t end) {
                kernels.int8(xp, r, wp, sp, bp, yp, n, k, begin, end);
            });
        }
    } else {
        std::vector<float> prepared(static_cast<size_t>(rows * bf16InputFloats(k)));
        prepareBf16Input(xc.data_ptr<float>(), r, k, prepared.data());
        const float* xp = prepared.data();
        const auto* wp = reinterpret_cast<const uint16_t*>(wc.data_ptr<at::BFloat16>());
        splitOverCores(n, chunk, [&](int64_t begin, int64_t end) {
            kernels.bf16(xp, r, wp, bp, yp, n, k, begin, end);
        });
    }
    readNextWhileIdle(wc.data_ptr(), wc.nbytes());
    return y;
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
    if (isInt8(weight)) {
        checkInt8(weight);
        const at::Tensor b = hasBias ? *bias : at::Tensor();
        at::Tensor y;
        if (rows > 4 && n > 0 && x.is_cpu() && weight.is_cpu() &&
            withQuantizingKernel([&](auto xq, auto prepare, auto, auto tile) {
                y = int8QuantizedRows(x, weight, b, std::move(xq), prepare, tile);
            }))
            return y;
    }
    if (isInt8(weight) &&
        (rows < 1 || rows > 4 || n == 0 || useTorch() || !x.is_cpu() || !weight.is_cpu()))
        return int8ManyRows(x, weight, hasBias ? *bias : at::Tensor());
    const bool kernelDtype = weight.scalar_type() == at::kFloat ||
                             weight.scalar_type() == at::kBFloat16 || isInt8(weight);
    if (useTorch() || rows < 1 || rows > 4 || n == 0 || !kernelDtype || !x.is_cpu() ||
        !weight.is_cpu())
        return fallback(x, weight, bias);

    return stepRows(x, weight, hasBias ? *bias : at::Tensor(), rows);
}

} // namespace

std::string rowKernelName() {
    return kernelPathName(kernelPath());
}

std::string int8StepKernelName() {
    switch (quantizingKernel()) {
    case QuantizingKernel::Avx512Vnni:
        return "AVX-512 VNNI";
    case QuantizingKernel::AvxVnni:
        return "AVX-VNNI";
    case QuantizingKernel::Int16:
        return "int16";
    case QuantizingKernel::None:
        break;
    }
    return useTorch() ? "LibTorch" : "widened";
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

// int8 weights are per-channel quantized tensors, whose dispatch key (QuantizedCPU) outranks x's:
// the same function takes the call.
TORCH_LIBRARY_IMPL(florence, QuantizedCPU, m) {
    m.impl("linear_rows", &florence::ops::linearRows);
}
