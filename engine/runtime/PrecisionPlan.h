// Which precision each module of a model loads in and which int8 quantization runs after
// loading, from the precision asked for and plain facts about the machine and the package.
// Torch-free, so the rule is tested as a table (tests/engine/TestPrecisionPlan.cpp); Model::load
// (ModelLoad.cpp) gathers the facts and follows the plan.
//
//   PrecisionFacts facts;
//   facts.ownInt8Gemm = ops::ownInt8Gemm();
//   facts.bfloat16ProductsAccurate = bfloat16ProductsAccurate();
//   facts.int8GemmAvailable = ops::int8GemmAvailable();
//   const PrecisionPlan plan = planPrecision(Precision::Int8, facts);
//   // load the encoders in plan.encoders and the decoder in plan.decoder, then quantize
#pragma once

#include <florence/engine.h>

namespace florence {

struct PrecisionFacts {
    // florence::linear_int8 runs the project's own int8 GEMM (ops::ownInt8Gemm(): the AVX2
    // kernel class, FLORENCE_KERNELS=avx2 on an AVX-512 machine too, and AVX-512 with VNNI);
    // otherwise oneDNN's or LibTorch's float32 product.
    bool ownInt8Gemm = false;
    // The encoders are wider than int8 products keep accurate (Florence-2-large: the package's
    // d_model above Florence-2-base's 768), so the quantization leaves them as they load.
    bool encodersTooWideForInt8 = false;
    // LibTorch sums bfloat16 products in float32 (bfloat16ProductsAccurate(),
    // <florence/machine.h>).
    bool bfloat16ProductsAccurate = true;
    // linear_int8 runs an int8 GEMM: the own one, or oneDNN's where this LibTorch's quantized
    // engines include it (ops::int8GemmAvailable()).
    bool int8GemmAvailable = false;
    // Both encoders' code runs int8 products with float32 activations
    // (Model::Impl::hasFloatActivationInt8(); an earlier exporter's does not). Known once the
    // modules are loaded: Model::load plans their loading as for this exporter's code, and
    // converts an earlier package's float32 encoders to what the plan with the fact says.
    bool floatActivationInt8Code = false;
};

// How the encoders' large linear layers are quantized after loading
// (Model::Impl::quantizeEncoders).
enum class EncoderInt8 {
    None,
    LowActivations,   // bfloat16 encoders; their products of both sides >= 512 int8
    FloatActivations, // float32 encoders; their products of both sides >= 128 on the own int8
                      // GEMM, activations float32 in and out
};

struct PrecisionPlan {
    Precision encoders = Precision::Float32; // what the vision and text encoders load in
    Precision decoder = Precision::Float32;  // what the decoder loads in
    EncoderInt8 encoderInt8 = EncoderInt8::None;
    bool quantizeDecoder = false; // Model::Impl::quantizeDecoder
    // Model::encoderPrecision() when no encoder took int8 products; Int8 when one did (the
    // quantization skips an encoder wider than Florence-2-base's or whose code predates them).
    Precision encoderReport = Precision::Float32;
    // The encoders do not take the precision asked for: Model::precisionNote() says what runs.
    bool floatEncodersNote = false;
};

PrecisionPlan planPrecision(Precision requested, const PrecisionFacts& facts);

} // namespace florence
