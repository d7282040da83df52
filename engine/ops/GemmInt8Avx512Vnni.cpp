// The int8 GEMM kernel on AVX-512 VNNI (GemmInt8.h): vpdpbusd on 512-bit registers, so one
// register holds a whole panel's 16 columns of a group of four k (the packed layout's 64 bytes)
// and each broadcast row of activations meets two panels at once: 8 rows x 32 columns of 32-bit
// sums in 16 of the 32 registers. Twice the products per instruction of the 256-bit AVX-VNNI
// kernel. The rows are quantized as there (GemmInt8Kernel.inc, 0..255). Compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni.
#include "Avx512.h"
#include "GemmInt8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace florence::ops {
namespace {

// What GemmInt8Kernel.inc asks for; only its quantizeRow and gelu are used here.
constexpr float kLevels = 255.f;
constexpr int kTileRows = 6;

inline __m256i dot4(__m256i acc, __m256i a, __m256i b) {
    return _mm256_dpbusd_epi32(acc, a, b);
}

#include "GemmInt8Kernel.inc"

// Rows to a tile (one accumulator per row and panel) and rows quantized at a time.
constexpr int kRows = 8;
constexpr int64_t kBlock = 12 * kRows;

struct Tile {
    __m512i sums[kRows][2]; // row, panel
};

inline __m512i broadcast4x16(const uint8_t* a) {
    int32_t four;
    std::memcpy(&four, a, 4);
    return _mm512_set1_epi32(four);
}

// R rows (1 to 8) of u8 a against P panels (1 or 2) starting at `panel`, the second one
// `stride` bytes after it. The sums are named variables so that they stay in registers (see
// GemmInt8Kernel.inc's tile).
template <int R, int P>
inline void tile(const uint8_t* a, int64_t lda, const int8_t* panel, int64_t stride, int64_t groups,
                 Tile& out) {
    static_assert(R >= 1 && R <= kRows && (P == 1 || P == 2));
    __m512i s00 = _mm512_setzero_si512(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00,
            s30 = s00, s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00, s60 = s00, s61 = s00,
            s70 = s00, s71 = s00;
    for (int64_t g = 0; g < groups; ++g) {
        const __m512i b0 = _mm512_load_si512(panel + 64 * g);
        const __m512i b1 = P > 1 ? _mm512_load_si512(panel + stride + 64 * g) : b0;
        // Row i's four bytes of this group against both panels.
#define FLORENCE_ROW(i)                                                                            \
    if constexpr (R > i) {                                                                         \
        const __m512i x = broadcast4x16(a + i * lda + 4 * g);                                      \
        s##i##0 = _mm512_dpbusd_epi32(s##i##0, x, b0);                                             \
        if constexpr (P > 1)                                                                       \
            s##i##1 = _mm512_dpbusd_epi32(s##i##1, x, b1);                                         \
    }
        FLORENCE_ROW(0)
        FLORENCE_ROW(1)
        FLORENCE_ROW(2)
        FLORENCE_ROW(3)
        FLORENCE_ROW(4)
        FLORENCE_ROW(5)
        FLORENCE_ROW(6)
        FLORENCE_ROW(7)
#undef FLORENCE_ROW
    }
    const __m512i all[kRows][2] = {{s00, s01}, {s10, s11}, {s20, s21}, {s30, s31},
                                   {s40, s41}, {s50, s51}, {s60, s61}, {s70, s71}};
    std::memcpy(out.sums, all, sizeof all);
}

inline __m512 gelu16(__m512 v) {
    const __m256 lo = gelu(_mm512_castps512_ps256(v));
    const __m256 hi = gelu(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}

// Writes the tile's R rows of panels p.. p + P - 1 to y as GemmInt8Kernel.inc's store does:
// the zero points' share taken out, scaled, bias added, then GELU with Gelu; columns at and past
// n are not written.
template <int R, int P, bool Gelu>
inline void store(const Tile& t, const PackedInt8& w, int64_t p, const float* rowScale,
                  const int32_t* rowZero, const float* bias, float* y, int64_t ldy) {
    for (int j = 0; j < P; ++j) {
        const int64_t c = (p + j) * PackedInt8::kPanel;
        if (c >= w.n)
            break;
        const __mmask16 mask = __mmask16((1u << std::min<int64_t>(16, w.n - c)) - 1);
        // columnSums and scales have a whole panel's entries; bias has n.
        const __m512i sums = _mm512_loadu_si512(w.columnSums.get() + c);
        const __m512 scales = _mm512_loadu_ps(w.scales.get() + c);
        const __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias + c) : _mm512_setzero_ps();
        for (int r = 0; r < R; ++r) {
            const __m512i exact = _mm512_sub_epi32(
                t.sums[r][j], _mm512_mullo_epi32(_mm512_set1_epi32(rowZero[r]), sums));
            __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact),
                                       _mm512_mul_ps(_mm512_set1_ps(rowScale[r]), scales), b);
            if constexpr (Gelu)
                v = gelu16(v);
            _mm512_mask_storeu_ps(y + r * ldy + c, mask, v);
        }
    }
}

template <int R, int P, bool Gelu>
inline void tileAndStore(const uint8_t* a, int64_t lda, const PackedInt8& w, int64_t p,
                         const float* rowScale, const int32_t* rowZero, const float* bias, float* y,
                         int64_t ldy) {
    const int64_t kp = w.kPadded, stride = kp * PackedInt8::kPanel;
    Tile t;
    tile<R, P>(a, lda, w.weights.get() + p * stride, stride, kp / 4, t);
    store<R, P, Gelu>(t, w, p, rowScale, rowZero, bias, y, ldy);
}

template <int P, bool Gelu>
inline void rowsOfPanels(int64_t rows, const uint8_t* a, int64_t lda, const PackedInt8& w,
                         int64_t p, const float* s, const int32_t* z, const float* bias, float* y,
                         int64_t ldy) {
    switch (rows) {
    case 8:
        return tileAndStore<8, P, Gelu>(a, lda, w, p, s, z, bias, y, ldy);
    case 7:
        return tileAndStore<7, P, Gelu>(a, lda, w, p, s, z, bias, y, ldy);
    case 6:
        return tileAndStore<6, P, Gelu>(a, lda, w, p, s, z, bias, y, ldy);
    case 5:
        return tileAndStore<5, P, Gelu>(a, lda, w, p, s, z, bias, y, ldy);
    case 4:
        return tileAndStore<4, P, Gelu>(a, lda, w, p, s, z, bias, y, ldy);
    case 3:
        return tileAndStore<3, P, Gelu>(a, lda, w, p, s, z, bias, y, ldy);
    case 2:
        return tileAndStore<2, P, Gelu>(a, lda, w, p, s, z, bias, y, ldy);
    default:
        return tileAndStore<1, P, Gelu>(a, lda, w, p, s, z, bias, y, ldy);
    }
}

template <bool Gelu>
void gemmRows512(const PackedInt8& w, const float* x, int64_t ldx, int64_t rows, const float* bias,
                 float* y, int64_t ldy) {
    const int64_t kp = w.kPadded;
    uint8_t* const block = int8RowScratch(size_t(kBlock * kp));
    float scale[kBlock];
    int32_t zero[kBlock];
    for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
        const int64_t m = std::min(kBlock, rows - r0);
        for (int64_t r = 0; r < m; ++r)
            quantizeRow(x + (r0 + r) * ldx, w.k, kp, block + r * kp, scale[r], zero[r]);
        for (int64_t p = 0; p < w.panels; p += 2) {
            const bool two = p + 1 < w.panels;
            for (int64_t t = 0; t < m; t += kRows) {
                const int64_t n = std::min<int64_t>(kRows, m - t);
                const uint8_t* a = block + t * kp;
                float* out = y + (r0 + t) * ldy;
                if (two)
                    rowsOfPanels<2, Gelu>(n, a, kp, w, p, scale + t, zero + t, bias, out, ldy);
                else
                    rowsOfPanels<1, Gelu>(n, a, kp, w, p, scale + t, zero + t, bias, out, ldy);
            }
        }
    }
}

} // namespace

void gemmInt8Avx512Vnni(const PackedInt8& w, const float* x, int64_t ldx, int64_t rows,
                        const float* bias, float* y, int64_t ldy, bool gelu) {
    if (gelu)
        gemmRows512<true>(w, x, ldx, rows, bias, y, ldy);
    else
        gemmRows512<false>(w, x, ldx, rows, bias, y, ldy);
}

} // namespace florence::ops
