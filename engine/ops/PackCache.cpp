#include "PackCache.h"

#include <vector>

namespace florence::ops {

namespace {

std::mutex g_sweepsMutex;
// Never destroyed: a model released during the program's exit still finds it.
std::vector<detail::PackSweep>& sweeps() {
    static auto* all = new std::vector<detail::PackSweep>;
    return *all;
}

size_t sweepAll(const WeightSet* drop) {
    std::vector<detail::PackSweep> all;
    {
        std::lock_guard<std::mutex> lock(g_sweepsMutex);
        all = sweeps();
    }
    size_t held = 0;
    for (detail::PackSweep sweep : all)
        held += sweep(drop);
    return held;
}

} // namespace

namespace detail {

void registerPackSweep(PackSweep sweep) {
    std::lock_guard<std::mutex> lock(g_sweepsMutex);
    sweeps().push_back(sweep);
}

} // namespace detail

size_t dropPacks(const WeightSet& weights) {
    return sweepAll(&weights);
}

size_t packedFormsHeld() {
    return sweepAll(nullptr);
}

} // namespace florence::ops
