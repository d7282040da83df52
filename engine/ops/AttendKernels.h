#pragma once
// Single-query attention of one (batch, head) pair: out = softmax(q k^T + mask) v, with q [d],
// k and v [S, d] rows `kStride` / `vStride` floats apart (a view of a larger preallocated cache),
// mask [S] additive, `maskStride` floats apart (0: one value for every position; null: none).
// All float32; d from 1 to kAttendMaxDim.
//
//     std::vector<float> scratch(S);
//     florence::ops::attendOneF32Avx512(q, k, S * d, v, S * d, mask, 1, S, d, scratch.data(), out);
//
// Compiled with AVX-512 flags in a file of their own: call it only when haveAvx512() is true.

#include <cstdint>

namespace florence::ops {

constexpr int64_t kAttendMaxDim = 128;

// scratch: S floats (the scores, then the probabilities before normalization).
void attendOneF32Avx512(const float* q, const float* k, int64_t kStride, const float* v,
                        int64_t vStride, const float* mask, int64_t maskStride, int64_t S,
                        int64_t d, float* scratch, float* out);

// The sum over i of exp(x[i] - shift), x[i] <= shift: the search's log-probabilities (Ops.h
// sumExp). -inf adds exactly 0, NaN gives NaN. Summed in float within blocks of kSumExpBlock
// entries (at most 128 terms of at most 1 to a lane), the blocks' sums in double.
constexpr int64_t kSumExpBlock = 1024;
double sumExpAvx512(const float* x, int64_t n, float shift);

} // namespace florence::ops
