// Built with -mavx2 -mfma (engine/ops/CMakeLists.txt): nothing here may run unless
// kernelPathSupported(KernelPath::Avx2) (KernelPath.cpp, built for any x86-64) said yes.
#include "AttendKernels.h"
#include "Avx2Exp.h"
#include "Avx2Kernels.h"
#include "Prefetch.h"

#include <immintrin.h>

#include <algorithm>
#include <limits>

namespace florence::ops {

namespace {

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// The first n (0 to 8) lanes, as a mask for vmaskmovps.
inline __m256i firstN(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Softmax numerators of sc[0..S) in place (exp(x - max)); returns their sum.
inline float expInPlace(float* sc, int64_t S) {
    const float ninf = -std::numeric_limits<float>::infinity();
    __m256 mx = _mm256_set1_ps(ninf);
    int64_t s = 0;
    for (; s + 8 <= S; s += 8)
        mx = _mm256_max_ps(mx, _mm256_loadu_ps(sc + s));
    float largest = hmax(mx);
    for (int64_t t = s; t < S; ++t)
        largest = std::max(largest, sc[t]);
    const __m256 m = _mm256_set1_ps(largest);
    __m256 sum = _mm256_setzero_ps();
    for (s = 0; s + 8 <= S; s += 8) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(sc + s), m));
        _mm256_storeu_ps(sc + s, e);
        sum = _mm256_add_ps(sum, e);
    }
    if (s < S) {
        const __m256i t = firstN(S - s);
        const __m256 e = exp256(_mm256_sub_ps(_mm256_maskload_ps(sc + s, t), m));
        _mm256_maskstore_ps(sc + s, t, e);
        sum = _mm256_add_ps(sum, _mm256_and_ps(e, _mm256_castsi256_ps(t)));
    }
    return hsum(sum);
}

// The scores plus the additive mask (`ms`: its stride; 1 is the contiguous common case).
inline void addMask(float* sc, const float* mask, int64_t ms, int64_t S) {
    if (ms != 1) {
        for (int64_t s = 0; s < S; ++s)
            sc[s] += mask[s * ms];
        return;
    }
    int64_t s = 0;
    for (; s + 8 <= S; s += 8)
        _mm256_storeu_ps(sc + s, _mm256_add_ps(_mm256_loadu_ps(sc + s), _mm256_loadu_ps(mask + s)));
    for (; s < S; ++s)
        sc[s] += mask[s];
}

// Block c (8 floats) of a row of d: the last one, when d is not a multiple of 8, loaded masked.
struct Blocks {
    int64_t full; // whole blocks
    __m256i tail; // lanes of the partial block
    bool hasTail;
    explicit Blocks(int64_t d) : full(d / 8), tail(firstN(d % 8)), hasTail(d % 8 != 0) {}
};

// sc[s] = q . k_s, four keys at a time (four independent sums, reduced together); q is read
// from the first level cache, where it stays.
inline void scores(const float* q, const float* k, int64_t ks, int64_t S, int64_t d, float* sc) {
    const Blocks b(d);
    int64_t s = 0;
    for (; s + 4 <= S; s += 4) {
        const float* k0 = k + s * ks;
        for (int r = 0; r < 4; ++r)
            for (int64_t c = 0; c < d; c += 16)
                prefetchAhead(k0 + r * ks + c);
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t c = 0; c < b.full; ++c) {
            const __m256 qv = _mm256_loadu_ps(q + 8 * c);
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(k0 + 8 * c), qv, a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(k0 + ks + 8 * c), qv, a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(k0 + 2 * ks + 8 * c), qv, a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(k0 + 3 * ks + 8 * c), qv, a3);
        }
        if (b.hasTail) {
            const int64_t o = 8 * b.full;
            const __m256 qv = _mm256_maskload_ps(q + o, b.tail);
            a0 = _mm256_fmadd_ps(_mm256_maskload_ps(k0 + o, b.tail), qv, a0);
            a1 = _mm256_fmadd_ps(_mm256_maskload_ps(k0 + ks + o, b.tail), qv, a1);
            a2 = _mm256_fmadd_ps(_mm256_maskload_ps(k0 + 2 * ks + o, b.tail), qv, a2);
            a3 = _mm256_fmadd_ps(_mm256_maskload_ps(k0 + 3 * ks + o, b.tail), qv, a3);
        }
        sc[s] = hsum(a0);
        sc[s + 1] = hsum(a1);
        sc[s + 2] = hsum(a2);
        sc[s + 3] = hsum(a3);
    }
    for (; s < S; ++s) {
        const float* kr = k + s * ks;
        __m256 a = _mm256_setzero_ps();
        for (int64_t c = 0; c < b.full; ++c)
            a = _mm256_fmadd_ps(_mm256_loadu_ps(kr + 8 * c), _mm256_loadu_ps(q + 8 * c), a);
        if (b.hasTail)
            a = _mm256_fmadd_ps(_mm256_maskload_ps(kr + 8 * b.full, b.tail),
                                _mm256_maskload_ps(q + 8 * b.full, b.tail), a);
        sc[s] = hsum(a);
    }
}

// out[0..width) = inv * sum over s of p[s] v_s[0..width), for a panel of a row of v of C blocks
// of 8 (width in (8 (C - 1), 8 C]): its C accumulators stay in registers across all S rows.
template <int C>
void weightedPanel(const float* v, int64_t vs, const float* p, int64_t S, int64_t width, float inv,
                   float* out) {
    const __m256i tail = firstN(width - 8 * (C - 1));
    auto load = [tail](const float* row, int c) {
        return c == C - 1 ? _mm256_maskload_ps(row + 8 * c, tail) : _mm256_loadu_ps(row + 8 * c);
    };
    __m256 acc[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c)
        acc[c] = _mm256_setzero_ps();
    for (int64_t s = 0; s < S; ++s) {
        const __m256 ps = _mm256_set1_ps(p[s]);
        const float* row = v + s * vs;
#pragma GCC unroll 8
        for (int c = 0; c < C; c += 2)
            prefetchAhead(row + 8 * c);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c)
            acc[c] = _mm256_fmadd_ps(ps, load(row, c), acc[c]);
    }
    const __m256 scale = _mm256_set1_ps(inv);
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        const __m256 o = _mm256_mul_ps(acc[c], scale);
        if (c == C - 1)
            _mm256_maskstore_ps(out + 8 * c, tail, o);
        else
            _mm256_storeu_ps(out + 8 * c, o);
    }
}

// The values weighted by p, in panels of up to 64 floats (eight registers of accumulators).
void weightedValues(const float* v, int64_t vs, const float* p, int64_t S, int64_t d, float inv,
                    float* out) {
    for (int64_t o = 0; o < d; o += 64) {
        const int64_t width = std::min<int64_t>(64, d - o);
        switch ((width + 7) / 8) {
        case 1:
            weightedPanel<1>(v + o, vs, p, S, width, inv, out + o);
            break;
        case 2:
            weightedPanel<2>(v + o, vs, p, S, width, inv, out + o);
            break;
        case 3:
            weightedPanel<3>(v + o, vs, p, S, width, inv, out + o);
            break;
        case 4:
            weightedPanel<4>(v + o, vs, p, S, width, inv, out + o);
            break;
        case 5:
            weightedPanel<5>(v + o, vs, p, S, width, inv, out + o);
            break;
        case 6:
            weightedPanel<6>(v + o, vs, p, S, width, inv, out + o);
            break;
        case 7:
            weightedPanel<7>(v + o, vs, p, S, width, inv, out + o);
            break;
        default:
            weightedPanel<8>(v + o, vs, p, S, width, inv, out + o);
            break;
        }
    }
}

// Block attention (attendBlockF32Avx2). The scores of two query rows against keys jb..jb+8NV
// of Kt (the keys transposed, [d][nPad]): 2 NV accumulators, each key vector loaded once for
// both rows. s1 may equal s0 (one row left: q1 = q0, the same sums stored twice).
template <int NV>
inline void windowScores(const float* q0, const float* q1, const float* kt, int64_t nPad,
                         int64_t d, int64_t jb, float scale, float* s0, float* s1) {
    __m256 a0[NV], a1[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
        a0[v] = a1[v] = _mm256_setzero_ps();
    for (int64_t e = 0; e < d; ++e) {
        const __m256 b0 = _mm256_set1_ps(q0[e]);
        const __m256 b1 = _mm256_set1_ps(q1[e]);
        const float* row = kt + e * nPad + jb;
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
            const __m256 kv = _mm256_loadu_ps(row + 8 * v);
            a0[v] = _mm256_fmadd_ps(b0, kv, a0[v]);
            a1[v] = _mm256_fmadd_ps(b1, kv, a1[v]);
        }
    }
    const __m256 sc = _mm256_set1_ps(scale);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
        _mm256_storeu_ps(s0 + jb + 8 * v, _mm256_mul_ps(a0[v], sc));
        _mm256_storeu_ps(s1 + jb + 8 * v, _mm256_mul_ps(a1[v], sc));
    }
}

void windowScoreRows(const float* q0, const float* q1, const float* kt, int64_t nPad, int64_t d,
                     float scale, float* s0, float* s1) {
    int64_t jb = 0;
    for (; jb + 48 <= nPad; jb += 48)
        windowScores<6>(q0, q1, kt, nPad, d, jb, scale, s0, s1);
    switch ((nPad - jb) / 8) {
    case 5:
        return windowScores<5>(q0, q1, kt, nPad, d, jb, scale, s0, s1);
    case 4:
        return windowScores<4>(q0, q1, kt, nPad, d, jb, scale, s0, s1);
    case 3:
        return windowScores<3>(q0, q1, kt, nPad, d, jb, scale, s0, s1);
    case 2:
        return windowScores<2>(q0, q1, kt, nPad, d, jb, scale, s0, s1);
    case 1:
        return windowScores<1>(q0, q1, kt, nPad, d, jb, scale, s0, s1);
    default:
        return;
    }
}

// Rows r < R of out (outStride apart), columns 8 c < 8 W: inv[r] (1 where inv is null) * the
// sum over j < n of p[r][j] v_j (p rows pStride apart, v rows vs apart). R x W accumulators (at
// most 6 x 2, with the two value vectors and a broadcast 15 of the 16 registers): per key 12 FMAs
// against two loads of v and six broadcasts, where one row at a time read all of V for every query
// row.
template <int R, int W>
inline void valuesTile(const float* p, int64_t pStride, const float* v, int64_t vs, int64_t n,
                       const float* inv, float* out, int64_t outStride) {
    static_assert(R >= 1 && R <= 6 && (W == 1 || W == 2));
    __m256 acc[R][W];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int c = 0; c < W; ++c)
            acc[r][c] = _mm256_setzero_ps();
    for (int64_t j = 0; j < n; ++j) {
        const float* row = v + j * vs;
        __m256 vv[W];
#pragma GCC unroll 2
        for (int c = 0; c < W; ++c)
            vv[c] = _mm256_loadu_ps(row + 8 * c);
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
            const __m256 b = _mm256_broadcast_ss(p + r * pStride + j);
#pragma GCC unroll 2
            for (int c = 0; c < W; ++c)
                acc[r][c] = _mm256_fmadd_ps(b, vv[c], acc[r][c]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
        const __m256 scale = _mm256_set1_ps(inv ? inv[r] : 1.0f);
#pragma GCC unroll 2
        for (int c = 0; c < W; ++c)
            _mm256_storeu_ps(out + r * outStride + 8 * c, _mm256_mul_ps(acc[r][c], scale));
    }
}

// valuesTile over a block's rows (six at a time), for the W vectors of columns v and out start at.
template <int W>
void valuesColumns(const float* p, int64_t pStride, const float* v, int64_t vs, int64_t n,
                   int64_t rows, const float* inv, float* out, int64_t outStride) {
    auto invAt = [inv](int64_t i) { return inv ? inv + i : nullptr; };
    int64_t i = 0;
    for (; i + 6 <= rows; i += 6)
        valuesTile<6, W>(p + i * pStride, pStride, v, vs, n, invAt(i), out + i * outStride,
                         outStride);
    const float* pi = p + i * pStride;
    float* oi = out + i * outStride;
    switch (rows - i) {
    case 5:
        return valuesTile<5, W>(pi, pStride, v, vs, n, invAt(i), oi, outStride);
    case 4:
        return valuesTile<4, W>(pi, pStride, v, vs, n, invAt(i), oi, outStride);
    case 3:
        return valuesTile<3, W>(pi, pStride, v, vs, n, invAt(i), oi, outStride);
    case 2:
        return valuesTile<2, W>(pi, pStride, v, vs, n, invAt(i), oi, outStride);
    case 1:
        return valuesTile<1, W>(pi, pStride, v, vs, n, invAt(i), oi, outStride);
    default:
        return;
    }
}

// Channel attention (channelGramAvx2): adds to rows r < R of the Gram matrix s (rows d apart),
// columns 8 w < 8 W, the products over `rows` rows of q's columns r (q points at the tile's
// first) with k's columns (k points at the tile's first), q and k rows d apart. R x W
// accumulators (at most 6 x 2, with the two k vectors and a broadcast 15 of the 16 registers, as
// valuesTile): per row 12 FMAs against two loads of k and six broadcasts of q.
template <int R, int W>
inline void gramTile(const float* q, const float* k, int64_t d, int64_t rows, float* s) {
    static_assert(R >= 1 && R <= 6 && (W == 1 || W == 2));
    __m256 acc[R][W];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int w = 0; w < W; ++w)
            acc[r][w] = _mm256_loadu_ps(s + r * d + 8 * w);
    for (int64_t t = 0; t < rows; ++t) {
        __m256 kv[W];
#pragma GCC unroll 2
        for (int w = 0; w < W; ++w)
            kv[w] = _mm256_load_ps(k + t * d + 8 * w);
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
            const __m256 b = _mm256_broadcast_ss(q + t * d + r);
#pragma GCC unroll 2
            for (int w = 0; w < W; ++w)
                acc[r][w] = _mm256_fmadd_ps(b, kv[w], acc[r][w]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int w = 0; w < W; ++w)
            _mm256_storeu_ps(s + r * d + 8 * w, acc[r][w]);
}

// gramTile over all d rows of s (six at a time; d, a multiple of 8, leaves 0, 2 or 4) for the W
// vectors of columns k and s start at.
template <int W>
void gramColumns(const float* q, const float* k, int64_t d, int64_t rows, float* s) {
    int64_t i = 0;
    for (; i + 6 <= d; i += 6)
        gramTile<6, W>(q + i, k, d, rows, s + i * d);
    if (d - i == 4)
        gramTile<4, W>(q + i, k, d, rows, s + i * d);
    else if (d - i == 2)
        gramTile<2, W>(q + i, k, d, rows, s + i * d);
}

// Rows at a time that channelGramAvx2 takes through every group: each group's q and k columns
// of them copied side by side (64 rows of a 32-channel group's q and k are 16 KB, then read from
// the first level cache d / 6 times), the rows' other groups still in the second level cache when
// their turn comes. In place, rows 6 KB apart (base size, stage 2) fell on a few cache sets and
// came from the second level cache each time.
constexpr int64_t kGramRows = 64;

} // namespace

void channelGramAvx2(const float* q, const float* k, int64_t stride, int64_t rows, int64_t d,
                     int64_t groups, float* s) {
    std::fill(s, s + groups * d * d, 0.0f);
    alignas(32) float qb[kGramRows * kBlockMaxDim];
    alignas(32) float kb[kGramRows * kBlockMaxDim];
    for (int64_t t0 = 0; t0 < rows; t0 += kGramRows) {
        const int64_t n = std::min(kGramRows, rows - t0);
        for (int64_t g = 0; g < groups; ++g) {
            const bool ahead = t0 + 2 * kGramRows <= rows;
            for (int64_t t = 0; t < n; ++t)
                for (int64_t e = 0; e < d; e += 8) {
                    const int64_t from = (t0 + t) * stride + g * d + e;
                    // The same columns of the next rows, so that their lines are on their way
                    // while these are multiplied.
                    if (ahead && e % 16 == 0) {
                        _mm_prefetch(reinterpret_cast<const char*>(q + from + kGramRows * stride),
                                     _MM_HINT_T0);
                        _mm_prefetch(reinterpret_cast<const char*>(k + from + kGramRows * stride),
                                     _MM_HINT_T0);
                    }
                    _mm256_store_ps(qb + t * d + e, _mm256_loadu_ps(q + from));
                    _mm256_store_ps(kb + t * d + e, _mm256_loadu_ps(k + from));
                }
            float* sg = s + g * d * d;
            int64_t c = 0;
            for (; c + 16 <= d; c += 16)
                gramColumns<2>(qb, kb + c, d, n, sg + c);
            if (c < d)
                gramColumns<1>(qb, kb + c, d, n, sg + c);
        }
    }
}

void channelMixingAvx2(const float* s, int64_t d, float scale, float* mix) {
    float row[kBlockMaxDim];
    for (int64_t i = 0; i < d; ++i) {
        for (int64_t j = 0; j < d; ++j)
            row[j] = scale * s[i * d + j];
        const float inv = 1.0f / expInPlace(row, d);
        for (int64_t j = 0; j < d; ++j)
            mix[j * d + i] = row[j] * inv;
    }
}

void channelMixAvx2(const float* v, int64_t vStride, int64_t rows, const float* mix, int64_t d,
                    int64_t groups, float* out, int64_t outStride) {
    for (int64_t g = 0; g < groups; ++g) {
        const float* vg = v + g * d;
        const float* mg = mix + g * d * d;
        float* og = out + g * d;
        int64_t c = 0;
        for (; c + 16 <= d; c += 16)
            valuesColumns<2>(vg, vStride, mg + c, d, d, rows, nullptr, og + c, outStride);
        if (c < d)
            valuesColumns<1>(vg, vStride, mg + c, d, d, rows, nullptr, og + c, outStride);
    }
}

void attendBlockF32Avx2(const BlockAttention& a, float* scratch) {
    const int64_t n = a.keys, d = a.dim, nPad = (n + 7) / 8 * 8;
    float* kt = scratch;                // [d][nPad], the keys transposed, zero past n
    float* block = scratch + d * nPad;  // [kBlockRows][nPad], scores then softmax numerators
    for (int64_t e = 0; e < d; ++e) {
        float* row = kt + e * nPad;
        for (int64_t j = 0; j < n; ++j)
            row[j] = a.k[j * a.kStride + e];
        std::fill(row + n, row + nPad, 0.0f);
    }
    float inv[kBlockRows];
    for (int64_t i0 = 0; i0 < a.rows; i0 += kBlockRows) {
        const int64_t rows = std::min(kBlockRows, a.rows - i0);
        for (int64_t i = 0; i < rows; i += 2) {
            const bool two = i + 1 < rows;
            const float* q0 = a.q + (i0 + i) * a.qStride;
            float* s0 = block + i * nPad;
            windowScoreRows(q0, two ? q0 + a.qStride : q0, kt, nPad, d, a.scale, s0,
                            two ? s0 + nPad : s0);
        }
        // Each row's numerators stay unnormalized: the values' sums are scaled as they are
        // stored, which saves a pass over the scores.
        for (int64_t i = 0; i < rows; ++i) {
            float* p = block + i * nPad;
            if (a.mask)
                addMask(p, a.mask + (i0 + i) * a.maskRowStride, a.maskKeyStride, n);
            inv[i] = 1.0f / expInPlace(p, n);
        }
        float* out = a.out + i0 * a.outStride;
        int64_t c = 0;
        for (; c + 16 <= d; c += 16)
            valuesColumns<2>(block, nPad, a.v + c, a.vStride, n, rows, inv, out + c, a.outStride);
        if (c < d)
            valuesColumns<1>(block, nPad, a.v + c, a.vStride, n, rows, inv, out + c, a.outStride);
    }
}

void attendOneF32Avx2(const float* q, const float* k, int64_t kStride, const float* v,
                      int64_t vStride, const float* mask, int64_t maskStride, int64_t S, int64_t d,
                      float* scratch, float* out) {
    prefetchStart(k, kStride, S, d);
    prefetchStart(v, vStride, S, d);
    scores(q, k, kStride, S, d, scratch);
    if (mask)
        addMask(scratch, mask, maskStride, S);
    const float total = expInPlace(scratch, S);
    weightedValues(v, vStride, scratch, S, d, 1.0f / total, out);
}

double sumExpAvx2(const float* x, int64_t n, float shift) {
    const __m256 m = _mm256_set1_ps(shift);
    double total = 0;
    for (int64_t b = 0; b < n; b += kSumExpBlock) {
        const int64_t end = std::min(n, b + kSumExpBlock);
        __m256 sum = _mm256_setzero_ps();
        int64_t i = b;
        // exp256 gives -inf exactly 0.
        for (; i + 8 <= end; i += 8)
            sum = _mm256_add_ps(sum, exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), m)));
        if (i < end) {
            const __m256i t = firstN(end - i);
            const __m256 e = exp256(_mm256_sub_ps(_mm256_maskload_ps(x + i, t), m));
            sum = _mm256_add_ps(sum, _mm256_and_ps(e, _mm256_castsi256_ps(t)));
        }
        total += double(hsum(sum));
    }
    return total;
}

} // namespace florence::ops
