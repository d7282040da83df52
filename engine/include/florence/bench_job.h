// The benchmark as one job: speed at the real Florence-2 sizes with random weights (load, the
// encoders, cached and uncached decoding, feature reuse, batching, peak memory, the read
// bandwidth, the reduced precisions), against the same weights run eagerly in Python and
// against the machine's memory bandwidth. The CLI's `bench` runs it and only observes it (as
// qBittorrent's TorrentCreator: params, hooks for progress and interruption, a result).
//
//   florence::BenchParams params;
//   params.size = "base";                      // the speed demo installed with the app
//   params.lengths = {32, 128};
//   params.python = false;
//   florence::BenchHooks hooks;
//   hooks.cancel = &stopFlag;
//   hooks.onProgress = [](int done, int total, const std::string& what) { … };
//   const florence::BenchResult r = florence::runBenchJob(params, hooks); // throws Error
//   std::cout << r.cachedMedianMs() << " ms a step\n";
#pragma once

#include <florence/stats.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace florence {

// What to measure. Every run generates exactly its length (the end token is ignored).
struct BenchParams {
    std::string size = "base"; // the speed demo measured when `package` is "": base, large
    std::vector<int> lengths{32, 128, 256}; // generated tokens per run
    int threads = 0;                        // intra-op threads; 0: every core
    int busy = 0;         // CPU-bound threads of the job's own during the measurement
    std::string image;    // the input image; "": the bundled pier.png
    std::string package;  // the package measured; "": models/speed-demo-<size>
    bool python = true;   // the Python eager baseline (python3 with torch and PIL)
    bool uncached = true; // uncached decoding (slow at large sizes)
    bool bf16 = true;     // the bfloat16 mode
    bool int8 = true;     // the int8 mode
    bool batching = true; // 4 sample images together vs one by one

    int maxLength() const { return *std::max_element(lengths.begin(), lengths.end()); }
    // The measurements onProgress counts: its `total`.
    int progressSteps() const {
        return 4 + int(lengths.size()) * (uncached ? 2 : 1) + (python ? 2 : 0) + (bf16 ? 3 : 0) +
               (int8 ? 3 : 0) + (batching ? 2 : 0);
    }
};

struct BenchHooks {
    // After each measurement: how many are done of `total` (progressSteps()), and which.
    std::function<void(int done, int total, const std::string& what)> onProgress;
    // Set from another thread (or a signal handler) to stop; checked between measurements and
    // in the runs themselves, it ends the job with an EngineError ("… was cancelled").
    const std::atomic<bool>* cancel = nullptr;
};

// The memory-bandwidth floor of a cached decoding step: the milliseconds it takes to read the
// step's bytes once at the measured read bandwidth (bytes per second); no implementation can
// beat it.
inline double bandwidthFloorMs(int64_t stepBytes, double bandwidth) {
    return 1000.0 * double(stepBytes) / bandwidth;
}

struct LengthReport {
    int length = 0;
    std::vector<double> stepMs; // cached
    double decodeMs = 0;        // cached
    bool hasUncached = false;
    double uncachedDecodeMs = 0;
    double uncachedMedianStepMs = 0;
    bool uncachedSameTokens = false;
};

struct ReuseReport {
    double withoutMs = 0; // first token of a second task, features computed again
    double withMs = 0;    // the same with the features reused
    bool reused = false;
    // The first task again after Session::encodeImage ran the vision and text encoders ahead
    // (what the app does while an image is shown): from the start of generate() to its first
    // token, that is, the first decoding step alone.
    double aheadMs = 0;
    bool promptReused = false;
};

struct BatchReport {
    int images = 0;
    int tokensEach = 0;
    double oneByOneMs = 0;
    double batchedMs = 0;
    bool sameTokens = false;
};

struct PythonReport {
    std::string blas; // which OpenBLAS kernels: "environment (…)" or "OPENBLAS_CORETYPE=SkylakeX"
    double loadMs = 0, preprocessMs = 0, visionMs = 0, textEncoderMs = 0;
    double medianStepMs = 0;
    double firstTokenMs() const { return preprocessMs + visionMs + textEncoderMs; }
};

// A reduced-precision mode (bfloat16, int8) against float32.
struct ReducedReport {
    double firstTokenMs = 0, visionMs = 0, textEncoderMs = 0, medianStepMs = 0;
    double logitsCosineMin = 1, logitsCosineMean = 1;
    int64_t stepBytes = 0;                // what one cached step reads in this mode
    std::vector<std::string> int8Modules; // Model::int8Modules()
    std::string encoderPrecision;         // precisionName(Model::encoderPrecision())
};

struct BenchResult {
    std::string model, package, runtime;
    double parameters = 0;
    double loadMs = 0;
    std::vector<double> preprocessMs, visionMs, textEncoderMs, firstTokenMs; // one per length
    std::vector<LengthReport> lengths;
    ReuseReport reuse;
    std::optional<BatchReport> batching;
    int64_t peakBytes = 0, peakWithBatchBytes = 0;
    double bandwidth = 0; // bytes per second
    int64_t stepBytes = 0;
    int busyThreads = 0;
    std::vector<PythonReport> pythonRuns; // each BLAS setting measured
    std::optional<PythonReport> python;   // the faster of them: what the ratios compare with
    std::string pythonError;
    std::optional<ReducedReport> bf16, int8;
    std::string bf16Error; // why bfloat16 was asked for and not measured

    // Median step of the longest cached run (the last one of that length).
    double cachedMedianMs() const {
        const LengthReport* longest = &lengths.front();
        for (const LengthReport& l : lengths)
            if (l.length >= longest->length)
                longest = &l;
        return median(longest->stepMs);
    }
    double floorMs() const { return bandwidthFloorMs(stepBytes, bandwidth); }
    // The floor of a reduced-precision mode's step, at the bandwidth measured here.
    double floorMs(const ReducedReport& mode) const {
        return bandwidthFloorMs(mode.stepBytes, bandwidth);
    }
};

// Runs the measurements in the calling thread and returns them all. Throws Error when the
// package, the image or the model cannot be used, and EngineError ("… was cancelled") when
// hooks.cancel is set: a job stopped half way returns nothing. The Python baseline failing is
// no error: the result says why in pythonError.
BenchResult runBenchJob(const BenchParams& params, const BenchHooks& hooks = {});

} // namespace florence
