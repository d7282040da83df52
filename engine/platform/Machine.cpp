#include <florence/machine.h>

#include <florence/process.h>
#include <florence/stats.h>

#include "Ops.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
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

namespace {

// Seconds every processor of the machine spent busy since boot (user, nice, system, interrupts
// and a host's steal), from /proc/stat's first line; -1 when it cannot be read.
double machineBusySeconds() {
    std::FILE* f = std::fopen("/proc/stat", "re");
    if (!f)
        return -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                       steal = 0;
    const int got = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice,
                                &system, &idle, &iowait, &irq, &softirq, &steal);
    std::fclose(f);
    if (got < 4)
        return -1;
    const long hz = sysconf(_SC_CLK_TCK);
    return double(user + nice + system + irq + softirq + steal) / double(hz > 0 ? hz : 100);
}

} // namespace

OtherProgramsLoad::OtherProgramsLoad()
    : m_busySeconds(machineBusySeconds()), m_ownSeconds(cpuClockMs() / 1000),
      m_start(Clock::now()) {}

double OtherProgramsLoad::cores() const {
    const double busy = machineBusySeconds();
    const double wall = msSince(m_start) / 1000;
    if (m_busySeconds < 0 || busy < 0 || wall <= 0)
        return -1;
    // The kernel's counters tick in hundredths of a second: a short span reads a little off
    // either way, never below nothing.
    const double others = (busy - m_busySeconds) - (cpuClockMs() / 1000 - m_ownSeconds);
    return std::max(0.0, others / wall);
}

double bfloat16ProductError() {
    c10::InferenceMode guard;
    // Attention's shapes: a few heads, 32 wide, summing over an image's 576 positions.
    const at::Generator generator = at::detail::createCPUGenerator(20261202);
    const torch::Tensor a =
        at::randn({4, 32, 576}, generator, torch::kFloat32).to(torch::kBFloat16);
    const torch::Tensor b =
        at::randn({4, 576, 32}, generator, torch::kFloat32).to(torch::kBFloat16);
    const torch::Tensor reference = torch::matmul(a.to(torch::kFloat32), b.to(torch::kFloat32));
    try {
        const torch::Tensor got = torch::matmul(a, b).to(torch::kFloat32);
        return (got - reference).norm().item<double>() / reference.norm().item<double>();
    } catch (const std::exception&) { // c10::Error, or oneDNN's own error type
        return std::numeric_limits<double>::infinity();
    }
}

namespace {

double probedBfloat16Error() {
    static const double error = bfloat16ProductError();
    return error;
}

} // namespace

bool bfloat16ProductsAccurate() {
    if (const char* forced = std::getenv("FLORENCE_BFLOAT16_PRODUCTS"))
        if (std::string(forced) == "inaccurate")
            return false;
    return probedBfloat16Error() < 0.01;
}

bool bfloat16ProductsRun() {
    return std::isfinite(probedBfloat16Error());
}

std::string bfloat16ProductsProblem() {
    return bfloat16ProductsRun() ? "bfloat16 products sum in bfloat16"
                                 : "LibTorch cannot run bfloat16 products";
}

std::string runtimeSummary() {
    std::string s = "LibTorch " TORCH_VERSION ", " + std::to_string(threads()) + " threads";
    if (const char* core = openblasCoreName())
        s += std::string(", OpenBLAS ") + core;
    else
        s += ", BLAS: not OpenBLAS";
    s += ", row kernels " + ops::rowKernelName();
    // The AVX2 class runs int8's encoder products on the project's int8 GEMM (AVX2 or AVX-VNNI,
    // LinearInt8.cpp).
    if (ops::rowKernelName() == "AVX2+FMA")
        s += ", int8 encoder products " + ops::int8GemmKind();
    if (ops::rowKernelName() != "LibTorch")
        s += ", int8 steps " + ops::int8StepKernelName();
    if (!bfloat16ProductsAccurate())
        s += ", " + bfloat16ProductsProblem();
    if (hugePageTensors())
        s += ", huge pages";
    if (const char* wait = std::getenv("OMP_WAIT_POLICY"))
        s += std::string(", OMP_WAIT_POLICY=") + wait;
    return s;
}

} // namespace florence
