#include "runtime/PrecisionPlan.h"

namespace florence {

PrecisionPlan planPrecision(Precision requested, const PrecisionFacts& facts) {
    // int8 loads the encoders in bfloat16 (README, Precision); their large linear layers and the
    // decoder are quantized after loading.
    // Both reduced precisions run the encoders' attention as bfloat16 batched products. Where
    // LibTorch sums those in bfloat16 (CPUs without AVX-512), the image features drift enough to
    // change the answers (a four-shape caption became "A yellow star."), so the encoders stay
    // float32 there and only the decoder, whose activations stay float32, takes the precision.
    // int8 where linear_int8 runs the own int8 GEMM (the AVX2 kernel class, FLORENCE_KERNELS=avx2
    // on an AVX-512 machine too, and AVX-512 with VNNI) keeps the encoders float32 but runs their
    // large products on it with float32 activations in and out (Quantize.cpp): about half the
    // float32 products' time on AVX2, and on AVX-512 VNNI a first token 0.84x that of bfloat16
    // encoders with oneDNN's int8 products (docs/performance.md). Encoders too wide for int8
    // products, or whose code predates float32 activations around them, would run all float32
    // that way: they load as the bfloat16 mode's where its products are accurate.
    const bool int8 = requested == Precision::Int8;
    const bool reduced = requested != Precision::Float32;
    const bool int8Own = int8 && facts.ownInt8Gemm && !facts.encodersTooWideForInt8 &&
                         (facts.floatActivationInt8Code || !facts.bfloat16ProductsAccurate);
    const bool lowEncoders = reduced && facts.bfloat16ProductsAccurate && !int8Own;
    PrecisionPlan plan;
    plan.encoders = !lowEncoders ? Precision::Float32 : int8 ? Precision::BFloat16 : requested;
    plan.decoder = int8 ? Precision::Float32 : requested;
    if (int8) {
        if (lowEncoders)
            plan.encoderInt8 = EncoderInt8::LowActivations;
        else if (int8Own && facts.int8GemmAvailable && facts.floatActivationInt8Code)
            plan.encoderInt8 = EncoderInt8::FloatActivations;
        plan.quantizeDecoder = true;
    }
    plan.encoderReport = lowEncoders ? requested : Precision::Float32;
    plan.floatEncodersNote = reduced && !lowEncoders;
    return plan;
}

} // namespace florence
