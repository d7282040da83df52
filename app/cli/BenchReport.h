// What `florence-studio-cli bench` measured: one report, printed as JSON or as a table.
//
//   const BenchReport r = measure(config);
//   config.json ? print(toJson(r)) : printTable(r);
#pragma once

#include <florence/stats.h>

#include <QJsonObject>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace florence::cli {

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

struct BenchReport {
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

    // Median step of the longest cached run (the last one of that length).
    double cachedMedianMs() const {
        const LengthReport* longest = &lengths.front();
        for (const LengthReport& l : lengths)
            if (l.length >= longest->length)
                longest = &l;
        return median(longest->stepMs);
    }
    double floorMs() const { return bandwidthFloorMs(stepBytes, bandwidth); }
};

QJsonObject toJson(const BenchReport& r);
void printTable(const BenchReport& r);

} // namespace florence::cli
