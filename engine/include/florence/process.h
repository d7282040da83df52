// Process-wide settings that must be in place before the model runs: the BLAS kernel choice,
// the allocator and the number of threads.
//
//   int main(int argc, char** argv) {
//       florence::prepareProcess(argc, argv);   // first thing: may re-execute the program
//       ...
//   }
#pragma once

namespace florence {

// OpenBLAS 0.3.21 does not recognize recent CPUs and falls back to its slowest kernels; the
// kernel is chosen when the library loads, before main(). When OpenBLAS would fall back and the
// user has not set OPENBLAS_CORETYPE, this sets it for the CPU (SkylakeX on AVX-512, Haswell on
// AVX2) and re-executes the program once so the library loads with it. Never overrides a value
// the user set. Safe to call when OpenBLAS is not the BLAS in use (does nothing then).
void prepareProcess(int argc, char** argv);

// Keeps freed tensor memory in the heap instead of returning it to the kernel: the vision
// encoder allocates and frees tensors of tens of MB per layer, and glibc's default maps each
// afresh, so every page faults in again (measured: base vision encoder 1.60-2.07 s -> 1.39-1.46
// s, 2 threads). Process-wide; does nothing when the user set MALLOC_* tunables. Called by
// Model::load.
void tuneAllocator();

// Intra-op threads LibTorch uses; 0 = every core of the machine.
void setThreads(int threads);
int threads();

} // namespace florence
