// Built with -mavx2 -mfma (engine/ops/CMakeLists.txt): nothing here may run unless
// kernelPathSupported(KernelPath::Avx2) (KernelPath.cpp, built for any x86-64) said yes.
#include "Avx2Kernels.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace florence::ops {

void convTileF32Avx2(const float* a, const float* b, int64_t k, const float* bias, bool accumulate,
                     float* out, int64_t outStride, int rows, int cols) {
    constexpr int R = kConvTileRows;
    __m256 acc[R][2];
    if (!accumulate) {
        const __m256 bias0 = _mm256_loadu_ps(bias), bias1 = _mm256_loadu_ps(bias + 8);
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
            acc[r][0] = bias0;
            acc[r][1] = bias1;
        }
    } else {
        alignas(32) float tile[R][16] = {};
        for (int r = 0; r < rows; ++r)
            std::memcpy(tile[r], out + r * outStride, sizeof(float) * size_t(cols));
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
            acc[r][0] = _mm256_load_ps(tile[r]);
            acc[r][1] = _mm256_load_ps(tile[r] + 8);
        }
    }
    for (int64_t i = 0; i < k; ++i) {
        const __m256 b0 = _mm256_loadu_ps(b + i * 16), b1 = _mm256_loadu_ps(b + i * 16 + 8);
        const float* ai = a + i * R;
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
            const __m256 x = _mm256_broadcast_ss(ai + r);
            acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
        }
    }
    // Stored with constant indices only: a register array indexed by `rows` would be kept in
    // memory, stored at every step of the loop above.
    if (rows == R && cols == 16) {
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
            _mm256_storeu_ps(out + r * outStride, acc[r][0]);
            _mm256_storeu_ps(out + r * outStride + 8, acc[r][1]);
        }
        return;
    }
    alignas(32) float tile[R][16];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
        _mm256_store_ps(tile[r], acc[r][0]);
        _mm256_store_ps(tile[r] + 8, acc[r][1]);
    }
    for (int r = 0; r < rows; ++r)
        std::memcpy(out + r * outStride, tile[r], sizeof(float) * size_t(cols));
}

void residualDepthwise3x3Avx2(const float* x, int64_t h, int64_t w, int64_t c, const float* taps,
                              const float* bias, int64_t y, float* out) {
    // Output row y: out[y][j] = x[y][j] + (bias + the sum, in (ky, kx) order, over the 3 x 3
    // neighbours inside the image of taps[ky * 3 + kx] * x[y + ky - 1][j + kx - 1]), eight
    // channels at a time.
    const int64_t c8 = c / 8 * 8;
    const float* src[9];
    const float* tap[9];
    for (int64_t j = 0; j < w; ++j) {
        int n = 0;
        for (int ky = 0; ky < 3; ++ky) {
            const int64_t iy = y + ky - 1;
            for (int kx = 0; kx < 3; ++kx) {
                const int64_t ix = j + kx - 1;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                    continue;
                src[n] = x + (iy * w + ix) * c;
                tap[n] = taps + (ky * 3 + kx) * c;
                ++n;
            }
        }
        const float* self = x + (y * w + j) * c;
        float* o = out + (y * w + j) * c;
        int64_t ch = 0;
        // 32 channels at a time: four independent chains of FMAs hide their latency (one chain
        // of nine waited on each FMA in turn); each output's sum is still one chain in tap order.
        for (; ch + 32 <= c; ch += 32) {
            __m256 acc[4];
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g)
                acc[g] = _mm256_loadu_ps(bias + ch + 8 * g);
            for (int t = 0; t < n; ++t)
#pragma GCC unroll 4
                for (int g = 0; g < 4; ++g)
                    acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(tap[t] + ch + 8 * g),
                                             _mm256_loadu_ps(src[t] + ch + 8 * g), acc[g]);
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g)
                _mm256_storeu_ps(o + ch + 8 * g,
                                 _mm256_add_ps(_mm256_loadu_ps(self + ch + 8 * g), acc[g]));
        }
        for (; ch < c8; ch += 8) {
            __m256 acc = _mm256_loadu_ps(bias + ch);
            for (int t = 0; t < n; ++t)
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(tap[t] + ch), _mm256_loadu_ps(src[t] + ch),
                                      acc);
            _mm256_storeu_ps(o + ch, _mm256_add_ps(_mm256_loadu_ps(self + ch), acc));
        }
        for (; ch < c; ++ch) {
            float acc = bias[ch];
            for (int t = 0; t < n; ++t)
                acc = std::fma(tap[t][ch], src[t][ch], acc);
            o[ch] = self[ch] + acc;
        }
    }
}

} // namespace florence::ops
