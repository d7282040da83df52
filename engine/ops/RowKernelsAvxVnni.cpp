// The decoding step's int8 kernel for AVX2 CPUs with AVX-VNNI (Avx2Kernels.h): x quantized per
// row to magnitudes 0..255 and a sign byte, the sign moved onto the weights (vpsignb) and four
// u8 x s8 products summed into each 32-bit lane (vpdpbusd on 256-bit registers), as the AVX-512
// VNNI kernel does with masks (RowKernels.cpp). Compiled with -mavx2 -mfma -mavxvnni.
#include "Avx2Kernels.h"
#include "Prefetch.h"
#include "RowScale.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace florence::ops {
namespace {

inline int32_t sum8(__m256i v) {
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1)));
}

// Adds the 32 weights of wv times each row's 32 activations from i to acc.
template <int R>
inline void step(const AvxVnniInput& x, int row0, __m256i wv, int64_t i, __m256i (&acc)[R]) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        const int64_t at = (row0 + r) * x.stride + i;
        const __m256i a =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.magnitude.data() + at));
        const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sign.data() + at));
        acc[r] = _mm256_dpbusd_avx_epi32(acc[r], a, _mm256_sign_epi8(wv, s));
    }
}

inline __m256i load(const int8_t* w) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
}

// Output column j for R rows, its weights read front to back, one column after the next (one
// sequential stream, RowKernelsAvx2.cpp), two sums per row. The k tail (k % 32) is read from a
// zero-padded copy.
template <int R>
inline void column(const AvxVnniInput& x, int row0, const int8_t* w, const double* scales,
                   const float* bias, float* y, int64_t n, int64_t k, int64_t j) {
    const int8_t* wj = w + j * k;
    __m256i even[R], odd[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        even[r] = odd[r] = _mm256_setzero_si256();
    const int64_t whole = k / 32 * 32;
    int64_t i = 0;
    for (; i + 64 <= whole; i += 64) {
        prefetchAhead(wj + i);
        step<R>(x, row0, load(wj + i), i, even);
        step<R>(x, row0, load(wj + i + 32), i + 32, odd);
    }
    if (i < whole)
        step<R>(x, row0, load(wj + i), i, even);
    if (whole < k) {
        alignas(32) int8_t tail[32] = {};
        std::memcpy(tail, wj + whole, size_t(k - whole));
        step<R>(x, row0, _mm256_load_si256(reinterpret_cast<const __m256i*>(tail)), whole, odd);
    }
    // The rounding spelled out, so that no row count's code fuses it otherwise (a row computed
    // with others gives what it gives alone).
    const float scale = float(scales[j]), b = bias ? bias[j] : 0.0f;
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
        y[r * n + j] = std::fma(
            float(sum8(_mm256_add_epi32(even[r], odd[r]))) * x.scales[size_t(row0 + r)], scale, b);
}

template <int R>
void rowsFor(const AvxVnniInput& x, int row0, const int8_t* w, const double* scales,
             const float* bias, float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j)
        column<R>(x, row0, w, scales, bias, y, n, k, j);
}

} // namespace

void prepareAvxVnniInput(const float* x, int rows, int64_t k, AvxVnniInput& out) {
    out.stride = (k + 31) / 32 * 32;
    out.magnitude.assign(size_t(rows * out.stride), 0);
    out.sign.assign(size_t(rows * out.stride), 1);
    out.scales.assign(size_t(rows), 0.0f);
    for (int r = 0; r < rows; ++r) {
        const float* xr = x + r * k;
        const float scale = magnitudeScale(xr, k);
        out.scales[size_t(r)] = scale;
        const float inv = 1.0f / scale;
        uint8_t* mag = out.magnitude.data() + r * out.stride;
        int8_t* sign = out.sign.data() + r * out.stride;
        for (int64_t i = 0; i < k; ++i) {
            mag[i] = uint8_t(std::min(255.0f, std::nearbyint(std::fabs(xr[i]) * inv)));
            sign[i] = xr[i] < 0 ? -1 : 1;
        }
    }
}

void rowsInt8AvxVnni(const AvxVnniInput& x, int row0, int rows, const int8_t* w,
                     const double* scales, const float* bias, float* y, int64_t n, int64_t k,
                     int64_t begin, int64_t end) {
    switch (rows) {
    case 1:
        return rowsFor<1>(x, row0, w, scales, bias, y, n, k, begin, end);
    case 2:
        return rowsFor<2>(x, row0, w, scales, bias, y, n, k, begin, end);
    case 3:
        return rowsFor<3>(x, row0, w, scales, bias, y, n, k, begin, end);
    default:
        return rowsFor<4>(x, row0, w, scales, bias, y, n, k, begin, end);
    }
}

} // namespace florence::ops
