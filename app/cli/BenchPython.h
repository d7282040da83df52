// The Python baseline of `florence-studio-cli bench`: the same weights run eagerly by
// engine/exporter/florence2/bench_eager.py, with the same threads, once per BLAS setting.
//
//   measurePython(config, promptIds, report, progress); // report.python or report.pythonError
#pragma once

#include "BenchConfig.h"
#include "BenchReport.h"

#include <cstdint>
#include <vector>

namespace florence::cli {

// Fills report.pythonRuns and report.python (the faster run), or report.pythonError when the
// baseline cannot run (everything else in the bench needs no Python).
void measurePython(const BenchConfig& c, const std::vector<int64_t>& promptIds, BenchReport& report,
                   Progress& progress);

} // namespace florence::cli
