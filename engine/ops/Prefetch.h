#pragma once
// The decoding step's kernels ask for their weights kPrefetchAhead bytes ahead of their loads,
// one request per 64 bytes they read (per 32 in the AVX2 int8 kernels, whose loop takes 32:
// the second request finds the line on its way, which costs next to nothing). Each product's
// weights are one sequential stream (RowKernels.cpp), yet the hardware prefetcher alone fell
// behind it on a Zen 5 host: with AVX-512 a base int8 step took 8.7 ms where it takes 3.3-3.8 ms
// asked ahead (likely its masked loads, which the int8 VNNI kernel takes); held to AVX2, one
// row's int8 products 2.33 -> 2.07 ms and three rows' 3.71 -> 2.79, float32 three rows' 10.4 ->
// 8.1 (two threads, a base decoder step's products, alternated). 2048 to 16384 bytes ahead did
// as well as 4096. The one-query attention asks for its keys and values the same way, and for
// the first kPrefetchAhead bytes of both as a head begins (prefetchStart): a base step's six
// self- and cross-attentions over 590 positions, 24 MB, 1.0 -> 0.74 ms held to AVX2 and 0.70 ->
// 0.69 with AVX-512 (two threads, 8 steps' worth of keys and values cycled past the L3, medians
// of 25, four rounds alternated).
//
//     prefetchAhead(wj + i); // before loading wj[i .. i + 64)
//
// In an anonymous namespace, as RowScale.h: each file keeps its own copy, compiled for its own
// instructions.
#include <cstdint>

namespace florence::ops {
namespace {

constexpr int kPrefetchAhead = 4096;

// The address is computed as an integer: kPrefetchAhead past the last weights lies past the end
// of their buffer, where a pointer may not point, and a prefetch there never faults.
// GCC's builtin (prefetcht0 here) rather than _mm_prefetch: <immintrin.h> must come after the
// AVX-512 files' own diagnostic settings (Avx512.h).
inline void prefetchAhead(const void* p) {
    __builtin_prefetch(
        reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + kPrefetchAhead), 0, 3);
}

// The first kPrefetchAhead bytes of rows [0, S) of d floats, `stride` apart: what prefetchAhead
// does not ask for at the start of a stream. A stride of 0 (one row seen S times) asks for one.
inline void prefetchStart(const float* p, int64_t stride, int64_t S, int64_t d) {
    const int64_t rowBytes = stride * int64_t(sizeof(float));
    const int64_t rows = rowBytes > 0 ? (kPrefetchAhead + rowBytes - 1) / rowBytes : 1;
    for (int64_t s = 0; s < S && s < rows; ++s)
        for (int64_t c = 0; c < d; c += 16)
            __builtin_prefetch(p + s * stride + c, 0, 3);
}

} // namespace
} // namespace florence::ops
