// Summary numbers of a run's per-step latencies, shared by the live chart and the comparison;
// computed by the engine's <florence/stats.h>, the same way the CLI's bench does.
//
//   florence::ui::StepStats s = florence::ui::summarizeSteps(timings.stepMs);
//   s.medianMs; s.p95Ms; s.tokensPerSecond;
#pragma once

#include <florence/stats.h>

namespace florence::ui {

using florence::StepStats;
using florence::summarizeSteps;

} // namespace florence::ui
