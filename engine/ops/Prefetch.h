#pragma once
// How far ahead of their loads the decoding step's kernels ask for their weights (_mm_prefetch,
// in bytes), one request per cache line they read. Each product's weights are one sequential
// stream (RowKernels.cpp), yet the hardware prefetcher alone fell behind it on a Zen 5 host:
// with AVX-512 the int8 VNNI kernel's masked loads went unprefetched and a base int8 step took
// 8.7 ms where it takes 3.3-3.8 ms asked ahead; held to AVX2, one row's int8 products 2.33 ->
// 2.07 ms and three rows' 3.71 -> 2.79, float32 three rows' 10.4 -> 8.1 (two threads, a base
// decoder step's products, alternated). 2048 to 16384 bytes ahead did as well as 4096.
namespace florence::ops {

constexpr int kPrefetchAhead = 4096;

} // namespace florence::ops
