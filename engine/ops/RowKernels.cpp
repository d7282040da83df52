// Built with -mavx512f -mavx512bw -mavx512vl (engine/ops/CMakeLists.txt): nothing here may run
// unless haveAvx512() (KernelPath.cpp, built for any x86-64) said yes.
#include "RowKernels.h"
#include "Prefetch.h"
#include "RowScale.h"

#include "Avx512.h"

#include <algorithm>
#include <cmath>

namespace florence::ops {

namespace {

// Each output column's weights are read front to back, one column after the next, so a product
// reads its weights as one sequential stream. The earlier form read four columns side by side
// (four streams, each asking for its counterpart in the next group): on a Zen 5 host with
// AVX-512 one core read a base decoder step's weights at 15 GB/s that way and at 23 GB/s as one
// stream, as fast as a plain sum over them. The kernels also ask for the stream ahead
// (Prefetch.h). A column's sums go into kSums registers per row, so the FMAs' latency never holds
// the loads back (int8 and bfloat16 chain two to four FMAs per step).
constexpr int kSums = 4;

// Weights as float32: 16 per step.
struct F32Weights {
    using T = float;
    static constexpr int kStep = 16;
    static int64_t xStride(int64_t k) { return k; }
    // Adds w[0..16) * x[0..16) to acc (masked: the first `valid` elements).
    static inline __m512 fma(const float* w, const float* x, __m512 acc) {
        return _mm512_fmadd_ps(_mm512_loadu_ps(w), _mm512_loadu_ps(x), acc);
    }
    static inline __m512 fmaTail(const float* w, const float* x, __m512 acc, int valid) {
        const __mmask16 m = static_cast<__mmask16>((1u << valid) - 1);
        return _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w), _mm512_maskz_loadu_ps(m, x), acc);
    }
};

// Weights as bfloat16: 32 per step, widened without a shuffle. In each 32-bit lane the even
// element is the low half (shifted up it is a float32) and the odd one the high half (masked
// it is one); x was laid out as 16 even then 16 odd elements to match.
struct Bf16Weights {
    using T = uint16_t;
    static constexpr int kStep = 32;
    static int64_t xStride(int64_t k) { return bf16InputFloats(k); }
    static inline __m512 widen(__m512i v, __m512& odd) {
        odd = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(int(0xFFFF0000u))));
        return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    }
    static inline __m512 fma(const uint16_t* w, const float* x, __m512 acc) {
        __m512 odd;
        const __m512 even = widen(_mm512_loadu_si512(w), odd);
        acc = _mm512_fmadd_ps(even, _mm512_loadu_ps(x), acc);
        return _mm512_fmadd_ps(odd, _mm512_loadu_ps(x + 16), acc);
    }
    static inline __m512 fmaTail(const uint16_t* w, const float* x, __m512 acc, int valid) {
        const __mmask32 m = static_cast<__mmask32>((uint64_t(1) << valid) - 1);
        __m512 odd;
        const __m512 even = widen(_mm512_maskz_loadu_epi16(m, w), odd);
        acc = _mm512_fmadd_ps(even, _mm512_loadu_ps(x), acc); // x is zero-padded
        return _mm512_fmadd_ps(odd, _mm512_loadu_ps(x + 16), acc);
    }
};

// Weights as int8 with a scale per output column: 64 per step (a cache line), four blocks of 16
// sign-extended to int32 and converted to float32 (vpmovsxbd with its load, vcvtdq2ps), then
// multiplied by x in float32; the scale is applied once to each column's sum.
struct Int8Weights {
    using T = int8_t;
    static constexpr int kStep = 64;
    static int64_t xStride(int64_t k) { return k; }
    static inline __m512 widen(__m128i v) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v)); }
    static inline __m512 fma(const int8_t* w, const float* x, __m512 acc) {
#pragma GCC unroll 4
        for (int b = 0; b < 4; ++b)
            acc = _mm512_fmadd_ps(
                widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16 * b))),
                _mm512_loadu_ps(x + 16 * b), acc);
        return acc;
    }
    // Masked loads of both, block by block (a block past the end loads nothing), so x needs no
    // padding.
    static inline __m512 fmaTail(const int8_t* w, const float* x, __m512 acc, int valid) {
#pragma GCC unroll 4
        for (int b = 0; b < 4; ++b) {
            const int left = valid - 16 * b;
            if (left <= 0)
                break;
            const __mmask16 m =
                left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
            acc = _mm512_fmadd_ps(widen(_mm_maskz_loadu_epi8(m, w + 16 * b)),
                                  _mm512_maskz_loadu_ps(m, x + 16 * b), acc);
        }
        return acc;
    }
};

// Output column j for R rows of x; with scales (int8 weights), each sum is multiplied by its
// column's scale before the bias is added.
template <class W, int R>
inline void column(const float* x, const typename W::T* w, const float* bias, const double* scales,
                   float* y, int64_t n, int64_t k, int64_t j) {
    constexpr int64_t kStep = W::kStep;
    const int64_t xs = W::xStride(k);
    const typename W::T* wj = w + j * k;
    __m512 acc[R][kSums];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int a = 0; a < kSums; ++a)
            acc[r][a] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + kSums * kStep <= k; i += kSums * kStep)
#pragma GCC unroll 4
        for (int a = 0; a < kSums; ++a) {
            prefetchAhead(wj + i + a * kStep);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r)
                acc[r][a] = W::fma(wj + i + a * kStep, x + r * xs + i + a * kStep, acc[r][a]);
        }
    for (; i + kStep <= k; i += kStep)
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
            acc[r][0] = W::fma(wj + i, x + r * xs + i, acc[r][0]);
    if (i < k)
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
            acc[r][1] = W::fmaTail(wj + i, x + r * xs + i, acc[r][1], static_cast<int>(k - i));
    const float scale = scales ? float(scales[j]) : 1.0f;
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        const __m512 sum =
            _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3]));
        y[r * n + j] = _mm512_reduce_add_ps(sum) * scale + (bias ? bias[j] : 0.0f);
    }
}

template <class W, int R>
void columns(const float* x, const typename W::T* w, const float* bias, const double* scales,
             float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j)
        column<W, R>(x, w, bias, scales, y, n, k, j);
}

template <class W>
void dispatchRows(const float* x, int rows, const typename W::T* w, const float* bias,
                  const double* scales, float* y, int64_t n, int64_t k, int64_t begin,
                  int64_t end) {
    switch (rows) {
    case 1:
        return columns<W, 1>(x, w, bias, scales, y, n, k, begin, end);
    case 2:
        return columns<W, 2>(x, w, bias, scales, y, n, k, begin, end);
    case 3:
        return columns<W, 3>(x, w, bias, scales, y, n, k, begin, end);
    default:
        return columns<W, 4>(x, w, bias, scales, y, n, k, begin, end);
    }
}

// int8 weights against activations quantized to 8 bits per row (AVX512-VNNI's vpdpbusd multiplies
// unsigned bytes by signed ones and sums them four by four into int32). x is kept as magnitude
// (0..255, so 9 bits with its sign) and sign: the sign is applied to the weights (0 - w where x
// is negative; symmetric int8 weights never hold -128), which gives twice the resolution of
// offsetting x by 128 and needs no per-column sum of the weights.
#define FLORENCE_VNNI __attribute__((target("avx512vnni")))

// One output of the VNNI kernels from its exact integer sum, its roundings spelled out (an explicit
// fused multiply-add, where the compiler might fuse or not depending on the code around it), so
// both forms of the kernel give the same float.
inline float vnniOutput(int sum, float xScale, double scale, float bias) {
    return std::fma(float(sum) * xScale, float(scale), bias);
}

// Adds the 64 weights of column wj from i (masked past k) times each row's 64 activations to acc.
template <int R>
FLORENCE_VNNI inline void vnniStep(const VnniInput& x, int row0, const int8_t* wj, int64_t k,
                                   int64_t i, __m512i (&acc)[R]) {
    const int64_t left = k - i;
    const __mmask64 m = left >= 64 ? ~__mmask64(0) : (__mmask64(1) << left) - 1;
    const __m512i wv = _mm512_maskz_loadu_epi8(m, wj + i);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        const __m512i a = _mm512_loadu_si512(x.magnitude.data() + (row0 + r) * x.stride + i);
        const __mmask64 neg = x.signs[(row0 + r) * (x.stride / 64) + i / 64];
        acc[r] = _mm512_dpbusd_epi32(acc[r], a,
                                     _mm512_mask_sub_epi8(wv, neg, _mm512_setzero_si512(), wv));
    }
}

// Output column j for rows [row0, row0 + R) of x, its weights read front to back (see kSums),
// two sums per row.
template <int R>
FLORENCE_VNNI inline void vnniColumn(const VnniInput& x, int row0, const int8_t* w,
                                     const double* scales, const float* bias, float* y, int64_t n,
                                     int64_t k, int64_t j) {
    const int8_t* wj = w + j * k;
    __m512i even[R], odd[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        even[r] = odd[r] = _mm512_setzero_si512();
    int64_t i = 0;
    for (; i + 128 <= k; i += 128) {
        prefetchAhead(wj + i);
        prefetchAhead(wj + i + 64);
        vnniStep<R>(x, row0, wj, k, i, even);
        vnniStep<R>(x, row0, wj, k, i + 64, odd);
    }
    if (i < k)
        vnniStep<R>(x, row0, wj, k, i, even);
    if (i + 64 < k)
        vnniStep<R>(x, row0, wj, k, i + 64, odd);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        y[r * n + j] = vnniOutput(_mm512_reduce_add_epi32(_mm512_add_epi32(even[r], odd[r])),
                                  x.scales[row0 + r], scales[j], bias ? bias[j] : 0.0f);
}

// Four output columns j..j+3 for rows [row0, row0 + R) of x, for products of five rows and
// more, whose tile of weights stays in cache while each block of four rows reads it: each weight
// load serves R rows and each activation load four columns.
template <int R>
FLORENCE_VNNI inline void vnniFourColumns(const VnniInput& x, int row0, const int8_t* w,
                                          const double* scales, const float* bias, float* y,
                                          int64_t n, int64_t k, int64_t j) {
    const int8_t* wc[4] = {w + j * k, w + (j + 1) * k, w + (j + 2) * k, w + (j + 3) * k};
    __m512i acc[R][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c)
            acc[r][c] = _mm512_setzero_si512();
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t i = 0; i < k; i += 64) {
        const int64_t left = k - i;
        const __mmask64 m = left >= 64 ? ~__mmask64(0) : (__mmask64(1) << left) - 1;
        __m512i wv[4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            prefetchAhead(wc[c] + i);
            wv[c] = _mm512_maskz_loadu_epi8(m, wc[c] + i);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const __m512i a = _mm512_loadu_si512(x.magnitude.data() + (row0 + r) * x.stride + i);
            const __mmask64 neg = x.signs[(row0 + r) * (x.stride / 64) + i / 64];
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c)
                acc[r][c] = _mm512_dpbusd_epi32(acc[r][c], a,
                                                _mm512_mask_sub_epi8(wv[c], neg, zero, wv[c]));
        }
    }
    // Exact integer sums, scaled as vnniColumn scales them: both forms give the same floats.
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c)
            y[r * n + j + c] = vnniOutput(_mm512_reduce_add_epi32(acc[r][c]), x.scales[row0 + r],
                                          scales[j + c], bias ? bias[j + c] : 0.0f);
}

// Columns [begin, end): one at a time (a step's weights, from memory), or with kTile four at a
// time (a tile of weights in cache, read by many rows).
template <bool kTile, int R>
FLORENCE_VNNI void vnniColumns(const VnniInput& x, int row0, const int8_t* w, const double* scales,
                               const float* bias, float* y, int64_t n, int64_t k, int64_t begin,
                               int64_t end) {
    int64_t j = begin;
    if constexpr (kTile)
        for (; j + 4 <= end; j += 4)
            vnniFourColumns<R>(x, row0, w, scales, bias, y, n, k, j);
    for (; j < end; ++j)
        vnniColumn<R>(x, row0, w, scales, bias, y, n, k, j);
}

template <bool kTile>
void vnniRows(const VnniInput& x, int row0, int rows, const int8_t* w, const double* scales,
              const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    switch (rows) {
    case 1:
        return vnniColumns<kTile, 1>(x, row0, w, scales, bias, y, n, k, begin, end);
    case 2:
        return vnniColumns<kTile, 2>(x, row0, w, scales, bias, y, n, k, begin, end);
    case 3:
        return vnniColumns<kTile, 3>(x, row0, w, scales, bias, y, n, k, begin, end);
    default:
        return vnniColumns<kTile, 4>(x, row0, w, scales, bias, y, n, k, begin, end);
    }
}

} // namespace

int64_t vnniInputBytes(int64_t k) {
    return (k + 63) / 64 * 64;
}

void prepareVnniInput(const float* x, int rows, int64_t k, VnniInput& out) {
    out.stride = vnniInputBytes(k);
    out.magnitude.assign(size_t(rows * out.stride), 0);
    out.signs.assign(size_t(rows * (out.stride / 64)), 0);
    out.scales.assign(size_t(rows), 0.0f);
    for (int r = 0; r < rows; ++r) {
        const float* xr = x + r * k;
        const float scale = magnitudeScale(xr, k);
        out.scales[size_t(r)] = scale;
        const __m512 inv = _mm512_set1_ps(1.0f / scale);
        uint8_t* mag = out.magnitude.data() + r * out.stride;
        uint64_t* signs = out.signs.data() + r * (out.stride / 64);
        for (int64_t i = 0; i < k; i += 16) {
            const int valid = int(std::min<int64_t>(16, k - i));
            const __mmask16 m = valid == 16 ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1);
            const __m512 v = _mm512_maskz_loadu_ps(m, xr + i);
            const __m512 a = _mm512_mul_ps(_mm512_abs_ps(v), inv);
            const __m128i q = _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(a));
            _mm_mask_storeu_epi8(mag + i, m, q);
            const uint64_t neg = _mm512_mask_cmplt_ps_mask(m, v, _mm512_setzero_ps());
            signs[i / 64] |= neg << (i % 64);
        }
    }
}

void rowsInt8Vnni(const VnniInput& x, int row0, int rows, const int8_t* w, const double* scales,
                  const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    vnniRows<false>(x, row0, rows, w, scales, bias, y, n, k, begin, end);
}

void tileInt8Vnni(const VnniInput& x, int row0, int rows, const int8_t* w, const double* scales,
                  const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    vnniRows<true>(x, row0, rows, w, scales, bias, y, n, k, begin, end);
}

void rowsF32Avx512(const float* x, int rows, const float* w, const float* bias, float* y, int64_t n,
                   int64_t k, int64_t begin, int64_t end) {
    dispatchRows<F32Weights>(x, rows, w, bias, nullptr, y, n, k, begin, end);
}

void rowsBf16Avx512(const float* preparedX, int rows, const uint16_t* w, const float* bias,
                    float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    dispatchRows<Bf16Weights>(preparedX, rows, w, bias, nullptr, y, n, k, begin, end);
}

void rowsInt8Avx512(const float* x, int rows, const int8_t* w, const double* scales,
                    const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    dispatchRows<Int8Weights>(x, rows, w, bias, scales, y, n, k, begin, end);
}

void dequantizeInt8Avx512(const int8_t* w, const double* scales, int64_t k, int64_t begin,
                          int64_t end, float* out) {
    for (int64_t j = begin; j < end; ++j) {
        const int8_t* wj = w + j * k;
        float* o = out + (j - begin) * k;
        const __m512 s = _mm512_set1_ps(float(scales[j]));
        int64_t i = 0;
        for (; i + 16 <= k; i += 16)
            _mm512_storeu_ps(o + i, _mm512_mul_ps(Int8Weights::widen(_mm_loadu_si128(
                                                      reinterpret_cast<const __m128i*>(wj + i))),
                                                  s));
        for (; i < k; ++i)
            o[i] = float(wj[i]) * float(scales[j]);
    }
}

} // namespace florence::ops
