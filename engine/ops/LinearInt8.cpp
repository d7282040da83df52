// florence::linear_int8: the encoders' large products with int8 weights (the engine's int8 mode)
// on oneDNN's dynamic int8 GEMM through LibTorch's quantized engine: the activations are
// quantized per tensor at run time, the products run u8 x s8 (AVX512-VNNI, or AVX2 without
// AVX-512), and the weights are prepacked once and kept while the weight tensor lives. See Ops.h.
#include "Ops.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <mutex>
#include <unordered_map>
#include <vector>

namespace florence::ops {
namespace {

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

struct Prepacked {
    WeakImpl weight; // expires with the weight: the entry is then dropped, never reused
    c10::IValue packed;
};

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

// The packed weight (and bias) of `weight`, made on its first use.
c10::IValue prepacked(const at::Tensor& weight, const at::Tensor& bias) {
    static std::mutex mutex;
    static std::unordered_map<const c10::TensorImpl*, Prepacked> cache;
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = cache.begin(); it != cache.end();)
        it = it->second.weight.expired() ? cache.erase(it) : std::next(it);
    const c10::TensorImpl* key = weight.unsafeGetTensorImpl();
    if (auto it = cache.find(key); it != cache.end())
        return it->second.packed;
    static const c10::OperatorHandle prepack =
        c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
    std::vector<c10::IValue> stack{weight, bias.defined() ? c10::IValue(bias.to(at::kFloat).contiguous())
                                                          : c10::IValue()};
    prepack.callBoxed(&stack);
    cache.insert_or_assign(key, Prepacked{WeakImpl(weight.getIntrusivePtr()), stack.at(0)});
    return stack.at(0);
}

at::Tensor linearInt8(const at::Tensor& x, const at::Tensor& weight,
                      const c10::optional<at::Tensor>& bias) {
    TORCH_CHECK(weight.dim() == 2 && weight.scalar_type() == at::kQInt8,
                "florence::linear_int8: weight must be a 2-D int8 tensor");
    TORCH_CHECK(weight.qscheme() == at::kPerChannelAffine && weight.q_per_channel_axis() == 0,
                "florence::linear_int8: int8 weights must be quantized per output channel");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "florence::linear_int8: x of shape ",
                x.sizes(), " does not fit weight of shape ", weight.sizes());
    const bool hasBias = bias.has_value() && bias->defined();
    const int64_t n = weight.size(0), k = weight.size(1);
    TORCH_CHECK(!hasBias || bias->numel() == n, "florence::linear_int8: bias has ",
                hasBias ? bias->numel() : 0, " elements, weight has ", n, " rows");
    const int64_t rows = k > 0 ? x.numel() / k : 0;
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = n;
    const at::Tensor flat = x.reshape({rows, k}).to(at::kFloat).contiguous();
    const at::Tensor b = hasBias ? *bias : at::Tensor();
    if (rows == 0 || n == 0 || k == 0 || !x.is_cpu() || !oneDnnQuantized())
        return at::linear(flat, weight.dequantize(), hasBias ? b.to(at::kFloat) : b).view(shape);
    static const c10::OperatorHandle dynamic =
        c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_dynamic", "");
    std::vector<c10::IValue> stack{flat, prepacked(weight, b), false};
    dynamic.callBoxed(&stack);
    return stack.at(0).toTensor().view(shape);
}

} // namespace

bool int8GemmAvailable() {
    return oneDnnQuantized();
}

} // namespace florence::ops

TORCH_LIBRARY_FRAGMENT(florence, m) {
    m.def("linear_int8(Tensor x, Tensor weight, Tensor? bias) -> Tensor");
}

TORCH_LIBRARY_IMPL(florence, CPU, m) {
    m.impl("linear_int8", &florence::ops::linearInt8);
}

// The int8 weight's dispatch key (QuantizedCPU) outranks x's: the same function takes the call.
TORCH_LIBRARY_IMPL(florence, QuantizedCPU, m) {
    m.impl("linear_int8", &florence::ops::linearInt8);
}
