// Built with -mavx512f -mavx512bw -mavx512vl (engine/ops/CMakeLists.txt): nothing here may run
// unless haveAvx512() (LinearRows.cpp, built for any x86-64) said yes.
#include "RowKernels.h"

#include "Avx512.h"

#include <cstring>

namespace florence::ops {

namespace {

// The four rows of a group are read side by side, as four streams, and the next group's rows
// follow them in memory. With the hardware prefetcher alone one core read the LM head at 15-30
// GB/s (bfloat16 and four activation rows slowest); asking for each stream's counterpart in the
// next group as well gave 24-32 GB/s, near a plain sum's 35 (weights in DRAM; prefetching a
// fixed 0.5-3 KB ahead in the same row helped less).
template <class T> inline void prefetchNextGroup(const T* p, int64_t k) {
    _mm_prefetch(reinterpret_cast<const char*>(p + 4 * k), _MM_HINT_T0);
}

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

// Four output columns j..j+3 for R rows of x.
template <class W, int R>
inline void fourColumns(const float* x, const typename W::T* w, const float* bias, float* y,
                        int64_t n, int64_t k, int64_t j) {
    const int64_t xs = W::xStride(k);
    const typename W::T* w0 = w + j * k;
    const typename W::T* w1 = w0 + k;
    const typename W::T* w2 = w1 + k;
    const typename W::T* w3 = w2 + k;
    __m512 acc[R][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c)
            acc[r][c] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + W::kStep <= k; i += W::kStep) {
        prefetchNextGroup(w0 + i, k);
        prefetchNextGroup(w1 + i, k);
        prefetchNextGroup(w2 + i, k);
        prefetchNextGroup(w3 + i, k);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const float* xr = x + r * xs + i;
            acc[r][0] = W::fma(w0 + i, xr, acc[r][0]);
            acc[r][1] = W::fma(w1 + i, xr, acc[r][1]);
            acc[r][2] = W::fma(w2 + i, xr, acc[r][2]);
            acc[r][3] = W::fma(w3 + i, xr, acc[r][3]);
        }
    }
    if (i < k) {
        const int valid = static_cast<int>(k - i);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const float* xr = x + r * xs + i;
            acc[r][0] = W::fmaTail(w0 + i, xr, acc[r][0], valid);
            acc[r][1] = W::fmaTail(w1 + i, xr, acc[r][1], valid);
            acc[r][2] = W::fmaTail(w2 + i, xr, acc[r][2], valid);
            acc[r][3] = W::fmaTail(w3 + i, xr, acc[r][3], valid);
        }
    }
    const __m128 b = bias ? _mm_loadu_ps(bias + j) : _mm_setzero_ps();
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        _mm_storeu_ps(y + r * n + j,
                      _mm_add_ps(sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]), b));
}

// One output column (the last few of a range).
template <class W, int R>
inline void oneColumn(const float* x, const typename W::T* w, const float* bias, float* y,
                      int64_t n, int64_t k, int64_t j) {
    const int64_t xs = W::xStride(k);
    const typename W::T* w0 = w + j * k;
    __m512 acc[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        acc[r] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + W::kStep <= k; i += W::kStep)
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
            acc[r] = W::fma(w0 + i, x + r * xs + i, acc[r]);
    if (i < k)
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
            acc[r] = W::fmaTail(w0 + i, x + r * xs + i, acc[r], static_cast<int>(k - i));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        y[r * n + j] = _mm512_reduce_add_ps(acc[r]) + (bias ? bias[j] : 0.0f);
}

template <class W, int R>
void columns(const float* x, const typename W::T* w, const float* bias, float* y, int64_t n,
             int64_t k, int64_t begin, int64_t end) {
    int64_t j = begin;
    for (; j + 4 <= end; j += 4)
        fourColumns<W, R>(x, w, bias, y, n, k, j);
    for (; j < end; ++j)
        oneColumn<W, R>(x, w, bias, y, n, k, j);
}

template <class W>
void dispatchRows(const float* x, int rows, const typename W::T* w, const float* bias, float* y,
                  int64_t n, int64_t k, int64_t begin, int64_t end) {
    switch (rows) {
    case 1:
        return columns<W, 1>(x, w, bias, y, n, k, begin, end);
    case 2:
        return columns<W, 2>(x, w, bias, y, n, k, begin, end);
    case 3:
        return columns<W, 3>(x, w, bias, y, n, k, begin, end);
    default:
        return columns<W, 4>(x, w, bias, y, n, k, begin, end);
    }
}

} // namespace

void rowsF32Avx512(const float* x, int rows, const float* w, const float* bias, float* y, int64_t n,
                   int64_t k, int64_t begin, int64_t end) {
    dispatchRows<F32Weights>(x, rows, w, bias, y, n, k, begin, end);
}

int64_t bf16InputFloats(int64_t k) {
    return (k + 31) / 32 * 32;
}

void prepareBf16Input(const float* x, int rows, int64_t k, float* out) {
    const int64_t stride = bf16InputFloats(k);
    for (int r = 0; r < rows; ++r) {
        const float* xr = x + r * k;
        float* o = out + r * stride;
        std::memset(o, 0, sizeof(float) * stride);
        for (int64_t i = 0; i < k; ++i) {
            const int64_t block = i / 32 * 32, lane = i % 32;
            o[block + (lane % 2) * 16 + lane / 2] = xr[i];
        }
    }
}

void rowsBf16Avx512(const float* preparedX, int rows, const uint16_t* w, const float* bias,
                    float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    dispatchRows<Bf16Weights>(preparedX, rows, w, bias, y, n, k, begin, end);
}

} // namespace florence::ops
