// Small numbers about timings, shared by the engine, the CLI's bench and the app's latency
// panels so that all of them compute and print a median or a p95 the same way.
//
//   const auto start = florence::Clock::now();
//   ...
//   double ms = florence::msSince(start);
//   florence::StepStats s = florence::summarizeSteps(result.timings.stepMs);
//   std::cout << florence::formatMs(s.medianMs);   // "12.1 ms"
#pragma once

#include <chrono>
#include <cstddef>
#include <ctime>
#include <string>
#include <vector>

namespace florence {

using Clock = std::chrono::steady_clock;

// Milliseconds from `start` to now.
double msSince(Clock::time_point start);

// The processor time on `clock` in milliseconds: CLOCK_PROCESS_CPUTIME_ID counts every thread of
// the process, a thread's own clock (pthread_getcpuclockid) one thread; 0 when it cannot be read.
double cpuClockMs(clockid_t clock = CLOCK_PROCESS_CPUTIME_ID);

// The q-th quantile (q in [0, 1]) by linear interpolation between closest ranks, numpy's
// default; 0 for no values.
double percentile(std::vector<double> values, double q);
double median(std::vector<double> values);

// The cosine of n floats at a and at b, summed in double: how far a reduced precision's logits
// moved from float32's. 1 when both are all zeros, 0 when only one is.
double cosine(const float* a, const float* b, size_t n);

// Summary of a run's per-step latencies.
struct StepStats {
    int count = 0;
    double medianMs = 0;
    double p95Ms = 0;
    double sumMs = 0;
    double tokensPerSecond = 0; // steps per second of decoding time
};
StepStats summarizeSteps(const std::vector<double>& stepMs);

// "0.57 ms", "12.1 ms", "30.71 s": two decimals below 10 ms, seconds from 10 s on.
std::string formatMs(double ms);

// A probability (0..1) as a percentage: "41%", "5.2%", "0.014%": whole percents from 10% on,
// two significant digits below (random weights spread a token's probability over 51 000).
std::string formatPercent(double p);

} // namespace florence
