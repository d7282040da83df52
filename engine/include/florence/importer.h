// Runs the Python exporter (engine/exporter/florence2_export.py, installed as
// share/florence-studio/tools/florence2_export.py) that turns a Hugging Face Florence-2 folder,
// or seeded random weights, into a model package. ImportJob (<florence/import_job.h>) runs it
// on a thread of its own for the app and in the calling thread for the CLI.
//
//   florence::ImportJobParams job;
//   job.hfDir = "/home/me/Florence-2-base";
//   job.outDir = florence::userModelsDir() + "/Florence-2-base";
//   florence::runImport(job, [](int percent, const std::string& msg) { ... }, &cancelFlag);
#pragma once

#include <florence/error.h>

#include <atomic>
#include <functional>
#include <string>

namespace florence {

struct ImportJobParams {
    std::string hfDir;      // a Hugging Face Florence-2 folder, or
    std::string randomInit; // "tiny", "base" or "large"
    int seed = 1234;        // for randomInit
    std::string outDir;     // the package folder to write
};

using ImportProgress = std::function<void(int percent, const std::string& message)>;

// Blocks until the exporter finishes. Throws ImportError with the exporter's own message when it
// fails, or "cancelled" when `cancel` was set (the half-written package is removed by the
// exporter, which writes to a temporary folder first).
void runImport(const ImportJobParams& job, const ImportProgress& progress = {},
               const std::atomic<bool>* cancel = nullptr);

} // namespace florence
