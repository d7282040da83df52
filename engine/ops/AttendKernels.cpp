// Built with -mavx512f -mavx512bw -mavx512vl (engine/ops/CMakeLists.txt): nothing here may run
// unless haveAvx512() (KernelPath.cpp, built for any x86-64) said yes.
#include "AttendKernels.h"

#include "Avx512.h"
#include "Prefetch.h"

#include <algorithm>
#include <limits>

namespace florence::ops {

namespace {

// exp(x) to about 2 ulp (Cephes' expf: x = n ln2 + r, a degree-6 polynomial for exp(r), scaled
// by 2^n). Below -104 it gives 0 (or a denormal), as expf does; NaN stays NaN, so a row whose
// every position is masked with -inf gives NaN like LibTorch's softmax.
inline __m512 exp512(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x); // operand order: a NaN x is returned
    x = _mm512_min_ps(_mm512_set1_ps(88.7f), x);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

inline __mmask16 firstN(int64_t n) {
    return static_cast<__mmask16>((1u << n) - 1);
}

// Softmax numerators of sc[0..S) in place (exp(x - max)); returns their sum.
inline float expInPlace(float* sc, int64_t S) {
    const float ninf = -std::numeric_limits<float>::infinity();
    __m512 mx = _mm512_set1_ps(ninf);
    int64_t s = 0;
    for (; s + 16 <= S; s += 16)
        mx = _mm512_max_ps(mx, _mm512_loadu_ps(sc + s));
    if (s < S)
        mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(ninf), firstN(S - s), sc + s));
    const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    __m512 sum = _mm512_setzero_ps();
    for (s = 0; s + 16 <= S; s += 16) {
        const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(sc + s), m));
        _mm512_storeu_ps(sc + s, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (s < S) {
        const __mmask16 t = firstN(S - s);
        const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(t, sc + s), m));
        _mm512_mask_storeu_ps(sc + s, t, e);
        sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(t, e));
    }
    return _mm512_reduce_add_ps(sum);
}

// The scores plus the additive mask (`ms`: its stride; 1 is the contiguous common case).
inline void addMask(float* sc, const float* mask, int64_t ms, int64_t S) {
    if (ms != 1) {
        for (int64_t s = 0; s < S; ++s)
            sc[s] += mask[s * ms];
        return;
    }
    int64_t s = 0;
    for (; s + 16 <= S; s += 16)
        _mm512_storeu_ps(sc + s, _mm512_add_ps(_mm512_loadu_ps(sc + s), _mm512_loadu_ps(mask + s)));
    if (s < S) {
        const __mmask16 t = firstN(S - s);
        _mm512_mask_storeu_ps(
            sc + s, t,
            _mm512_add_ps(_mm512_maskz_loadu_ps(t, sc + s), _mm512_maskz_loadu_ps(t, mask + s)));
    }
}

// d in (16 (C - 1), 16 C]: q, the accumulators of the output, and one row of k or v fit in C
// registers each; the last 16 are loaded masked when d is not a multiple of 16.
template <int C>
void attend(const float* q, const float* k, int64_t ks, const float* v, int64_t vs,
            const float* mask, int64_t ms, int64_t S, int64_t d, float* sc, float* out) {
    prefetchStart(k, ks, S, d);
    prefetchStart(v, vs, S, d);
    const __mmask16 tail = d % 16 ? firstN(d % 16) : static_cast<__mmask16>(0xFFFF);
    auto load = [tail](const float* p, int c) {
        return c == C - 1 ? _mm512_maskz_loadu_ps(tail, p + 16 * c) : _mm512_loadu_ps(p + 16 * c);
    };
    __m512 qv[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c)
        qv[c] = load(q, c);

    // Scores, four keys at a time (four independent sums, reduced together).
    int64_t s = 0;
    for (; s + 4 <= S; s += 4) {
        const float* k0 = k + s * ks;
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < 4; ++r)
                prefetchAhead(k0 + r * ks + 16 * c);
        __m512 a0 = _mm512_mul_ps(load(k0, 0), qv[0]);
        __m512 a1 = _mm512_mul_ps(load(k0 + ks, 0), qv[0]);
        __m512 a2 = _mm512_mul_ps(load(k0 + 2 * ks, 0), qv[0]);
        __m512 a3 = _mm512_mul_ps(load(k0 + 3 * ks, 0), qv[0]);
#pragma GCC unroll 8
        for (int c = 1; c < C; ++c) {
            a0 = _mm512_fmadd_ps(load(k0, c), qv[c], a0);
            a1 = _mm512_fmadd_ps(load(k0 + ks, c), qv[c], a1);
            a2 = _mm512_fmadd_ps(load(k0 + 2 * ks, c), qv[c], a2);
            a3 = _mm512_fmadd_ps(load(k0 + 3 * ks, c), qv[c], a3);
        }
        _mm_storeu_ps(sc + s, sum4(a0, a1, a2, a3));
    }
    for (; s < S; ++s) {
        __m512 a = _mm512_mul_ps(load(k + s * ks, 0), qv[0]);
#pragma GCC unroll 8
        for (int c = 1; c < C; ++c)
            a = _mm512_fmadd_ps(load(k + s * ks, c), qv[c], a);
        sc[s] = _mm512_reduce_add_ps(a);
    }
    if (mask)
        addMask(sc, mask, ms, S);

    const float total = expInPlace(sc, S);

    // Weighted sum of the values, two rows at a time into two sets of accumulators.
    __m512 acc0[C], acc1[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        acc0[c] = _mm512_setzero_ps();
        acc1[c] = _mm512_setzero_ps();
    }
    s = 0;
    for (; s + 2 <= S; s += 2) {
        const __m512 p0 = _mm512_set1_ps(sc[s]);
        const __m512 p1 = _mm512_set1_ps(sc[s + 1]);
        const float* v0 = v + s * vs;
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
            prefetchAhead(v0 + 16 * c);
            prefetchAhead(v0 + vs + 16 * c);
        }
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
            acc0[c] = _mm512_fmadd_ps(p0, load(v0, c), acc0[c]);
            acc1[c] = _mm512_fmadd_ps(p1, load(v0 + vs, c), acc1[c]);
        }
    }
    if (s < S) {
        const __m512 p0 = _mm512_set1_ps(sc[s]);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c)
            acc0[c] = _mm512_fmadd_ps(p0, load(v + s * vs, c), acc0[c]);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / total);
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        const __m512 o = _mm512_mul_ps(_mm512_add_ps(acc0[c], acc1[c]), inv);
        if (c == C - 1)
            _mm512_mask_storeu_ps(out + 16 * c, tail, o);
        else
            _mm512_storeu_ps(out + 16 * c, o);
    }
}

} // namespace

void attendOneF32Avx512(const float* q, const float* k, int64_t kStride, const float* v,
                        int64_t vStride, const float* mask, int64_t maskStride, int64_t S,
                        int64_t d, float* scratch, float* out) {
    switch ((d + 15) / 16) {
    case 1:
        return attend<1>(q, k, kStride, v, vStride, mask, maskStride, S, d, scratch, out);
    case 2:
        return attend<2>(q, k, kStride, v, vStride, mask, maskStride, S, d, scratch, out);
    case 3:
        return attend<3>(q, k, kStride, v, vStride, mask, maskStride, S, d, scratch, out);
    case 4:
        return attend<4>(q, k, kStride, v, vStride, mask, maskStride, S, d, scratch, out);
    case 5:
        return attend<5>(q, k, kStride, v, vStride, mask, maskStride, S, d, scratch, out);
    case 6:
        return attend<6>(q, k, kStride, v, vStride, mask, maskStride, S, d, scratch, out);
    case 7:
        return attend<7>(q, k, kStride, v, vStride, mask, maskStride, S, d, scratch, out);
    default:
        return attend<8>(q, k, kStride, v, vStride, mask, maskStride, S, d, scratch, out);
    }
}

double sumExpAvx512(const float* x, int64_t n, float shift) {
    const __m512 m = _mm512_set1_ps(shift);
    const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    double total = 0;
    for (int64_t b = 0; b < n; b += kSumExpBlock) {
        const int64_t end = std::min(n, b + kSumExpBlock);
        __m512 sum = _mm512_setzero_ps();
        for (int64_t i = b; i < end; i += 16) {
            const __mmask16 t = end - i >= 16 ? __mmask16(0xffff) : firstN(end - i);
            const __m512 v = _mm512_maskz_loadu_ps(t, x + i);
            // Only finite (or NaN) entries count: exp512 would give -inf a denormal, not 0.
            const __mmask16 use = _mm512_mask_cmp_ps_mask(t, v, ninf, _CMP_NEQ_UQ);
            sum = _mm512_mask_add_ps(sum, use, sum, exp512(_mm512_sub_ps(v, m)));
        }
        total += double(_mm512_reduce_add_ps(sum));
    }
    return total;
}

} // namespace florence::ops
