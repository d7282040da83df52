// florence::linear_int8: the encoders' large products with int8 weights (the engine's int8 mode),
// and florence::linear_int8_gelu, the same with GELU after (the feed-forward's hidden layer).
// The project's own int8 GEMM (GemmInt8.h: x quantized per row) on the AVX2 kernel path (AVX2's
// vpmaddubsw or AVX-VNNI) and on the AVX-512 path where the CPU has VNNI (512-bit vpdpbusd);
// otherwise oneDNN's dynamic int8 GEMM through LibTorch's quantized engine (x quantized per
// tensor). Either way the weights are packed once and kept while the weight tensor lives. See
// Ops.h.
//
// Why an own GEMM on AVX2: oneDNN 2.6's AVX2 int8 GEMM ran the base vision encoder's products
// at about half the speed of ONNX Runtime's (MLAS) on the same CPU, and it quantizes the
// activations with one scale per tensor, which costs the text encoder's output accuracy.
#include "GemmInt8.h"
#include "KernelPath.h"
#include "Ops.h"
#include "PackCache.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace florence::ops {
namespace {

bool oneDnnQuantized() {
    static const bool yes = [] {
        for (at::QEngine e : at::globalContext().supportedQEngines())
            if (e == at::QEngine::ONEDNN) {
                at::globalContext().setQEngine(at::QEngine::ONEDNN);
                return true;
            }
        return false;
    }();
    return yes;
}

// oneDNN's packed weight (and bias) of `weight`, made on its first use. The bias is packed with
// it: a weight's module always passes the same one.
c10::IValue prepackedOneDnn(const at::Tensor& weight, const at::Tensor& bias) {
    return cachedPack<c10::IValue>(weight, [&](const at::Tensor& w) {
        static const c10::OperatorHandle prepack =
            c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
        std::vector<c10::IValue> stack{
            w, bias.defined() ? c10::IValue(bias.to(at::kFloat).contiguous()) : c10::IValue()};
        prepack.callBoxed(&stack);
        return stack.at(0);
    });
}

std::shared_ptr<const PackedInt8> prepackedOwn(const at::Tensor& weight) {
    return cachedPack<std::shared_ptr<const PackedInt8>>(weight, [](const at::Tensor& w) {
        const at::Tensor q = w.int_repr().contiguous();
        const at::Tensor scales = w.q_per_channel_scales().to(at::kDouble).contiguous();
        return std::make_shared<const PackedInt8>(
            packInt8(q.data_ptr<int8_t>(), scales.data_ptr<double>(), w.size(0), w.size(1)));
    });
}

// The own GEMM's variant on the current kernel path, or none where oneDNN's or LibTorch's
// product runs.
std::optional<Int8Gemm> ownGemmVariant() {
    if (kernelPath() == KernelPath::Avx2)
        return int8Gemm();
    if (kernelPath() == KernelPath::Avx512 && int8GemmSupported(Int8Gemm::Avx512Vnni))
        return Int8Gemm::Avx512Vnni;
    return std::nullopt;
}

// The own GEMM, rows split over the cores; with `gelu`, GELU of the product.
at::Tensor ownGemm(Int8Gemm variant, const at::Tensor& flat, const at::Tensor& weight,
                   const at::Tensor& bias, bool gelu) {
    const std::shared_ptr<const PackedInt8> packed = prepackedOwn(weight);
    const int64_t rows = flat.size(0), k = flat.size(1), n = weight.size(0);
    const at::Tensor b = bias.defined() ? bias.to(at::kFloat).contiguous() : at::Tensor();
    at::Tensor y = at::empty({rows, n}, flat.options().dtype(at::kFloat));
    const float* x = flat.data_ptr<float>();
    const float* bp = b.defined() ? b.data_ptr<float>() : nullptr;
    float* yp = y.data_ptr<float>();
    // 16 rows at least to a thread: below that the packed weights' pass dominates.
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
        gemmInt8(variant, *packed, x + begin * k, k, end - begin, bp, yp + begin * n, n, gelu);
    });
    return y;
}

// linear_int8, and with `gelu` linear_int8_gelu.
at::Tensor linearInt8Then(const at::Tensor& x, const at::Tensor& weight,
                          const c10::optional<at::Tensor>& bias, bool gelu) {
    throwIfInterrupted();
    const char* op = gelu ? "florence::linear_int8_gelu" : "florence::linear_int8";
    TORCH_CHECK(weight.dim() == 2 && weight.scalar_type() == at::kQInt8, op,
                ": weight must be a 2-D int8 tensor");
    TORCH_CHECK(weight.qscheme() == at::kPerChannelAffine && weight.q_per_channel_axis() == 0, op,
                ": int8 weights must be quantized per output channel");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), op, ": x of shape ", x.sizes(),
                " does not fit weight of shape ", weight.sizes());
    const bool hasBias = bias.has_value() && bias->defined();
    const int64_t n = weight.size(0), k = weight.size(1);
    TORCH_CHECK(!hasBias || bias->numel() == n, op, ": bias has ", hasBias ? bias->numel() : 0,
                " elements, weight has ", n, " rows");
    const int64_t rows = k > 0 ? x.numel() / k : 0;
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = n;
    const at::Tensor flat = x.reshape({rows, k}).to(at::kFloat).contiguous();
    const at::Tensor b = hasBias ? *bias : at::Tensor();
    const bool libTorchOnly = rows == 0 || n == 0 || k == 0 || !x.is_cpu();
    const std::optional<Int8Gemm> own = ownGemmVariant();
    if (!libTorchOnly && own)
        return ownGemm(*own, flat, weight, b, gelu).view(shape);
    at::Tensor y;
    if (libTorchOnly || !oneDnnQuantized()) {
        y = at::linear(flat, weight.dequantize(), hasBias ? b.to(at::kFloat) : b);
    } else {
        static const c10::OperatorHandle dynamic =
            c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_dynamic", "");
        std::vector<c10::IValue> stack{flat, prepackedOneDnn(weight, b), false};
        dynamic.callBoxed(&stack);
        y = stack.at(0).toTensor();
    }
    return (gelu ? at::gelu_(y) : y).view(shape);
}

at::Tensor linearInt8(const at::Tensor& x, const at::Tensor& weight,
                      const c10::optional<at::Tensor>& bias) {
    return linearInt8Then(x, weight, bias, false);
}

at::Tensor linearInt8Gelu(const at::Tensor& x, const at::Tensor& weight,
                          const c10::optional<at::Tensor>& bias) {
    return linearInt8Then(x, weight, bias, true);
}

} // namespace

bool int8GemmAvailable() {
    return ownGemmVariant() || oneDnnQuantized();
}

bool ownInt8Gemm() {
    return ownGemmVariant().has_value();
}

std::string int8GemmKind() {
    if (const std::optional<Int8Gemm> own = ownGemmVariant())
        return int8GemmName(*own);
    return oneDnnQuantized() ? "oneDNN" : "none";
}

} // namespace florence::ops

TORCH_LIBRARY_FRAGMENT(florence, m) {
    m.def("linear_int8(Tensor x, Tensor weight, Tensor? bias) -> Tensor");
    m.def("linear_int8_gelu(Tensor x, Tensor weight, Tensor? bias) -> Tensor");
}

TORCH_LIBRARY_IMPL(florence, CPU, m) {
    m.impl("linear_int8", &florence::ops::linearInt8);
    m.impl("linear_int8_gelu", &florence::ops::linearInt8Gelu);
}

// The int8 weight's dispatch key (QuantizedCPU) outranks x's: the same function takes the call.
TORCH_LIBRARY_IMPL(florence, QuantizedCPU, m) {
    m.impl("linear_int8", &florence::ops::linearInt8);
    m.impl("linear_int8_gelu", &florence::ops::linearInt8Gelu);
}
