// Summary numbers of a run's per-step latencies, shared by the live chart and the comparison.
//
//   florence::ui::StepStats s = florence::ui::summarizeSteps(timings.stepMs);
//   s.medianMs; s.p95Ms; s.tokensPerSecond;
#pragma once

#include <vector>

namespace florence::ui {

struct StepStats {
    int count = 0;
    double medianMs = 0;
    double p95Ms = 0;
    double sumMs = 0;
    double tokensPerSecond = 0; // steps per second of decoding time
};

// Percentiles by linear interpolation between closest ranks (numpy's default).
StepStats summarizeSteps(const std::vector<double>& stepMs);

} // namespace florence::ui
