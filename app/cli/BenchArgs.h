// What `florence-studio-cli bench` is asked to do, from its arguments: the benchmark job's
// params (<florence/bench_job.h>) and how to print its result.
//
//   const BenchArgs args = parseBenchArgs(argc, argv); // UsageError on a bad argument
//   const florence::BenchResult r = florence::runBenchJob(args.params, hooks);
#pragma once

#include <florence/bench_job.h>

namespace florence::cli {

struct BenchArgs {
    florence::BenchParams params;
    bool json = false; // one JSON object instead of the table
};

// The text of `bench --help`.
const char* benchUsage();

BenchArgs parseBenchArgs(int argc, char** argv);

} // namespace florence::cli
