// Shared by the AVX-512 kernel files (RowKernels.cpp, AttendKernels.cpp, GemmInt8Avx512Vnni.cpp),
// which alone are built with -mavx512f -mavx512bw -mavx512vl (engine/ops/CMakeLists.txt): include
// it nowhere else.
#pragma once

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own placeholder values
// (_mm512_undefined_*; GCC bug 105593), wherever the intrinsics are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace florence::ops {

// The four sums of a, b, c, d, in that order.
inline __m128 sum4(__m512 a, __m512 b, __m512 c, __m512 d) {
    auto half = [](__m512 v) {
        return _mm256_add_ps(_mm512_castps512_ps256(v),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    };
    const __m256 ab = _mm256_hadd_ps(half(a), half(b));
    const __m256 cd = _mm256_hadd_ps(half(c), half(d));
    const __m256 abcd = _mm256_hadd_ps(ab, cd);
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

} // namespace florence::ops
