#pragma once
// exp on eight floats with AVX2 and FMA, for the files built with -mavx2 -mfma (and more): the
// attention kernels' softmax (AttendKernelsAvx2.cpp). Include it only from such files. The
// function is in an anonymous namespace, so each file keeps its own copy, compiled for its own
// instructions: the linker can never keep the copy of a file built for more than another file's
// CPU check allows.
#include <immintrin.h>

namespace florence::ops {
namespace {

// exp(x) to about 2 ulp, as exp512 (AttendKernels.cpp): x = n ln2 + r, Cephes' degree-6
// polynomial for exp(r), times 2^n built in the exponent bits. Without vscalefps, 2^n must be a
// normal float, so x is clamped at -87.3 and anything below gives 0 (a denormal where expf gives
// one, which no softmax sum notices); NaN stays NaN, so a row whose every position is masked
// with -inf gives NaN like LibTorch's softmax.
inline __m256 exp256(__m256 x) {
    const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ); // false for NaN
    x = _mm256_max_ps(_mm256_set1_ps(-87.3f), x); // operand order: a NaN x is returned
    x = _mm256_min_ps(_mm256_set1_ps(88.3f), x);  // softmax passes x <= 0 only
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    // n in [-126, 127]: 2^n is a normal float.
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(tiny, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

} // namespace
} // namespace florence::ops
