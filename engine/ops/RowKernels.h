#pragma once
// Matrix-vector kernels for the one to four rows of a decoding step: y = x W^T (+ bias) with W
// row-major [n, k] in float32, bfloat16 or int8 (with a scale per row of W), x float32 [rows, k], y
// float32 [rows, n]. Each call computes the output columns [begin, end); callers split that range
// over threads.
//
//     std::vector<float> xs(rows * florence::ops::bf16InputFloats(k));
//     florence::ops::prepareBf16Input(x, rows, k, xs.data());
//     florence::ops::rowsBf16Avx512(xs.data(), rows, w, bias, y, n, k, 0, n);
//
// Compiled with AVX-512 flags in a file of their own: call them only when haveAvx512() is true
// (KernelPath.h chooses). bf16InputFloats and prepareBf16Input, shared with the AVX2 kernels
// (Avx2Kernels.h), are plain code in LinearRows.cpp.

#include <cstdint>
#include <vector>

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

// int8 weights, column j's products scaled by scales[j] (a per-channel quantized tensor's
// q_per_channel_scales(), zero points 0): y = (x w_j) * scale_j + bias_j. x contiguous [rows,
// k], as for float32.
void rowsInt8Avx512(const float* x, int rows, const int8_t* w, const double* scales,
                    const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end);

// AVX512-VNNI as well (vpdpbusd), for rowsInt8Vnni and the int8 GEMM's AVX-512 VNNI variant.
// FLORENCE_AVX512_VNNI=0 says no on a CPU that has it: what an AVX-512 CPU without VNNI (Intel
// Skylake-SP and -X) runs, to measure and test it on a newer one.
bool haveAvx512Vnni();

// Activations quantized per row for rowsInt8Vnni: magnitudes 0..255 (scale = largest |x| / 255)
// and one sign bit per element, k padded to 64 with zeros.
struct VnniInput {
    int64_t stride = 0;             // bytes per row of magnitude
    std::vector<uint8_t> magnitude; // stride per row
    std::vector<uint64_t> signs;    // stride / 64 per row, bit i%64 of word i/64: x[i] < 0
    std::vector<float> scales;      // per row
};
int64_t vnniInputBytes(int64_t k);
void prepareVnniInput(const float* x, int rows, int64_t k, VnniInput& out);

// int8 weights times 8-bit activations in int32 (AVX512-VNNI), scaled once per output:
// y = (sum of w_j and the quantized x) * xscale * scale_j + bias_j, for rows [row0, row0 + rows)
// of x (1 to 4) into y [rows, n]. Faster than rowsInt8Avx512, and x loses precision to its 9-bit
// quantization. Each row's result depends on that row alone. Call only when haveAvx512Vnni().
// rowsInt8Vnni reads each column's weights front to back once (a decoding step's weights come
// from memory); tileInt8Vnni computes four columns at once, for many rows over a tile of
// weights that stays in cache. Both give the same result.
void rowsInt8Vnni(const VnniInput& x, int row0, int rows, const int8_t* w, const double* scales,
                  const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end);
void tileInt8Vnni(const VnniInput& x, int row0, int rows, const int8_t* w, const double* scales,
                  const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end);

// Rows [begin, end) of int8 weights as float32 (w_j * scale_j) into out [end - begin, k]: how
// linear_rows runs five rows and more, one block of weights at a time.
void dequantizeInt8Avx512(const int8_t* w, const double* scales, int64_t k, int64_t begin,
                          int64_t end, float* out);

} // namespace florence::ops
