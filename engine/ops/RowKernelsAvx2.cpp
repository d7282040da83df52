// Built with -mavx2 -mfma (engine/ops/CMakeLists.txt): nothing here may run unless
// kernelPathSupported(KernelPath::Avx2) (KernelPath.cpp, built for any x86-64) said yes.
#include "Avx2Kernels.h"
#include "Prefetch.h"
#include "RowScale.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace florence::ops {

namespace {

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Weights as float32: 16 per step (two registers).
struct F32Weights {
    using T = float;
    static constexpr int kStep = 16;
    static int64_t xStride(int64_t k) { return k; }
    static inline __m256 fma(const float* w, const float* x, __m256 acc) {
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(w), _mm256_loadu_ps(x), acc);
        return _mm256_fmadd_ps(_mm256_loadu_ps(w + 8), _mm256_loadu_ps(x + 8), acc);
    }
    // The first `valid` (< kStep) of w and x, copied next to zeros: AVX2 has no masked loads of
    // every width, and a tail runs once per column.
    static inline __m256 fmaTail(const float* w, const float* x, __m256 acc, int valid) {
        float wb[kStep] = {}, xb[kStep] = {};
        std::memcpy(wb, w, sizeof(float) * size_t(valid));
        std::memcpy(xb, x, sizeof(float) * size_t(valid));
        return fma(wb, xb, acc);
    }
};

// Weights as bfloat16: 32 per step (a cache line) in two loads of 16. In each 32-bit lane the
// even element is the low half (shifted up it is a float32) and the odd one the high half
// (masked it is one); prepareBf16Input laid x out as 16 even then 16 odd elements per block of
// 32, which are the first load's evens, the second's evens, the first's odds, the second's odds.
struct Bf16Weights {
    using T = uint16_t;
    static constexpr int kStep = 32;
    static int64_t xStride(int64_t k) { return (k + 31) / 32 * 32; }
    static inline __m256 fma(const uint16_t* w, const float* x, __m256 acc) {
        const __m256i high = _mm256_set1_epi32(int(0xFFFF0000u));
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16));
        acc =
            _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)), _mm256_loadu_ps(x), acc);
        acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(b, 16)), _mm256_loadu_ps(x + 8),
                              acc);
        acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(a, high)),
                              _mm256_loadu_ps(x + 16), acc);
        return _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(b, high)),
                               _mm256_loadu_ps(x + 24), acc);
    }
    // x is zero-padded to whole blocks; the weights past the end are replaced by zeros (what
    // lies there may be a NaN's or an infinity's bits, and zero times those is not zero).
    static inline __m256 fmaTail(const uint16_t* w, const float* x, __m256 acc, int valid) {
        uint16_t wb[kStep] = {};
        std::memcpy(wb, w, sizeof(uint16_t) * size_t(valid));
        return fma(wb, x, acc);
    }
};

// Weights as int8 with a scale per output column: 32 per step, four blocks of 8 sign-extended
// to int32 and converted to float32 (vpmovsxbd, vcvtdq2ps), then multiplied by x in float32; the
// scale is applied once to each column's sum.
struct Int8Weights {
    using T = int8_t;
    static constexpr int kStep = 32;
    static int64_t xStride(int64_t k) { return k; }
    static inline __m256 widen(const int8_t* w) {
        return _mm256_cvtepi32_ps(
            _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w))));
    }
    static inline __m256 fma(const int8_t* w, const float* x, __m256 acc) {
#pragma GCC unroll 4
        for (int b = 0; b < 4; ++b)
            acc = _mm256_fmadd_ps(widen(w + 8 * b), _mm256_loadu_ps(x + 8 * b), acc);
        return acc;
    }
    static inline __m256 fmaTail(const int8_t* w, const float* x, __m256 acc, int valid) {
        int8_t wb[kStep] = {};
        float xb[kStep] = {};
        std::memcpy(wb, w, size_t(valid));
        std::memcpy(xb, x, sizeof(float) * size_t(valid));
        return fma(wb, xb, acc);
    }
};

// Output column j for R (one or two) rows of x, its weights read front to back, one column
// after the next: a product reads its weights as one sequential stream, which the hardware
// prefetcher follows best (RowKernels.cpp), asked for ahead as well (Prefetch.h). Four sums
// per row, so the FMAs' latency never holds the loads back (a step chains two to four FMAs); with
// scales (int8 weights), each sum is multiplied by its column's scale before the bias is added.
template <class W, int R>
inline void column(const float* x, const typename W::T* w, const float* bias, const double* scales,
                   float* y, int64_t n, int64_t k, int64_t j) {
    constexpr int kSums = 4;
    constexpr int64_t kStep = W::kStep;
    const int64_t xs = W::xStride(k);
    const typename W::T* wj = w + j * k;
    __m256 acc[R][kSums];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int a = 0; a < kSums; ++a)
            acc[r][a] = _mm256_setzero_ps();
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
        const __m256 sum =
            _mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3]));
        y[r * n + j] = hsum(sum) * scale + (bias ? bias[j] : 0.0f);
    }
}

// Three or four rows take each column in two passes of at most two rows (16 registers hold two
// rows' sums); the second pass finds the column's weights in cache. Every row gets what it gets
// alone.
template <class W, int R>
void columns(const float* x, const typename W::T* w, const float* bias, const double* scales,
             float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    const int64_t xs = W::xStride(k);
    for (int64_t j = begin; j < end; ++j) {
        column<W, R <= 2 ? R : 2>(x, w, bias, scales, y, n, k, j);
        if constexpr (R > 2)
            column<W, R - 2>(x + 2 * xs, w, bias, scales, y + 2 * n, n, k, j);
    }
}

// The int16 kernel (Avx2Kernels.h).
inline int32_t sum8(__m256i v) {
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1)));
}

inline __m256i widen16(const int8_t* w) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
}

// Adds 16 weights (as int16) times each row's 16 values of x (xr: the first row's) from i to
// acc, in pairs.
template <int R>
inline void int16Pairs(const int16_t* xr, int64_t stride, __m256i w, int64_t i, __m256i (&acc)[R]) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        acc[r] = _mm256_add_epi32(
            acc[r], _mm256_madd_epi16(w, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                             xr + r * stride + i))));
}

// Output column j for one to four rows in one pass (eight sums and two weight registers), its
// weights read front to back, one column after the next as the float kernels above. Integer sums
// are exact in any order, so a row gets what it gets alone. Within a block of kInt16Block
// elements no sum leaves int32 (int16Levels); the blocks are added in int64. The k tail (k % 32)
// is read from a zero-padded copy, x is zero there.
template <int R>
inline void int16Column(const Int16Input& x, int row0, const int8_t* w, const double* scales,
                        const float* bias, float* y, int64_t n, int64_t k, int64_t j) {
    const int8_t* wj = w + j * k;
    const int16_t* xr = x.values.data() + row0 * x.stride;
    int64_t total[R] = {};
    for (int64_t b0 = 0; b0 < k; b0 += kInt16Block) {
        const int64_t b1 = std::min(k, b0 + kInt16Block);
        __m256i lo[R], hi[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
            lo[r] = hi[r] = _mm256_setzero_si256();
        int64_t i = b0;
        for (; i + 32 <= b1; i += 32) {
            prefetchAhead(wj + i);
            int16Pairs<R>(xr, x.stride, widen16(wj + i), i, lo);
            int16Pairs<R>(xr, x.stride, widen16(wj + i + 16), i + 16, hi);
        }
        if (i < b1) {
            alignas(32) int8_t tail[32] = {};
            std::memcpy(tail, wj + i, size_t(b1 - i));
            int16Pairs<R>(xr, x.stride, widen16(tail), i, lo);
            int16Pairs<R>(xr, x.stride, widen16(tail + 16), i + 16, hi);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
            total[r] += sum8(_mm256_add_epi32(lo[r], hi[r]));
    }
    // The rounding spelled out, so that no row count's code fuses it otherwise.
    const float scale = float(scales[j]), b = bias ? bias[j] : 0.0f;
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        y[r * n + j] = std::fma(float(total[r]) * x.scales[size_t(row0 + r)], scale, b);
}

template <int R>
void int16Columns(const Int16Input& x, int row0, const int8_t* w, const double* scales,
                  const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j)
        int16Column<R>(x, row0, w, scales, bias, y, n, k, j);
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

} // namespace

void rowsF32Avx2(const float* x, int rows, const float* w, const float* bias, float* y, int64_t n,
                 int64_t k, int64_t begin, int64_t end) {
    dispatchRows<F32Weights>(x, rows, w, bias, nullptr, y, n, k, begin, end);
}

void rowsBf16Avx2(const float* preparedX, int rows, const uint16_t* w, const float* bias, float* y,
                  int64_t n, int64_t k, int64_t begin, int64_t end) {
    dispatchRows<Bf16Weights>(preparedX, rows, w, bias, nullptr, y, n, k, begin, end);
}

void rowsInt8Avx2(const float* x, int rows, const int8_t* w, const double* scales,
                  const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    dispatchRows<Int8Weights>(x, rows, w, bias, scales, y, n, k, begin, end);
}

int int16Levels(int64_t k) {
    // |w| <= 128 and |x| <= levels: a block's sum stays within int32 (4095 at kInt16Block).
    const int64_t block = std::clamp<int64_t>(k, 1, kInt16Block);
    return int(std::min<int64_t>(32767, std::numeric_limits<int32_t>::max() / (128 * block)));
}

void prepareInt16Input(const float* x, int rows, int64_t k, Int16Input& out) {
    out.stride = (k + 31) / 32 * 32;
    out.values.assign(size_t(rows * out.stride), 0);
    out.scales.assign(size_t(rows), 0.0f);
    const float levels = float(int16Levels(k));
    for (int r = 0; r < rows; ++r) {
        const float* xr = x + r * k;
        const float scale = magnitudeScale(xr, k, levels);
        out.scales[size_t(r)] = scale;
        if (std::isnan(scale))
            continue; // a NaN or an infinity in the row: every output of it is NaN
        const float inv = 1.0f / scale;
        int16_t* v = out.values.data() + r * out.stride;
        for (int64_t i = 0; i < k; ++i)
            v[i] = int16_t(std::clamp(std::nearbyint(xr[i] * inv), -levels, levels));
    }
}

void rowsInt8Int16Avx2(const Int16Input& x, int row0, int rows, const int8_t* w,
                       const double* scales, const float* bias, float* y, int64_t n, int64_t k,
                       int64_t begin, int64_t end) {
    switch (rows) {
    case 1:
        return int16Columns<1>(x, row0, w, scales, bias, y, n, k, begin, end);
    case 2:
        return int16Columns<2>(x, row0, w, scales, bias, y, n, k, begin, end);
    case 3:
        return int16Columns<3>(x, row0, w, scales, bias, y, n, k, begin, end);
    default:
        return int16Columns<4>(x, row0, w, scales, bias, y, n, k, begin, end);
    }
}

void dequantizeInt8Avx2(const int8_t* w, const double* scales, int64_t k, int64_t begin,
                        int64_t end, float* out) {
    for (int64_t j = begin; j < end; ++j) {
        const int8_t* wj = w + j * k;
        float* o = out + (j - begin) * k;
        const __m256 s = _mm256_set1_ps(float(scales[j]));
        int64_t i = 0;
        for (; i + 8 <= k; i += 8)
            _mm256_storeu_ps(o + i, _mm256_mul_ps(Int8Weights::widen(wj + i), s));
        for (; i < k; ++i)
            o[i] = float(wj[i]) * float(scales[j]);
    }
}

} // namespace florence::ops
