// The int8 GEMM kernel on AVX2 (GemmInt8.h): vpmaddubsw into 16-bit pair sums, vpmaddwd against
// ones into 32 bits, activations quantized to 0..127 so that no pair sum saturates
// (127 * 128 * 2 = 32512 < 32767). Compiled with -mavx2 -mfma.
#include "GemmInt8.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace florence::ops {
namespace {

constexpr float kLevels = 127.f;
// vpmaddubsw and vpmaddwd need a register for the pairs and one of ones beside the sums.
constexpr int kTileRows = 4;

inline __m256i dot4(__m256i acc, __m256i a, __m256i b) {
    const __m256i pairs = _mm256_maddubs_epi16(a, b);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

#include "GemmInt8Kernel.inc"

} // namespace

void gemmInt8Avx2(const PackedInt8& w, const float* x, int64_t ldx, int64_t rows, const float* bias,
                  float* y, int64_t ldy, bool gelu) {
    gemmRowsThen(gelu, w, x, ldx, rows, bias, y, ldy);
}

} // namespace florence::ops
