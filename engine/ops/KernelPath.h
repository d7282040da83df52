#pragma once
// Which kernels run a decoding step's products and attention (florence::linear_rows,
// florence::attend_one): AVX-512, AVX2 with FMA, or LibTorch's own arithmetic. The best the CPU
// has is chosen at load; FLORENCE_KERNELS=avx512|avx2|torch asks for another (a path the CPU
// lacks falls to the best one below it), so an AVX-512 machine can run and measure the AVX2
// path. Tests switch paths with setKernelPath to check each against LibTorch.
//
//     if (florence::ops::kernelPathSupported(florence::ops::KernelPath::Avx2))
//         florence::ops::setKernelPath(florence::ops::KernelPath::Avx2);
//     std::string name = florence::ops::rowKernelName(); // "AVX2+FMA"

namespace florence::ops {

enum class KernelPath { Torch, Avx2, Avx512 };

// Whether this CPU can run the path's kernels (Torch: always).
bool kernelPathSupported(KernelPath path);

// The path in use: the CPU's best, or what FLORENCE_KERNELS asked for.
KernelPath kernelPath();

// Switches the path for every later call; one the CPU lacks falls to the best one below it.
// Not for use while another thread runs the operators.
void setKernelPath(KernelPath path);

// "AVX-512", "AVX2+FMA" or "LibTorch".
const char* kernelPathName(KernelPath path);

} // namespace florence::ops
