// What `florence-studio-cli bench` prints of the benchmark job's result: one JSON object
// (`--json`) or the tables.
//
//   const florence::BenchResult r = florence::runBenchJob(args.params, hooks);
//   args.json ? print(toJson(r)) : printTable(r);
#pragma once

#include <florence/bench_job.h>

#include <QJsonObject>

namespace florence::cli {

QJsonObject toJson(const florence::BenchResult& r);
void printTable(const florence::BenchResult& r);

} // namespace florence::cli
