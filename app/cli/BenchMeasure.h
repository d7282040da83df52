// The measurements of `florence-studio-cli bench`: load, the encoders, cached and uncached
// decoding, feature reuse, batching, peak memory, the read bandwidth, the Python baseline and
// the reduced-precision modes, under the same competition (--busy) from the load on.
//
//   const BenchReport report = measure(parseBenchArgs(argc, argv));
#pragma once

#include "BenchConfig.h"
#include "BenchReport.h"

namespace florence::cli {

BenchReport measure(const BenchConfig& c);

} // namespace florence::cli
