// The decoding step's int8 kernel for AVX2 CPUs with AVX-VNNI (Avx2Kernels.h): x quantized per
// row to magnitudes 0..255 and a sign byte, the sign moved onto the weights (vpsignb) and four
// u8 x s8 products summed into each 32-bit lane (vpdpbusd on 256-bit registers), as the AVX-512
// VNNI kernel does with masks (RowKernels.cpp). Compiled with -mavx2 -mfma -mavxvnni.
#include "Avx2Kernels.h"
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

// Columns [j, j + C) for R rows. The k tail (k % 32) is read from a zero-padded copy.
template <int R, int C>
inline void columns(const AvxVnniInput& x, const int8_t* w, const double* scales, const float* bias,
                    float* y, int64_t n, int64_t k, int64_t j) {
    const int8_t* wc[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
        wc[c] = w + (j + c) * k;
    __m256i acc[R][C];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c)
            acc[r][c] = _mm256_setzero_si256();
    const int64_t whole = k / 32 * 32;
    auto step = [&](const __m256i(&wv)[C], int64_t i) {
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const __m256i a = _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(x.magnitude.data() + r * x.stride + i));
            const __m256i s = _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(x.sign.data() + r * x.stride + i));
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c)
                acc[r][c] = _mm256_dpbusd_avx_epi32(acc[r][c], a, _mm256_sign_epi8(wv[c], s));
        }
    };
    for (int64_t i = 0; i < whole; i += 32) {
        __m256i wv[C];
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            // The same place in the next group's rows: the hardware prefetcher alone follows
            // too few streams (Avx2Kernels.h).
            _mm_prefetch(reinterpret_cast<const char*>(wc[c] + C * k + i), _MM_HINT_T0);
            wv[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wc[c] + i));
        }
        step(wv, i);
    }
    if (whole < k) {
        __m256i wv[C];
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            alignas(32) int8_t tail[32] = {};
            std::memcpy(tail, wc[c] + whole, size_t(k - whole));
            wv[c] = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail));
        }
        step(wv, whole);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c)
            y[r * n + j + c] = float(sum8(acc[r][c])) * x.scales[size_t(r)] * float(scales[j + c]) +
                               (bias ? bias[j + c] : 0.0f);
}

// Four columns at a time for one or two rows, two for three or four (16 registers).
template <int R>
void rowsFor(const AvxVnniInput& x, const int8_t* w, const double* scales, const float* bias,
             float* y, int64_t n, int64_t k, int64_t begin, int64_t end) {
    constexpr int C = R <= 2 ? 4 : 2;
    int64_t j = begin;
    for (; j + C <= end; j += C)
        columns<R, C>(x, w, scales, bias, y, n, k, j);
    for (; j < end; ++j)
        columns<R, 1>(x, w, scales, bias, y, n, k, j);
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

void rowsInt8AvxVnni(const AvxVnniInput& x, int rows, const int8_t* w, const double* scales,
                     const float* bias, float* y, int64_t n, int64_t k, int64_t begin,
                     int64_t end) {
    switch (rows) {
    case 1:
        return rowsFor<1>(x, w, scales, bias, y, n, k, begin, end);
    case 2:
        return rowsFor<2>(x, w, scales, bias, y, n, k, begin, end);
    case 3:
        return rowsFor<3>(x, w, scales, bias, y, n, k, begin, end);
    default:
        return rowsFor<4>(x, w, scales, bias, y, n, k, begin, end);
    }
}

} // namespace florence::ops
