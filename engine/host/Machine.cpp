#include <florence/machine.h>

#include <florence/process.h>
#include <florence/stats.h>

#include "Ops.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <dlfcn.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace florence {

const char* openblasCoreName() {
    using CoreNameFn = char* (*)();
    auto fn = reinterpret_cast<CoreNameFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    return fn ? fn() : nullptr;
}

double measureReadBandwidth(size_t bufferBytes) {
    c10::InferenceMode guard;
    const int64_t n = static_cast<int64_t>(bufferBytes / sizeof(float));
    torch::Tensor buffer = torch::ones({n}, torch::kFloat32);
    double best = 1e30;
    for (int i = 0; i < 6; ++i) {
        const auto start = Clock::now();
        volatile float s = buffer.sum().item<float>();
        (void)s;
        const double sec = msSince(start) / 1000.0;
        if (i > 0) // the first pass also faults the pages in
            best = std::min(best, sec);
    }
    return static_cast<double>(n) * sizeof(float) / best;
}

int64_t peakResidentBytes() {
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

std::string runtimeSummary() {
    std::string s = "LibTorch " TORCH_VERSION ", " + std::to_string(threads()) + " threads";
    if (const char* core = openblasCoreName())
        s += std::string(", OpenBLAS ") + core;
    else
        s += ", BLAS: not OpenBLAS";
    s += ", row kernels " + ops::rowKernelName();
    if (const char* wait = std::getenv("OMP_WAIT_POLICY"))
        s += std::string(", OMP_WAIT_POLICY=") + wait;
    return s;
}

} // namespace florence
