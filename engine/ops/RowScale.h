#pragma once
// The scale of one row of x quantized by its largest |x|, for the decoding step's kernels that
// multiply int8 weights by integers (RowKernels.cpp's and RowKernelsAvxVnni.cpp's VNNI kernels,
// RowKernelsAvx2.cpp's int16 one). In an anonymous namespace, as Avx2Exp.h: each file keeps its
// own copy, compiled for its own instructions.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace florence::ops {
namespace {

// largest |x| / levels (255 for the VNNI kernels' bytes), at least the smallest normal float so
// that its inverse is finite (a row of values near 1e-38 would otherwise quantize 0 * inf = NaN);
// 1 for a row of zeros; NaN for a row holding a NaN or an infinity, so that every output of it is
// NaN (the maximum alone passes a NaN over).
inline float magnitudeScale(const float* x, int64_t k, float levels = 255.0f) {
    float largest = 0;
    bool finite = true;
    for (int64_t i = 0; i < k; ++i) {
        largest = std::max(largest, std::fabs(x[i]));
        finite = finite && !std::isnan(x[i]);
    }
    if (!finite || std::isinf(largest))
        return std::numeric_limits<float>::quiet_NaN();
    return largest > 0 ? std::max(largest / levels, std::numeric_limits<float>::min()) : 1.0f;
}

} // namespace
} // namespace florence::ops
