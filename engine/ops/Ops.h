// florence_ops: TorchScript operators the exported model calls (tools/florence2/model.py). The
// library registers them when it loads, so a process that runs packages links it (the engine
// does) and the exporter loads it into Python before scripting:
//
//   torch.ops.load_library(path)   # path: florence_ops_library_path() of the running program
//   y = torch.ops.florence.linear_rows(x, weight, bias)
//
// florence::linear_rows(Tensor x, Tensor weight, Tensor? bias) -> Tensor
//   x [..., k], weight [n, k] float32 or bfloat16, bias [n] or None; returns float32 [..., n],
//   x W^T + bias. For one to four rows of x (a decoding step) it reads the weights once at
//   memory speed with AVX-512 kernels (bfloat16 widened in registers, float32 products); other
//   row counts and CPUs without AVX-512 go to LibTorch's own products.
#pragma once

#include <string>

// The file this library was loaded from, so a program can hand the same one to the exporter.
// C linkage: florence_core finds it with dlsym without linking the library.
extern "C" const char* florence_ops_library_path();

namespace florence::ops {

// Which kernels linear_rows uses on this CPU: "AVX-512" or "LibTorch" (no AVX-512).
std::string rowKernelName();

} // namespace florence::ops
