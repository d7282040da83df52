// Process-wide settings that must be in place before the model runs: the BLAS kernel choice,
// the allocator and the number of threads.
//
//   int main(int argc, char** argv) {
//       florence::prepareProcess(argc, argv);   // first thing: may re-execute the program
//       ...
//   }
#pragma once

#include <string>
#include <vector>

namespace florence {

// Settings the libraries read when they load, before main(), so they take effect only in a new
// process image; when one is missing this sets it and re-executes the program once:
// - OMP_WAIT_POLICY=PASSIVE: OpenMP threads waiting for work sleep instead of spinning, which on
//   cores shared with another busy program keeps the slowdown near that program's share
//   (README, Performance: a busy desktop);
// - GLIBC_TUNABLES=glibc.malloc.hugetlb=1: large tensors on transparent huge pages, where the
//   kernel gives them on request (docs/performance.md, "What the speed comes from");
// - OPENBLAS_CORETYPE: OpenBLAS 0.3.21 does not recognize recent CPUs and falls back to its
//   slowest kernels; then this picks the CPU's (SkylakeX on AVX-512, Haswell on AVX2).
// Never overrides a value the user set; the BLAS part does nothing when OpenBLAS is not in use.
void prepareProcess(int argc, char** argv);

// What prepareProcess set in this process rather than the user: each variable it chose, the
// marker it set beside it, and its re-execution guard. A child that should run in the user's own
// environment (bench's Python baseline) removes these.
std::vector<std::string> variablesSetByPrepareProcess();

// Whether this process's allocator puts large blocks on transparent huge pages
// (glibc.malloc.hugetlb=1, prepareProcess's choice or the user's, and a kernel that gives them).
bool hugePageTensors();

// Keeps freed tensor memory in the heap instead of returning it to the kernel: the vision
// encoder allocates and frees tensors of tens of MB per layer, and glibc's default maps each
// afresh, so every page faults in again (measured: base vision encoder 1.60-2.07 s -> 1.39-1.46
// s, 2 threads). Process-wide; does nothing when the user set MALLOC_* tunables. Called by
// Model::load.
void tuneAllocator();

// Intra-op threads LibTorch uses; 0 = every core of the machine. More than usableCores() is
// clamped to it: extra threads only take turns on the same cores (1000 threads made a 1.8 s
// run take over a minute).
void setThreads(int threads);
// The cores this process may run on (its CPU affinity, else the machine's), at least 1.
int usableCores();
int threads();

} // namespace florence
