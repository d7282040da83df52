// florence_ops: TorchScript operators the exported model calls
// (engine/exporter/florence2/model.py). The library registers them when it loads, so a process that
// runs packages links it (the engine does) and the exporter loads it into Python before scripting:
//
//   torch.ops.load_library(path)   # path: florence_ops_library_path() of the running program
//   y = torch.ops.florence.linear_rows(x, weight, bias)
//   y = torch.ops.florence.linear_int8(x, int8_weight, bias)
//   h = torch.ops.florence.linear_int8_gelu(x, int8_weight, bias)
//   a = torch.ops.florence.attend_one(q, k, v, mask)
//   a = torch.ops.florence.attend_many(q, k, v, mask)
//   x = torch.ops.florence.attend_windows(qkv, heads, scale)
//   x = torch.ops.florence.attend_channels(qkv, groups, scale)
//   y = torch.ops.florence.conv_tokens(x, h, w, weight, bias, stride, padding)
//   y = torch.ops.florence.residual_dwconv(x, h, w, weight, bias)
//
// florence::linear_rows(Tensor x, Tensor weight, Tensor? bias) -> Tensor
//   x [..., k], weight [n, k] float32, bfloat16 or int8 (a per-channel quantized tensor, axis 0,
//   zero points 0), bias [n] or None; returns float32 [..., n], x W^T + bias. For one to four
//   rows of x (a decoding step) it reads the weights once at memory speed with AVX-512 or AVX2
//   kernels (KernelPath.h; bfloat16 widened in registers, float32 products; int8 with
//   AVX512-VNNI or AVX-VNNI against x quantized to 8 bits per row, else with the AVX2 int16
//   kernel against x quantized to int16 per row), its output columns split over the cores by
//   StepThreads.h. Five rows and more with int8 weights run the same kernel four rows at a time
//   over tiles of weights; other row counts, the LibTorch path and FLORENCE_INT8_KERNEL=widen's
//   many rows go to LibTorch's own products (int8 weights widened to float32 block by block).
//
// florence::linear_int8(Tensor x, Tensor weight, Tensor? bias) -> Tensor
//   The encoders' large products in the int8 mode: x [..., k] float32 or bfloat16, weight [n, k]
//   int8 (per channel, as above), bias [n] or None; returns float32 [..., n]. On the AVX2 kernel
//   path the project's int8 GEMM (GemmInt8.h: x quantized per row at run time, u8 x s8 with
//   AVX2 or AVX-VNNI, rows split over the cores), on the AVX-512 path its 512-bit VNNI form
//   where the CPU has VNNI, else oneDNN's dynamic int8 GEMM (x quantized per tensor) through
//   LibTorch's quantized engine; either on
//   the weight packed at its first use and kept while it lives (LinearInt8.cpp). Without
//   either, LibTorch's float32 product.
//
// florence::linear_int8_gelu(Tensor x, Tensor weight, Tensor? bias) -> Tensor
//   GELU(linear_int8(x, weight, bias)) (exact GELU), for the encoders' feed-forward hidden layer:
//   the project's int8 GEMM applies it as it writes each tile, where a separate GELU made and
//   filled another tensor of the hidden layer's size (the base vision encoder's largest, 75 MB);
//   elsewhere GELU in place on linear_int8's result.
//
// florence::attend_one(Tensor q, Tensor k, Tensor v, Tensor mask) -> Tensor
//   q [B, H, 1, d] (already scaled), k and v [B, H, S, d] (any strides with unit stride along
//   d: a view of the preallocated cache), mask additive and broadcastable to [B, H, 1, S];
//   returns softmax(q k^T + mask) v, [B, H, 1, d] (a view of a [B, 1, H, d] tensor, so merging
//   the heads costs no copy). One pass over each head's keys and values with AVX-512 or AVX2,
//   heads split over the cores by StepThreads.h; other shapes and dtypes, d > 128 and the
//   LibTorch path go to LibTorch's arithmetic.
//
// florence::attend_many(Tensor q, Tensor k, Tensor v, Tensor mask) -> Tensor
//   Attention with several queries per head (the text encoder's self-attention, a prompt's pass
//   through the decoder, beams' cross-attention, the uncached path): q [B, H, T, d] (already
//   scaled), k and v [B, H, S, d] or [1, H, S, d] (one image's, shared by beams); mask additive
//   and broadcastable to [B, H, T, S]. Returns softmax(q k^T + mask) v, [B, H, T, d]. Each
//   (batch, head) pair one task over the cores (at::parallel_for), its scores kept a block of
//   queries at a time in the cache with AVX2 + FMA (AttendMany.cpp, the kernel attend_windows
//   runs), the result a view of a [B, T, H, d] tensor (merging the heads costs no copy), for
//   float32 q, k and v with unit stride along d, d a multiple of 8 up to 64, k and v of batch
//   B or 1; anything else, and the LibTorch path, go to LibTorch's batched products.
//
// florence::attend_windows(Tensor qkv, int heads, float scale) -> Tensor
//   The vision encoder's window attention: qkv [windows, n, 3 c] float32 (a window's q, k and v
//   projections side by side, each c = heads * d columns), returns [windows, n, c], per window
//   and head softmax(scale q k^T) v with the heads merged. Windows and heads split over the
//   cores (at::parallel_for), each computed with AVX2 + FMA in registers and cache
//   (AttendWindows.cpp); other dtypes, d not a multiple of 8 or above 64, and the LibTorch path
//   go to LibTorch's batched products.
//
// florence::attend_channels(Tensor qkv, int groups, float scale) -> Tensor
//   The vision encoder's channel attention: qkv [images, n, 3 c] float32 (each position's q, k
//   and v projections side by side, each c = groups * d columns), returns [images, n, c], per
//   image and group v softmax(scale q^T k)^T (attention between a group's d channels over all
//   n positions) with the groups merged. The q^T k products over slices of the positions (fixed
//   by n, so the result does not depend on the number of threads), then the values weighted
//   over blocks of positions, each split over the cores (at::parallel_for) and computed with
//   AVX2 + FMA (AttendChannels.cpp); other dtypes, d not a multiple of 8 or above 64, and the
//   LibTorch path go to LibTorch's batched products.
//
// florence::conv_tokens(Tensor x, int h, int w, Tensor weight, Tensor? bias, int stride,
//                       int padding) -> Tensor
//   The vision encoder's convolutions between stages on channels-last tokens: x [images, h * w,
//   c], weight [out, c, kh, kw], bias [out] or None; returns [images, h2 * w2, out], the
//   convolution with that stride and zero padding, tokens out. On the AVX2 kernel path with
//   float32 a matrix product over patches gathered from the tokens, 6 x 16 tiles with AVX2 +
//   FMA, the weights packed at their first use (ConvTokens.cpp); elsewhere (the AVX-512 path,
//   whose oneDNN kernels read channels-last views fast, other dtypes, the LibTorch path)
//   LibTorch's convolution of the channels-last view.
//
// florence::residual_dwconv(Tensor x, int h, int w, Tensor weight, Tensor? bias) -> Tensor
//   x + the 3 x 3 depthwise convolution of x (zero padding 1): x [images, h * w, c] tokens,
//   weight [c, 1, 3, 3], bias [c] or None; returns [images, h * w, c]. On the AVX2 kernel path
//   with float32 one pass over the tokens, output rows split over the cores, eight channels at
//   a time (ConvTokens.cpp); elsewhere LibTorch's convolution of the channels-last view.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

// The file this library was loaded from, so a program can hand the same one to the exporter.
// C linkage: florence_core finds it with dlsym without linking the library.
extern "C" const char* florence_ops_library_path();

namespace florence::ops {

// Which kernels linear_rows and attend_one use: "AVX-512", "AVX2+FMA" or "LibTorch"
// (KernelPath.h: the CPU's best, or what FLORENCE_KERNELS asked for).
std::string rowKernelName();

// Which kernel linear_rows multiplies int8 weights with: "AVX-512 VNNI", "AVX-VNNI", "int16"
// (AVX2 vpmaddwd, on either path where the CPU has no VNNI), "widened" (to float32, by
// FLORENCE_INT8_KERNEL=widen) or "LibTorch".
std::string int8StepKernelName();

// Whether linear_int8 runs an int8 GEMM: on the AVX2 kernel path always (the project's own); on
// the AVX-512 path with VNNI likewise, without VNNI where LibTorch's quantized engines include
// oneDNN's (Debian 12's LibTorch 1.13 and Debian 13's 2.6 do; without it linear_int8 computes
// in float32 from the dequantized weights, slower than the float32 model).
bool int8GemmAvailable();

// Whether that GEMM is the project's own (GemmInt8.h: activations quantized per row, float32 in
// and out): on the AVX2 kernel path, and on the AVX-512 path where the CPU has VNNI.
bool ownInt8Gemm();

// The sum over i of exp(x[i] - shift) for x[i] <= shift (shift: x's largest), in double: the
// greedy search's log-probability of its token, x[t] - shift - log(sumExp(...)), over the 51289
// scores of a step. With the kernel path's exp (AVX-512 or AVX2, within about 2 ulp, float sums
// in blocks of 1024) on the calling thread, else std::exp in double. -inf adds 0, NaN gives NaN.
double sumExp(const float* x, int64_t n, float shift);

// Stops a pass through an encoder when its caller cancels: a large model's vision encoder takes
// seconds, and Cancel, a new image or closing the window would otherwise wait for all of it.
// While an InterruptScope lives on a thread, the operators the encoders and the decoder's full
// pass call (attend_windows, attend_channels, attend_many, conv_tokens, residual_dwconv,
// linear_int8 and linear_int8_gelu) throw once `flag` is set, at their start: a few dozen
// times in a pass of a float32 or int8 encoder; with bfloat16 activations the vision encoder
// stops at its convolutions and the text encoder runs to its end. The TorchScript interpreter
// passes the exception on as a std::runtime_error of its own text, so the caller asks its flag
// whether that was the cancel. Scopes nest; a null flag is none.
class InterruptScope {
public:
    explicit InterruptScope(const std::atomic<bool>* flag);
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

private:
    const std::atomic<bool>* m_previous;
};

// Throws when the innermost InterruptScope of this thread has its flag set.
void throwIfInterrupted();

// Which int8 GEMM linear_int8 runs: "AVX-512 VNNI", "AVX-VNNI" or "AVX2" (the project's,
// GemmInt8.h), "oneDNN", or "none".
std::string int8GemmKind();

} // namespace florence::ops
