#include "run/StepStats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace florence::ui {

namespace {

double percentile(const std::vector<double>& sorted, double q) {
    if (sorted.empty())
        return 0;
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    const double frac = pos - static_cast<double>(lo);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

} // namespace

StepStats summarizeSteps(const std::vector<double>& stepMs) {
    StepStats s;
    s.count = static_cast<int>(stepMs.size());
    if (stepMs.empty())
        return s;
    std::vector<double> sorted = stepMs;
    std::sort(sorted.begin(), sorted.end());
    s.medianMs = percentile(sorted, 0.5);
    s.p95Ms = percentile(sorted, 0.95);
    s.sumMs = std::accumulate(stepMs.begin(), stepMs.end(), 0.0);
    s.tokensPerSecond = s.sumMs > 0 ? 1000.0 * s.count / s.sumMs : 0;
    return s;
}

} // namespace florence::ui
