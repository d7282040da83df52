// `florence-studio-cli bench`: the benchmark job (<florence/bench_job.h>) run from the command
// line, its progress on the terminal and its result printed as JSON or as tables.
#pragma once

namespace florence::cli {

int runBench(int argc, char** argv);

} // namespace florence::cli
