#include <florence/stats.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace florence {

double msSince(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double cpuClockMs(clockid_t clock) {
    timespec ts{};
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double percentile(std::vector<double> values, double q) {
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const double pos = q * static_cast<double>(values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    const double frac = pos - static_cast<double>(lo);
    return values[lo] + (values[hi] - values[lo]) * frac;
}

double median(std::vector<double> values) {
    return percentile(std::move(values), 0.5);
}

double cosine(const float* a, const float* b, size_t n) {
    double dot = 0, na = 0, nb = 0;
    for (size_t i = 0; i < n; ++i) {
        dot += double(a[i]) * b[i];
        na += double(a[i]) * a[i];
        nb += double(b[i]) * b[i];
    }
    return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
}

StepStats summarizeSteps(const std::vector<double>& stepMs) {
    StepStats s;
    s.count = static_cast<int>(stepMs.size());
    if (stepMs.empty())
        return s;
    s.medianMs = percentile(stepMs, 0.5);
    s.p95Ms = percentile(stepMs, 0.95);
    s.sumMs = std::accumulate(stepMs.begin(), stepMs.end(), 0.0);
    s.tokensPerSecond = s.sumMs > 0 ? 1000.0 * s.count / s.sumMs : 0;
    return s;
}

std::string formatMs(double ms) {
    char text[64];
    if (ms >= 10000)
        std::snprintf(text, sizeof text, "%.2f s", ms / 1000.0);
    else
        std::snprintf(text, sizeof text, ms < 10 ? "%.2f ms" : "%.1f ms", ms);
    return text;
}

std::string formatPercent(double p) {
    char text[32];
    std::snprintf(text, sizeof text, p < 0.1 ? "%.2g%%" : "%.0f%%", 100 * p);
    return text;
}

} // namespace florence
