#include "PackCache.h"

#include <vector>

namespace florence::ops {

namespace {

using Sweep = size_t (*)(bool drop);

std::mutex g_sweepsMutex;
std::vector<Sweep>& sweeps() {
    static std::vector<Sweep> all;
    return all;
}

size_t sweepAll(bool drop) {
    std::vector<Sweep> all;
    {
        std::lock_guard<std::mutex> lock(g_sweepsMutex);
        all = sweeps();
    }
    size_t held = 0;
    for (Sweep sweep : all)
        held += sweep(drop);
    return held;
}

} // namespace

namespace detail {

void registerPackSweep(Sweep sweep) {
    std::lock_guard<std::mutex> lock(g_sweepsMutex);
    sweeps().push_back(sweep);
}

} // namespace detail

size_t dropReleasedPacks() {
    return sweepAll(true);
}

size_t packedFormsHeld() {
    return sweepAll(false);
}

} // namespace florence::ops
