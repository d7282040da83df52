// "Automatic" precision: the fastest of float32, bfloat16 and int8 whose answers hold on this
// CPU, for one model package. Each mode is loaded once and measured (the encoders, a few cached
// decoding steps, the decoder's logits against float32's over the same tokens); the
// measurements are kept in the user's cache folder, keyed by the CPU and runtime and by the
// package, so the probe runs once per machine and model.
//
//   florence::PrecisionChoice c = florence::automaticPrecision(dir, threads); // may probe
//   florence::LoadOptions lo{threads, c.precision};
//   std::cerr << c.reason << "\n"; // "Automatic precision: int8 (…)"
//
// choosePrecision() is the rule alone, a pure function of the measurements; the probe
// (PrecisionProbe.cpp) loads the package in each precision to make them.
#pragma once

#include <florence/engine.h>

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace florence {

// The accuracy rule: a reduced precision holds when the decoder's logits keep at least this
// cosine similarity with float32's at every step measured.
constexpr double kMinLogitsCosine = 0.999;
// The answer length the choice is made for: the time to the first token plus this many steps.
constexpr int kAutomaticAnswerTokens = 32;
// A reduced precision is chosen only when its answer takes at most this share of float32's: a
// few percent either way is the noise of one measurement, not a speed-up.
constexpr double kAutomaticMaxCost = 0.95;

// One precision as measured on this CPU with one package.
struct PrecisionTrial {
    Precision precision = Precision::Float32;
    double firstTokenMs = 0; // preprocessing and both encoders
    double stepMs = 0;       // median cached decoding step
    double logitsCosine = 1; // lowest over the steps measured, against float32 (1 for float32)
    std::string error;       // why it could not run; such a mode is never chosen
    // Other programs' demand around its timed runs, in cores: OtherProgramsLoad read while the
    // probe waits just before them and just after, the higher of the two (what others get while
    // the probe computes depends on how many cores it leaves them); -1 where it could not be
    // read.
    double otherCores = 0;

    // The time of an answer of kAutomaticAnswerTokens tokens.
    double answerMs() const { return firstTokenMs + kAutomaticAnswerTokens * stepMs; }
};

struct PrecisionProbe {
    std::string cpu;     // precisionProbeCpuKey(): the CPU, the runtime and the kernels
    std::string package; // precisionProbePackageKey(): the model and its files
    std::vector<PrecisionTrial> trials; // float32 first
    bool remeasured = false; // every mode was measured twice, their loads having differed
    int64_t measuredAtMs = 0; // when it was stored (ms since the epoch; 0: before this was kept)
};

// The modes' loads may differ by this much (in cores) before the probe measures them all once
// more: a busy program that starts or stops between two modes would otherwise make the one
// measured beside it look slower than it is.
constexpr double kMaxLoadDifferenceCores = 0.35;
// Whether the modes that ran were measured under other programs' loads that differ by more.
bool measuredUnderDifferentLoads(const PrecisionProbe& probe);

// One mode as the precision box shows it.
struct PrecisionOption {
    Precision precision = Precision::Float32;
    double cost = 1;       // its answer's time / float32's (0.6: 40% faster; 1.8: 80% slower)
    bool accurate = true;  // it ran and held the accuracy rule
    std::string note;      // "0.61x float32's time", "2.3x slower than float32 here", …
};

struct PrecisionChoice {
    Precision precision = Precision::Float32;
    std::string reason; // one sentence for the user: what was picked and why
    std::vector<PrecisionOption> options; // float32, bfloat16, int8 as measured
    bool probed = false; // measured now, not read from the cache
    bool kept = false;   // read from the cache, or stored there
};

// The rule: the accurate mode whose answer is fastest, when it takes at most kAutomaticMaxCost
// of float32's time; float32 otherwise. The reason says so when the loads still differed after
// a second measurement. Throws EngineError when the probe has no float32 trial (the reference
// every other mode is measured against).
PrecisionChoice choosePrecision(const PrecisionProbe& probe);

// The cache file: <user cache folder>/florence-studio/precision-probes.json.
std::string precisionProbeCachePath();
// Held (QLockFile) by the process measuring; automaticPrecision waits for it, so that two windows
// or a window and a command measure one after the other, the second reading what the first kept.
std::string precisionProbeLockPath();
// The probe of this CPU and package kept there, if any (an unreadable file counts as none),
// also one measured under changing loads (measuredUnderDifferentLoads), which
// automaticPrecision takes only from a process it waited for.
std::optional<PrecisionProbe> cachedPrecisionProbe(const std::string& cpu,
                                                   const std::string& package);
// Adds or replaces the probe of its CPU and package, stamped with the time; returns false when
// the file cannot be written (the choice then holds for this process only).
bool storePrecisionProbe(const PrecisionProbe& probe);

// The keys. The CPU's: its model name, the instruction sets the kernels use,
// the runtime line (LibTorch, threads, BLAS, kernel path) and the program's version. The
// package's: the manifest's name and a digest of the manifest, which lists every file's digest.
std::string precisionProbeCpuKey();
std::string precisionProbePackageKey(const std::string& packageDir);

// Loads the package once in each precision and measures it; when other programs' load differed
// between the modes, measures each once more in the reverse order and keeps the quicker
// figures. `progress` gets one line per stage ("measuring int8"). Throws EngineError when
// float32 itself cannot run, or "… was cancelled" when `cancel` is set.
PrecisionProbe probePrecisions(const std::string& packageDir, int threads,
                               const std::atomic<bool>* cancel = nullptr,
                               const std::function<void(const std::string&)>& progress = {});

// The choice for this CPU and package: from the cache, or probed now and stored, unless the
// loads still differed after the second measurement (measured again next time). While another
// process measures (precisionProbeLockPath), waits for it ("waiting for another window …" to
// `progress`; `cancel` still ends the wait) and then takes what it stored, even a probe whose
// loads differed (not kept: the next start measures again), rather than measuring once more.
PrecisionChoice automaticPrecision(const std::string& packageDir, int threads,
                                   const std::atomic<bool>* cancel = nullptr,
                                   const std::function<void(const std::string&)>& progress = {});

} // namespace florence
