#include <florence/process.h>

#include <florence/machine.h>

#include <ATen/Parallel.h>

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace florence {

namespace {

const char* preferredCoreType() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
    return nullptr;
}

constexpr const char* kReexecGuard = "FLORENCE_STUDIO_BLAS_REEXEC";

} // namespace

void prepareProcess(int argc, char** argv) {
    (void)argc;
    if (std::getenv("OPENBLAS_CORETYPE") || std::getenv(kReexecGuard))
        return;
    const char* core = openblasCoreName();
    if (!core)
        return; // not OpenBLAS
    // "Prescott" (or "Core2"/"Nehalem"…) is OpenBLAS's fallback for CPUs it does not know.
    const bool fallback = std::strcmp(core, "Prescott") == 0 || std::strcmp(core, "Core2") == 0 ||
                          std::strcmp(core, "Nehalem") == 0 ||
                          std::strcmp(core, "Sandybridge") == 0;
    const char* wanted = preferredCoreType();
    if (!fallback || !wanted)
        return;
    setenv("OPENBLAS_CORETYPE", wanted, 0);
    setenv(kReexecGuard, "1", 1);
    // The kernel is chosen when libopenblas loads, so the setting only takes effect in a new
    // process image. On failure we simply go on with the slow kernels.
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE");
}

void tuneAllocator() {
    static std::once_flag once;
    std::call_once(once, [] {
        for (const char* v : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                              "MALLOC_MMAP_MAX_"})
            if (std::getenv(v))
                return; // the user tuned the allocator: keep their settings
        mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024); // glibc's maximum
        mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
        mallopt(M_TOP_PAD, 64 * 1024 * 1024);
    });
}

void setThreads(int n) {
    if (n <= 0)
        n = static_cast<int>(std::thread::hardware_concurrency());
    if (n <= 0)
        n = 1;
    at::set_num_threads(n);
}

int threads() {
    return at::get_num_threads();
}

} // namespace florence
