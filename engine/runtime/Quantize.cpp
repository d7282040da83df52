// int8 quantization of a loaded model's linear layers (Model::Impl, ModelImpl.h).
#include "runtime/ModelImpl.h"

#include <ATen/Parallel.h>

namespace florence {

using detail::cancelledError;
using detail::linearModules;

namespace {

// int8 weights: symmetric, one scale per output channel (its largest magnitude / 127), as a
// per-channel quantized tensor, which carries its scales with it, so the model code's
// linear(x, weight, bias) is unchanged and florence::linear_rows reads both. Made at load from
// the float32 weights (about 1 s for base, see README), after shared and generated parameters
// are in place: the LM head gets its own int8 copy of the token embedding, which stays float32
// for the lookup.
torch::Tensor quantizeInt8(const torch::Tensor& weight) {
    const torch::Tensor w = weight.to(torch::kFloat32).contiguous();
    const torch::Tensor scales = (w.abs().amax({1}).to(torch::kDouble) / 127.0).clamp_min(1e-30);
    return at::quantize_per_channel(w, scales, torch::zeros({w.size(0)}, torch::kLong), 0,
                                    torch::kQInt8);
}

// The encoder blocks' switch between bfloat16 and float32 activations around int8 products
// (the model code's attribute; cleared for the own int8 GEMM's float32 activations).
constexpr const char* kLowActivations = "low_activations";

} // namespace

bool Model::Impl::hasFloatActivationInt8() const {
    for (const torch::jit::Module* m : {&vision, &textEncoder}) {
        if (!m->find_method("int8_products"))
            return false;
        bool blocks = false;
        for (const torch::jit::Module& sub : m->modules())
            blocks = blocks || sub.hasattr(kLowActivations);
        if (!blocks)
            return false;
    }
    return true;
}

void Model::Impl::quantizeEncoders(bool floatActivations) {
    const int64_t minSide = floatActivations ? kInt8FloatMinSide : 512;
    for (const char* role : {"vision", "text_encoder"}) {
        torch::jit::Module& m = module(role);
        if (!m.find_method("int8_products"))
            continue;
        if (&m == &vision ? visionWidth() > kInt8VisionMaxWidth
                          : manifest.dModel > kInt8TextMaxWidth)
            continue;
        bool any = false;
        for (torch::jit::Module lin : linearModules(m)) {
            const torch::Tensor w = lin.attr("weight").toTensor();
            if (w.dim() == 2 && w.size(0) >= minSide && w.size(1) >= minSide) {
                lin.setattr("weight", quantizeInt8(w));
                any = true;
            }
        }
        if (any && floatActivations)
            for (torch::jit::Module sub : m.modules())
                if (sub.hasattr(kLowActivations))
                    sub.setattr(kLowActivations, false);
        if (any)
            int8Modules.push_back(role);
        if (options.cancel && options.cancel->load())
            throw cancelledError(manifest);
    }
}

int64_t Model::Impl::visionWidth() const {
    if (!vision.hasattr("image_projection") || !vision.attr("image_projection").isTensor())
        return 0;
    const torch::Tensor p = vision.attr("image_projection").toTensor();
    return p.dim() == 2 ? p.size(0) : 0;
}

void Model::Impl::quantizeDecoder() {
    std::vector<torch::jit::Module> layers = linearModules(decoder);
    std::vector<torch::Tensor> quantized(layers.size());
    at::parallel_for(0, int64_t(layers.size()), 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            if (!(options.cancel && options.cancel->load()))
                quantized[size_t(i)] = quantizeInt8(layers[size_t(i)].attr("weight").toTensor());
    });
    if (options.cancel && options.cancel->load())
        throw cancelledError(manifest);
    for (size_t i = 0; i < layers.size(); ++i)
        layers[i].setattr("weight", quantized[i]);
    int8Modules.push_back("decoder");
}

} // namespace florence
