#pragma once
// Matrix-vector kernels for the one to four rows of a decoding step: y = x W^T (+ bias) with W
// row-major [n, k] in float32 or bfloat16, x float32 [rows, k], y float32 [rows, n]. Each call
// computes the output columns [begin, end); callers split that range over threads.
//
//     std::vector<float> xs(rows * florence::ops::bf16InputFloats(k));
//     florence::ops::prepareBf16Input(x, rows, k, xs.data());
//     florence::ops::rowsBf16Avx512(xs.data(), rows, w, bias, y, n, k, 0, n);
//
// Compiled with AVX-512 flags in a file of their own: call them only when haveAvx512() is true.

#include <cstdint>

namespace florence::ops {

// AVX-512 F, BW and VL, which the kernels use (masked 16-bit loads included).
bool haveAvx512();

// x contiguous [rows, k], rows 1 to 4.
void rowsF32Avx512(const float* x, int rows, const float* w, const float* bias, float* y, int64_t n,
                   int64_t k, int64_t begin, int64_t end);

// Floats per row of the prepared input of rowsBf16Avx512: k rounded up to 32.
int64_t bf16InputFloats(int64_t k);

// The bfloat16 kernel reads 32 weights at a time as 16 even and 16 odd ones (a mask and a
// shift widen them to float32, no shuffle), so x is laid out to match once per call: per block
// of 32, its 16 even then its 16 odd elements, zero-padded. x stays float32, so products and sums
// keep x's full precision.
void prepareBf16Input(const float* x, int rows, int64_t k, float* out);

void rowsBf16Avx512(const float* preparedX, int rows, const uint16_t* w, const float* bias,
                    float* y, int64_t n, int64_t k, int64_t begin, int64_t end);

} // namespace florence::ops
