// The int8 GEMM kernel on AVX-VNNI (GemmInt8.h): vpdpbusd on 256-bit registers, four u8 x s8
// products into each 32-bit sum, exact, so activations take all of 0..255. Compiled with -mavx2
// -mfma -mavxvnni.
#include "GemmInt8.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace florence::ops {
namespace {

constexpr float kLevels = 255.f;
constexpr int kTileRows = 6;

inline __m256i dot4(__m256i acc, __m256i a, __m256i b) {
    return _mm256_dpbusd_avx_epi32(acc, a, b);
}

#include "GemmInt8Kernel.inc"

} // namespace

void gemmInt8AvxVnni(const PackedInt8& w, const float* x, int64_t ldx, int64_t rows,
                     const float* bias, float* y, int64_t ldy, bool gelu) {
    gemmRowsThen(gelu, w, x, ldx, rows, bias, y, ldy);
}

} // namespace florence::ops
