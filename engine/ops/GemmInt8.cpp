// Packing and dispatch of the int8 GEMM kernels (GemmInt8.h); the kernels are in
// GemmInt8Avx2.cpp, GemmInt8AvxVnni.cpp and GemmInt8Avx512Vnni.cpp.
#include "GemmInt8.h"

#include "RowKernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace florence::ops {

PackedInt8 packInt8(const int8_t* w, const double* scales, int64_t n, int64_t k) {
    constexpr int64_t P = PackedInt8::kPanel;
    PackedInt8 p;
    p.n = n;
    p.k = k;
    p.kPadded = (k + 3) / 4 * 4;
    p.panels = (n + P - 1) / P;
    const int64_t columns = p.panels * P;
    const size_t bytes = size_t(columns * p.kPadded + 63) / 64 * 64;
    p.weights = {static_cast<int8_t*>(std::aligned_alloc(64, std::max<size_t>(bytes, 64))),
                 std::free};
    if (!p.weights)
        throw std::bad_alloc();
    std::memset(p.weights.get(), 0, bytes);
    p.scales = std::make_unique<float[]>(size_t(columns));
    p.columnSums = std::make_unique<int32_t[]>(size_t(columns));
    for (int64_t c = 0; c < n; ++c) {
        const int8_t* row = w + c * k;
        p.scales[size_t(c)] = float(scales[c]);
        int8_t* panel = p.weights.get() + (c / P) * p.kPadded * P;
        int32_t sum = 0;
        for (int64_t i = 0; i < k; ++i) {
            panel[(i / 4) * 4 * P + (c % P) * 4 + i % 4] = row[i];
            sum += row[i];
        }
        p.columnSums[size_t(c)] = sum;
    }
    return p;
}

uint8_t* int8RowScratch(size_t bytes) {
    thread_local std::vector<uint8_t> scratch;
    if (scratch.size() < bytes)
        scratch.resize(bytes);
    return scratch.data();
}

bool int8GemmSupported(Int8Gemm variant) {
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    switch (variant) {
    case Int8Gemm::Avx2:
        return avx2;
    case Int8Gemm::AvxVnni:
        return avx2 && __builtin_cpu_supports("avxvnni");
    case Int8Gemm::Avx512Vnni:
        return avx2 && haveAvx512Vnni();
    }
    return false;
}

const char* int8GemmName(Int8Gemm variant) {
    switch (variant) {
    case Int8Gemm::AvxVnni:
        return "AVX-VNNI";
    case Int8Gemm::Avx512Vnni:
        return "AVX-512 VNNI";
    default:
        return "AVX2";
    }
}

namespace {

std::atomic<Int8Gemm>& currentGemm() {
    static std::atomic<Int8Gemm> variant{[] {
        const char* vnni = std::getenv("FLORENCE_AVX_VNNI");
        const bool allowed = !(vnni && std::strcmp(vnni, "0") == 0);
        return allowed && int8GemmSupported(Int8Gemm::AvxVnni) ? Int8Gemm::AvxVnni : Int8Gemm::Avx2;
    }()};
    return variant;
}

} // namespace

Int8Gemm int8Gemm() {
    return currentGemm().load(std::memory_order_relaxed);
}

void setInt8Gemm(Int8Gemm variant) {
    const bool avx2Path = variant != Int8Gemm::Avx512Vnni && int8GemmSupported(variant);
    currentGemm().store(avx2Path ? variant : Int8Gemm::Avx2, std::memory_order_relaxed);
}

void gemmInt8(Int8Gemm variant, const PackedInt8& w, const float* x, int64_t ldx, int64_t rows,
              const float* bias, float* y, int64_t ldy, bool gelu) {
    switch (variant) {
    case Int8Gemm::AvxVnni:
        return gemmInt8AvxVnni(w, x, ldx, rows, bias, y, ldy, gelu);
    case Int8Gemm::Avx512Vnni:
        return gemmInt8Avx512Vnni(w, x, ldx, rows, bias, y, ldy, gelu);
    default:
        return gemmInt8Avx2(w, x, ldx, rows, bias, y, ldy, gelu);
    }
}

} // namespace florence::ops
