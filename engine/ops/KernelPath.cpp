#include "KernelPath.h"

#include "RowKernels.h"

#include <atomic>
#include <cstdlib>
#include <string>

namespace florence::ops {

bool haveAvx512() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

// Plain code (not in RowKernels.cpp, built with AVX-512 flags): it reads the environment before
// anything knows the CPU has AVX-512.
bool haveAvx512Vnni() {
    static const bool yes = [] {
        __builtin_cpu_init();
        const char* choice = std::getenv("FLORENCE_AVX512_VNNI");
        const bool heldOff = choice && std::string(choice) == "0";
        return !heldOff && haveAvx512() && __builtin_cpu_supports("avx512vnni");
    }();
    return yes;
}

namespace {

bool haveAvx2Fma() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

KernelPath supportedAtMost(KernelPath path) {
    // The AVX-512 path runs AVX2 kernels too (the int8 step without VNNI, window attention).
    if (path == KernelPath::Avx512 && !(haveAvx512() && haveAvx2Fma()))
        path = KernelPath::Avx2;
    if (path == KernelPath::Avx2 && !haveAvx2Fma())
        path = KernelPath::Torch;
    return path;
}

KernelPath fromEnvironment() {
    const char* choice = std::getenv("FLORENCE_KERNELS");
    const std::string c = choice ? choice : "";
    if (c == "torch")
        return KernelPath::Torch;
    if (c == "avx2")
        return supportedAtMost(KernelPath::Avx2);
    return supportedAtMost(KernelPath::Avx512);
}

std::atomic<KernelPath>& current() {
    static std::atomic<KernelPath> path{fromEnvironment()};
    return path;
}

} // namespace

bool kernelPathSupported(KernelPath path) {
    return supportedAtMost(path) == path;
}

KernelPath kernelPath() {
    return current().load(std::memory_order_relaxed);
}

void setKernelPath(KernelPath path) {
    current().store(supportedAtMost(path), std::memory_order_relaxed);
}

const char* kernelPathName(KernelPath path) {
    switch (path) {
    case KernelPath::Avx512:
        return "AVX-512";
    case KernelPath::Avx2:
        return "AVX2+FMA";
    default:
        return "LibTorch";
    }
}

} // namespace florence::ops
