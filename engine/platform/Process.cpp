#include <florence/process.h>

#include <florence/machine.h>

#include <ATen/Parallel.h>

#include <malloc.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

constexpr const char* kReexecGuard = "FLORENCE_STUDIO_REEXEC";
// Set when prepareProcess chose the OpenBLAS kernels or the OpenMP wait policy itself, so a child
// that should see the user's environment (bench's Python baseline) can undo it.
constexpr const char* kChoseBlas = "FLORENCE_STUDIO_BLAS_REEXEC";
constexpr const char* kChoseOmp = "FLORENCE_STUDIO_OMP_PASSIVE";
constexpr const char* kChoseTunables = "FLORENCE_STUDIO_MALLOC_REEXEC";
constexpr const char* kHugePages = "glibc.malloc.hugetlb=1";

// Each variable prepareProcess may set, with the marker it sets beside it.
struct Chosen {
    const char* variable;
    const char* marker;
};
constexpr Chosen kChosen[] = {{"OMP_WAIT_POLICY", kChoseOmp},
                              {"GLIBC_TUNABLES", kChoseTunables},
                              {"OPENBLAS_CORETYPE", kChoseBlas}};

// Whether the kernel gives transparent huge pages only to memory that asks for them ("madvise",
// Debian's default): then glibc's allocator asks when told to. "always" needs no asking, "never"
// gives none, and a glibc before 2.35 does not know the setting.
bool hugePagesOnRequest() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
    std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
    if (!f)
        return false;
    char line[128] = {};
    const bool read = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    return read && std::strstr(line, "[madvise]") != nullptr;
#else
    return false;
#endif
}

// OpenBLAS's kernels for this CPU when it fell back to generic ones; nullptr to keep them.
const char* betterBlasKernels() {
    const char* core = openblasCoreName();
    if (!core)
        return nullptr; // not OpenBLAS
    // "Prescott" (or "Core2"/"Nehalem"…) is OpenBLAS's fallback for CPUs it does not know.
    const bool fallback = std::strcmp(core, "Prescott") == 0 || std::strcmp(core, "Core2") == 0 ||
                          std::strcmp(core, "Nehalem") == 0 ||
                          std::strcmp(core, "Sandybridge") == 0;
    return fallback ? preferredCoreType() : nullptr;
}

} // namespace

void prepareProcess(int argc, char** argv) {
    (void)argc;
    if (std::getenv(kReexecGuard))
        return;
    bool changed = false;
    // OpenMP threads that wait for work sleep instead of spinning: on a desktop where another
    // program keeps a core busy, spinning threads take turns with it and a 2-thread vision
    // encoder ran 2.9x slower than alone (the same work with sleeping threads 1.8x; README,
    // Performance). The user's own OMP_WAIT_POLICY wins.
    if (!std::getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
        setenv(kChoseOmp, "1", 1);
        changed = true;
    }
    // Tensors on transparent huge pages: glibc maps every block over 32 MB afresh (the vision
    // encoder's activations: 19-75 MB at base size, each layer), and each of its 4 KiB pages
    // then faults in on first touch. With the allocator's huge pages a base float32 vision pass
    // took 1625-1755 against 1969-2099 ms and faulted 13x less (AVX-512 machine, 2 threads;
    // docs/performance.md). The user's own GLIBC_TUNABLES wins.
    if (!std::getenv("GLIBC_TUNABLES") && hugePagesOnRequest()) {
        setenv("GLIBC_TUNABLES", kHugePages, 1);
        setenv(kChoseTunables, "1", 1);
        changed = true;
    }
    if (!std::getenv("OPENBLAS_CORETYPE")) {
        if (const char* wanted = betterBlasKernels()) {
            setenv("OPENBLAS_CORETYPE", wanted, 1);
            setenv(kChoseBlas, "1", 1);
            changed = true;
        }
    }
    if (!changed)
        return;
    setenv(kReexecGuard, "1", 1);
    // libgomp reads its settings and libopenblas picks its kernels when they load, so both take
    // effect only in a new process image. On failure we go on as we are.
    execv("/proc/self/exe", argv);
    for (const Chosen& c : kChosen)
        if (std::getenv(c.marker)) {
            unsetenv(c.variable);
            unsetenv(c.marker);
        }
    unsetenv(kReexecGuard);
}

std::vector<std::string> variablesSetByPrepareProcess() {
    std::vector<std::string> names;
    for (const Chosen& c : kChosen)
        if (std::getenv(c.marker)) {
            names.emplace_back(c.variable);
            names.emplace_back(c.marker);
        }
    names.emplace_back(kReexecGuard);
    return names;
}

bool hugePageTensors() {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    return tunables && std::strstr(tunables, kHugePages) && hugePagesOnRequest();
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

int usableCores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    if (n <= 0)
        n = static_cast<int>(std::thread::hardware_concurrency());
    return n > 0 ? n : 1;
}

void setThreads(int n) {
    const int cores = usableCores();
    at::set_num_threads(n <= 0 || n > cores ? cores : n);
}

int threads() {
    return at::get_num_threads();
}

} // namespace florence
