// What the machine and the runtime are: probes for benchmarks, diagnostics and the About box.
//
//   std::cout << florence::runtimeSummary();   // "LibTorch 1.13.1, 2 threads, OpenBLAS …"
//   double gbps = florence::measureReadBandwidth() / 1e9;
#pragma once

#include <florence/stats.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace florence {

// Memory read bandwidth of this machine in bytes per second: the best of a few timed sums over
// a buffer much larger than the caches, with the current thread count.
double measureReadBandwidth(size_t bufferBytes = size_t(1) << 30);

// Peak resident memory of this process so far, in bytes.
int64_t peakResidentBytes();

// The processor time other programs took from the moment it is made: the machine's busy time
// in /proc/stat (with what a virtual machine's host withheld, "steal") less this process's own,
// in cores (0.5: half a core's worth, on average, since then). How busy the desktop was while
// something was timed; -1 where /proc/stat cannot be read.
//
//   OtherProgramsLoad load;
//   ... // timed work
//   double cores = load.cores();
class OtherProgramsLoad {
public:
    OtherProgramsLoad();
    double cores() const;

private:
    double m_busySeconds;  // the machine's, from /proc/stat; < 0 when unreadable
    double m_ownSeconds;   // this process's processor time
    Clock::time_point m_start;
};

// The kernel family OpenBLAS chose ("SkylakeX", "Haswell", "Prescott" for its fallback), or
// nullptr when the BLAS in use is not OpenBLAS.
const char* openblasCoreName();

// Whether LibTorch's bfloat16 matrix products sum in float32 on this CPU, as the bfloat16 and
// int8 precisions need for the encoders' attention. LibTorch 1.13 does so through oneDNN on
// AVX-512 CPUs; elsewhere its own batched kernels sum in bfloat16, several percent off over the
// hundreds of positions an image has, which changes the answers (README, Precision). Probed once
// per process (a small bfloat16 batched product against float32; about a millisecond), then
// remembered. FLORENCE_BFLOAT16_PRODUCTS=inaccurate makes it false, to try the other case on an
// AVX-512 machine.
bool bfloat16ProductsAccurate();

// The probe's measure: the relative error (Frobenius norm) of a bfloat16 batched product with
// 576 terms a sum, against float32 products of the same bfloat16 inputs. About 0.002 when the
// sums are float32 (the result's rounding alone), 0.01 or more when they are bfloat16; infinity
// when LibTorch cannot run the product at all (oneDNN held below the CPU's bfloat16 ISA with
// DNNL_MAX_CPU_ISA refuses it), which counts as inaccurate.
double bfloat16ProductError();

// Whether LibTorch runs bfloat16 matrix products here at all (the probe's error is finite). A CPU
// without AVX-512 runs them, summing in bfloat16; oneDNN held below the CPU's bfloat16 ISA does
// not. Probed once per process, with bfloat16ProductsAccurate().
bool bfloat16ProductsRun();

// How the runtime line, the bench and the load note say why the encoders stay float32: "sum in
// bfloat16" where they run inaccurately, "cannot run" where LibTorch refuses them.
std::string bfloat16ProductsProblem();

// One line describing the runtime ("LibTorch 1.13.1, 2 threads, OpenBLAS SkylakeX, row kernels
// AVX-512").
std::string runtimeSummary();

} // namespace florence
