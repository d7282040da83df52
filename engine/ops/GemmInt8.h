#pragma once
// The encoders' large products with int8 weights on the AVX2 kernel path (florence::linear_int8,
// LinearInt8.cpp): y = x W^T + bias for many rows, W [n, k] int8 with a scale per output
// column, x float32 quantized per row as it is read. Each row r gets its own scale s_r and zero
// point z_r (x ~ (q - z_r) s_r), so a row's small values keep their precision beside another
// row's large ones; the products run u8 x s8 into 32-bit sums:
//
//   AVX-VNNI:  vpdpbusd on 256-bit registers (Intel since Alder Lake, AMD since Zen 5): four
//              u8 x s8 products into each 32-bit sum, exact; q in 0..255.
//   AVX2:      vpmaddubsw (pairs of u8 x s8 into 16 bits) and vpmaddwd against ones (into 32
//              bits); q in 0..127, so that no pair saturates (127 * 128 * 2 = 32512 < 32767).
//              Seven bits of activations cost less accuracy than seven bits of weights would
//              (base speed demo against float32, the text encoder's output cosine 0.99936
//              against 0.99907).
//   AVX-512 VNNI: vpdpbusd on 512-bit registers, as AVX-VNNI with twice the columns to an
//              instruction (the AVX-512 kernel path's, where the CPU has VNNI); q in 0..255.
//
// y_rc = s_r * w_c * (sum_k q_rk W_ck - z_r * sum_k W_ck) + bias_c, with the column sums made
// when the weights are packed.
//
//     florence::ops::PackedInt8 p = florence::ops::packInt8(w, scales, n, k);
//     florence::ops::gemmInt8(florence::ops::Int8Gemm::Avx2, p, x, k, rows, bias, y, n);
//
// The kernels are compiled for their instructions in files of their own (GemmInt8Avx2.cpp,
// GemmInt8AvxVnni.cpp, GemmInt8Avx512Vnni.cpp): call gemmInt8 only with a variant
// int8GemmSupported() accepts.

#include <cstddef>
#include <cstdint>
#include <memory>

namespace florence::ops {

// W packed for the kernels: panels of 16 output columns; within a panel, k in groups of four
// bytes, the 16 columns' groups side by side (64 bytes, two 256-bit loads), k padded to a
// multiple of 4 and n to a multiple of 16 with zero weights.
struct PackedInt8 {
    static constexpr int64_t kPanel = 16;
    int64_t n = 0, k = 0, kPadded = 0, panels = 0;
    std::unique_ptr<int8_t[], void (*)(void*)> weights{nullptr, nullptr}; // 64-byte aligned
    std::unique_ptr<float[]> scales;                                      // panels * 16
    std::unique_ptr<int32_t[]> columnSums;                                // panels * 16
};

// w [n, k] int8 row-major with scales[n] (zero points 0).
PackedInt8 packInt8(const int8_t* w, const double* scales, int64_t n, int64_t k);

enum class Int8Gemm { Avx2, AvxVnni, Avx512Vnni };

// Whether this CPU can run the variant (AVX2: AVX2 and FMA; AVX-VNNI: also the 256-bit VNNI;
// AVX-512 VNNI: AVX-512 F, BW and VL with VNNI).
bool int8GemmSupported(Int8Gemm variant);

// "AVX2", "AVX-VNNI" or "AVX-512 VNNI".
const char* int8GemmName(Int8Gemm variant);

// The variant florence::linear_int8 runs on the AVX2 kernel path: AVX-VNNI where the CPU has it,
// unless FLORENCE_AVX_VNNI=0 asks for what a CPU without it runs (AMD Zen 2 and 3). Tests switch
// it with setInt8Gemm (one the CPU lacks, or AVX-512 VNNI, falls to AVX2); not while another
// thread runs it. The AVX-512 kernel path runs AVX-512 VNNI where the CPU has it (LinearInt8.cpp).
Int8Gemm int8Gemm();
void setInt8Gemm(Int8Gemm variant);

// y [rows, ldy] = x [rows, ldx] W^T + bias (bias: n floats, or null), on the calling thread;
// callers split the rows over threads. With `gelu`, y = GELU(x W^T + bias) (exact GELU within
// 1.1e-6, GemmInt8Kernel.inc), applied as each tile is written instead of in another pass over y.
void gemmInt8(Int8Gemm variant, const PackedInt8& w, const float* x, int64_t ldx, int64_t rows,
              const float* bias, float* y, int64_t ldy, bool gelu = false);

// A buffer of at least `bytes` for the calling thread, kept for its next call (the kernels'
// quantized rows). Defined in GemmInt8.cpp, which is built for any x86-64: a kernel file must
// not instantiate a library template (std::vector's growth, say), whose one copy the linker
// keeps could be that file's, with instructions another kernel's CPU lacks.
uint8_t* int8RowScratch(size_t bytes);

// The kernel files' entry points (gemmInt8 dispatches to them).
void gemmInt8Avx2(const PackedInt8& w, const float* x, int64_t ldx, int64_t rows, const float* bias,
                  float* y, int64_t ldy, bool gelu);
void gemmInt8AvxVnni(const PackedInt8& w, const float* x, int64_t ldx, int64_t rows,
                     const float* bias, float* y, int64_t ldy, bool gelu);
void gemmInt8Avx512Vnni(const PackedInt8& w, const float* x, int64_t ldx, int64_t rows,
                        const float* bias, float* y, int64_t ldy, bool gelu);

} // namespace florence::ops
