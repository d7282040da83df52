// Internal to the engine (includes LibTorch). What a loaded Model holds: the manifest, the
// tokenizer and the three TorchScript modules, with the steps of Model::load that change them.
// Loading is in ModelLoad.cpp, int8 quantization in Quantize.cpp, what a model reports of itself
// (memory, precision) in ModelInfo.cpp; Session runs the modules.
#pragma once

#include "Ops.h"
#include "decoding/NativeStep.h"
#include <florence/engine.h>

#include <torch/script.h>
#include <torch/torch.h>

#include <atomic>
#include <string>
#include <vector>

namespace florence {

struct Model::Impl {
    Manifest manifest;
    Tokenizer tokenizer;
    LoadOptions options;
    double loadMs = 0;
    // Module methods are not const in the API, but running them changes no state.
    mutable torch::jit::Module vision;
    mutable torch::jit::Module textEncoder;
    mutable torch::jit::Module decoder;
    std::vector<std::string> int8Modules; // filled by the quantize functions
    Precision encoderPrecision = Precision::Float32;
    std::string precisionNote;
    // The decoder's cached step from C++ (decoding/NativeStep.h) when its code is this version's
    // exporter's and FLORENCE_NATIVE_STEP is not 0; else null and the scripted step runs.
    std::shared_ptr<const detail::NativeStep> nativeStep;

    // The encoders' passes. With `cancel`, a pass stops at its next own operator once it is set
    // (ops::InterruptScope; a large vision encoder's pass takes seconds) and returns an
    // undefined tensor; an earlier exporter's package, whose encoders call none, runs to its end.
    torch::Tensor imageFeatures(const torch::Tensor& pixels,
                                const std::atomic<bool>* cancel = nullptr) const {
        return interruptible(cancel, [&] { return vision.forward({pixels}).toTensor(); });
    }
    torch::Tensor encode(const torch::Tensor& features, const torch::Tensor& ids,
                         const std::atomic<bool>* cancel = nullptr) const {
        return interruptible(cancel, [&] {
            return textEncoder.forward({features, ids, torch::ones_like(ids)}).toTensor();
        });
    }
    template <class Pass>
    static torch::Tensor interruptible(const std::atomic<bool>* cancel, const Pass& pass) {
        const ops::InterruptScope scope(cancel);
        try {
            return pass();
        } catch (const std::exception&) {
            // The interpreter rewraps what an operator threw: the flag tells a cancel apart.
            if (cancel && cancel->load())
                return {};
            throw;
        }
    }

    torch::jit::Module& module(const std::string& role) const {
        return role == "vision" ? vision : role == "text_encoder" ? textEncoder : decoder;
    }

    // int8: the encoders' large linear layers (both sides >= 512: Florence-2-base's vision
    // stages 2 and 3 and its text encoder, about 80% of an image's multiply-adds), when the
    // package's code runs them with florence::linear_int8 (it has int8_products(); an earlier
    // exporter's does not). oneDNN's int8 GEMM is ~1.8x its bfloat16 one on these shapes and
    // slower on the smaller ones, which stay bfloat16 (README, Precision).
    // An encoder wider than Florence-2-base's (vision: last stage 1024 channels, large 2048;
    // text: d_model 768, large 1024) stays bfloat16: oneDNN quantizes each product's
    // activations with one scale per tensor, and over large's wider layers that error grows
    // (speed demo at large size, the decoder's logits cosine against float32: 0.9931 with both
    // encoders int8, 0.9987 with the text encoder alone, 0.9989 with neither; image features
    // 7.6-11% from float32 in int8 against 3% in bfloat16. At base, everything int8: 0.9998).
    static constexpr int64_t kInt8VisionMaxWidth = 1024;
    static constexpr int64_t kInt8TextMaxWidth = 768;
    // `floatActivations`: the encoders stay float32 and only their large products take int8
    // weights, on the own int8 GEMM (the AVX2 class and AVX-512 with VNNI, PrecisionPlan.cpp):
    // both sides >= kInt8FloatMinSide, which takes in every linear
    // layer of Florence-2-base's vision encoder, since oneDNN's AVX2 int8 GEMM also beats the
    // float32 one on stage 0's 128-wide products (36864 x 128 x 384: 1.4-4x; stage 1 0.7x its
    // time, stages 2 and 3 and the text encoder 0.5-0.6x; the base vision encoder's int8 time
    // to first token 2.66-2.73 s against 2.67-3.78 s with stage 0 in float32, alternated; the
    // decoder's logits cosine against float32 0.999671 against 0.999677); the blocks'
    // low_activations attribute is cleared, so activations and attention stay float32. Call
    // only when hasFloatActivationInt8() says the package's code can.
    static constexpr int64_t kInt8FloatMinSide = 128;
    void quantizeEncoders(bool floatActivations); // Quantize.cpp
    // Whether both encoders' code runs int8 products with float32 activations (int8_products()
    // and blocks with low_activations; an earlier exporter's do not).
    bool hasFloatActivationInt8() const;
    // The vision encoder's last-stage width: the rows of its image projection.
    int64_t visionWidth() const;
    // Architecture packages: every parameter is an empty placeholder; fill each from a seeded
    // normal distribution with the package's recipe. One generator per tensor, seeded by the
    // package's seed and the tensor's name, so the weights do not depend on the list's order.
    // `onProgress` hears the share of the generated values made so far.
    void generateParameters(const std::function<void(double fraction)>& onProgress = nullptr) const;
    // int8: the decoder's linear layers (its decoding step and the LM head), once every
    // parameter is in place.
    // LibTorch quantizes on one thread: the layers are spread over the threads (base: about 1 s
    // of work, the LM head 0.4 of it).
    void quantizeDecoder();
    // A parameter still empty once the package is loaded has no weights: a package that lists
    // it neither as shared nor as generated is broken, and would fail in the middle of a run.
    void checkNoEmptyParameters() const;
    // Puts every tensor the package stores once (the text encoder's token embedding is the
    // decoder's) into the module saved without it: one tensor in memory for both.
    void shareParameters() const;
};

namespace detail {

EngineError cancelledError(const Manifest& manifest);
// The modules of type Linear in `m` and its submodules.
std::vector<torch::jit::Module> linearModules(const torch::jit::Module& m);

} // namespace detail

} // namespace florence
