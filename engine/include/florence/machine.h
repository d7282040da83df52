// What the machine and the runtime are: probes for benchmarks, diagnostics and the About box.
//
//   std::cout << florence::runtimeSummary();   // "LibTorch 1.13.1, 2 threads, OpenBLAS …"
//   double gbps = florence::measureReadBandwidth() / 1e9;
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace florence {

// Memory read bandwidth of this machine in bytes per second: the best of a few timed sums over
// a buffer much larger than the caches, with the current thread count.
double measureReadBandwidth(size_t bufferBytes = size_t(1) << 30);

// Peak resident memory of this process so far, in bytes.
int64_t peakResidentBytes();

// The kernel family OpenBLAS chose ("SkylakeX", "Haswell", "Prescott" for its fallback), or
// nullptr when the BLAS in use is not OpenBLAS.
const char* openblasCoreName();

// One line describing the runtime ("LibTorch 1.13.1, 2 threads, OpenBLAS SkylakeX, row kernels
// AVX-512").
std::string runtimeSummary();

} // namespace florence
