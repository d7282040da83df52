// The Python baseline of the benchmark job: the same weights run eagerly by
// engine/exporter/florence2/bench_eager.py, with the same threads, once per BLAS setting.
// Internal to the engine.
//
//   detail::measurePython(params, promptIds, result, step, cancel); // python or pythonError
#pragma once

#include <florence/bench_job.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace florence::detail {

// Fills result.pythonRuns and result.python (the faster run), or result.pythonError when the
// baseline cannot run (everything else in the bench needs no Python). `step` is called after
// each run (it reports the progress, and throws once cancelled); `cancel` also stops a run in
// progress, and the job with it.
void measurePython(const BenchParams& c, const std::vector<int64_t>& promptIds, BenchResult& result,
                   const std::function<void(const std::string&)>& step,
                   const std::atomic<bool>* cancel);

} // namespace florence::detail
