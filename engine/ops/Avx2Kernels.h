#pragma once
// The AVX2 + FMA counterparts of RowKernels.h's matrix-vector kernels, for the CPUs without
// AVX-512 (Intel's consumer chips since Alder Lake, AMD Zen 2 and 3): y = x W^T (+ bias) for
// the one to four rows of a decoding step, W row-major [n, k] in float32, bfloat16 or int8 (a
// scale per row of W), x float32 [rows, k], y float32 [rows, n]; each call computes the output
// columns [begin, end), which callers split over threads.
//
//     std::vector<float> xs(rows * florence::ops::bf16InputFloats(k));
//     florence::ops::prepareBf16Input(x, rows, k, xs.data()); // the AVX-512 kernel's layout
//     florence::ops::rowsBf16Avx2(xs.data(), rows, w, bias, y, n, k, 0, n);
//
// Compiled with -mavx2 -mfma in files of their own (RowKernelsAvx2.cpp, AttendKernelsAvx2.cpp):
// call them only when kernelPathSupported(KernelPath::Avx2) (KernelPath.h) is true.

#include <cstdint>
#include <vector>

namespace florence::ops {

// x contiguous [rows, k], rows 1 to 4.
void rowsF32Avx2(const float* x, int rows, const float* w, const float* bias, float* y, int64_t n,
                 int64_t k, int64_t begin, int64_t end);

// x prepared by prepareBf16Input (RowKernels.h): its blocks of 32 as 16 even then 16 odd
// elements, which two 16-weight loads widen with a shift and a mask, no shuffle.
void rowsBf16Avx2(const float* preparedX, int rows, const uint16_t* w, const float* bias, float* y,
                  int64_t n, int64_t k, int64_t begin, int64_t end);

// int8 weights, column j's products scaled by scales[j] (zero points 0), widened to float32 in
// registers (vpmovsxbd, vcvtdq2ps) and multiplied by x in float32: y = (x w_j) * scale_j + bias_j.
// Exact against the dequantized weights; FLORENCE_INT8_KERNEL=widen runs it in a step.
void rowsInt8Avx2(const float* x, int rows, const int8_t* w, const double* scales,
                  const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end);

// Without AVX-VNNI, what a step runs (AMD Zen 2 and 3, Intel before Alder Lake): x quantized per
// row to integers within +-int16Levels(k) (scale = largest |x| / that, at least 4095 levels, so
// x keeps 13 bits or more), k padded to 32 with zeros; 16 weights at a time sign-extended to
// int16 (vpmovsxbw) and multiplied by x in pairs summed into 32-bit lanes (vpmaddwd): per 16
// weights one extension, then a vpmaddwd and an add per row, where widening to float32 takes two
// extensions and two conversions per pass of two rows and two FMAs per row; the sums are exact
// integers (blocks of kInt16Block elements, each within int32, added in int64):
// y = (sum) * xscale_r * scale_j + bias_j. Each row's result depends on that row alone.
struct Int16Input {
    int64_t stride = 0;          // elements per row
    std::vector<int16_t> values; // stride per row
    std::vector<float> scales;   // per row
};
constexpr int64_t kInt16Block = 4096;
int int16Levels(int64_t k);
void prepareInt16Input(const float* x, int rows, int64_t k, Int16Input& out);
// Rows row0 .. row0 + rows - 1 of x (1 to 4) into y [rows, n].
void rowsInt8Int16Avx2(const Int16Input& x, int row0, int rows, const int8_t* w,
                       const double* scales, const float* bias, float* y, int64_t n, int64_t k,
                       int64_t begin, int64_t end);

// With AVX-VNNI as well (RowKernelsAvxVnni.cpp; Intel since Alder Lake, AMD Zen 5): x quantized
// per row to magnitudes 0..255 (scale = largest |x| / 255) and a sign byte (-1 or 1), k padded
// to 32 with zero magnitudes; the sign moved onto the weights (vpsignb) and four u8 x s8
// products summed per 32-bit lane (vpdpbusd): y = (sum) * xscale_r * scale_j + bias_j, as the
// AVX-512 VNNI kernel (RowKernels.h). Call only where int8GemmSupported(Int8Gemm::AvxVnni).
struct AvxVnniInput {
    int64_t stride = 0;             // bytes per row
    std::vector<uint8_t> magnitude; // stride per row
    std::vector<int8_t> sign;       // stride per row
    std::vector<float> scales;      // per row
};
void prepareAvxVnniInput(const float* x, int rows, int64_t k, AvxVnniInput& out);
// Rows row0 .. row0 + rows - 1 of x (1 to 4) into y [rows, n].
void rowsInt8AvxVnni(const AvxVnniInput& x, int row0, int rows, const int8_t* w,
                     const double* scales, const float* bias, float* y, int64_t n, int64_t k,
                     int64_t begin, int64_t end);

// Rows [begin, end) of int8 weights as float32 (w_j * scale_j) into out [end - begin, k].
void dequantizeInt8Avx2(const int8_t* w, const double* scales, int64_t k, int64_t begin,
                        int64_t end, float* out);

// Single-query attention of one (batch, head) pair, as attendOneF32Avx512 (AttendKernels.h).
void attendOneF32Avx2(const float* q, const float* k, int64_t kStride, const float* v,
                      int64_t vStride, const float* mask, int64_t maskStride, int64_t S, int64_t d,
                      float* scratch, float* out);

// The sum over i of exp(x[i] - shift), as sumExpAvx512 (AttendKernels.h).
double sumExpAvx2(const float* x, int64_t n, float shift);

// One head's attention for `rows` query rows over `keys` keys (florence::attend_windows and
// florence::attend_many): row t of out = softmax(scale q_t K^T + mask_t) V, q, k, v and out rows
// their strides apart with unit stride along d. In blocks of kBlockRows query rows whose scores
// stay in the second-level cache; the values weighted six rows and 16 columns at a time, so V
// passes through the cache twice per block rather than once per row. d a multiple of 8 up to
// kBlockMaxDim; mask additive (key j of row t at mask + t * maskRowStride + j * maskKeyStride,
// strides 0 where it broadcasts) or null; scratch: blockScratchFloats(keys, d) floats.
struct BlockAttention {
    const float* q = nullptr;
    int64_t qStride = 0;
    const float* k = nullptr;
    int64_t kStride = 0;
    const float* v = nullptr;
    int64_t vStride = 0;
    int64_t rows = 0, keys = 0, dim = 0;
    float scale = 1.0f;
    const float* mask = nullptr;
    int64_t maskRowStride = 0, maskKeyStride = 1;
    float* out = nullptr;
    int64_t outStride = 0;
};
constexpr int64_t kBlockRows = 12;
constexpr int64_t kBlockMaxDim = 64;
inline int64_t blockScratchFloats(int64_t keys, int64_t d) {
    return (d + kBlockRows) * ((keys + 7) / 8 * 8);
}
void attendBlockF32Avx2(const BlockAttention& a, float* scratch);

// Channel attention (florence::attend_channels): `groups` groups of d channels each (d a
// multiple of 8 up to kBlockMaxDim), side by side in rows `stride` floats apart, in three steps,
// the first and last over any split of the rows:
// - channelGramAvx2: s [groups][d][d], group g's q^T k over `rows` rows (q and k point at group
//   0's first column; the sum of each slice's Gram matrices gives the whole one);
// - channelMixingAvx2: one group's mix [d][d] from its s, column i = row i of softmax(scale s);
// - channelMixAvx2: out [rows][groups d], group g's columns = its v times its mix (row t: sum
//   over j of v[t][j] mix[j]), mix [groups][d][d], the values weighted six rows and 16 columns
//   at a time as attendBlockF32Avx2 does.
void channelGramAvx2(const float* q, const float* k, int64_t stride, int64_t rows, int64_t d,
                     int64_t groups, float* s);
void channelMixingAvx2(const float* s, int64_t d, float scale, float* mix);
void channelMixAvx2(const float* v, int64_t vStride, int64_t rows, const float* mix, int64_t d,
                    int64_t groups, float* out, int64_t outStride);

// florence::conv_tokens' product (ConvTokens.cpp, ConvKernelsAvx2.cpp): kConvTileRows output
// positions by 16 output channels of a convolution as a matrix product over k = kh * kw * C.
// a: the positions' patches interleaved, a[i * kConvTileRows + r] = patch r's element i (zeros
// for rows past the last); b: 16 output channels' weights, b[i * 16 + j]; bias: 16 floats.
// Writes rows x cols of out (outStride floats between rows): the bias, or with `accumulate`
// what out held, plus the k products added one after the other in order of i, so a product
// over k split into blocks called in order sums exactly as in one call.
constexpr int kConvTileRows = 6;
void convTileF32Avx2(const float* a, const float* b, int64_t k, const float* bias, bool accumulate,
                     float* out, int64_t outStride, int rows, int cols);

// florence::residual_dwconv's row y (ConvTokens.cpp): x [h, w, c] channels-last, taps [9, c]
// (the 3 x 3 depthwise kernel, (ky, kx) major), bias [c]; writes out's row y, x + the depthwise
// convolution of x with zero padding 1.
void residualDepthwise3x3Avx2(const float* x, int64_t h, int64_t w, int64_t c, const float* taps,
                              const float* bias, int64_t y, float* out);

} // namespace florence::ops
