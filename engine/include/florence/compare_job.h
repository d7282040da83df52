// The same request with and without the key/value cache, side by side, as one job: a warm-up,
// then the two kinds of pass alternating for a few repeats, every repeat's timings kept, and
// the figures a verdict may rest on. The app's Compare and the CLI's `compare` both run it and
// only observe it (as qBittorrent's TorrentCreator: params, hooks, a result).
//
//   florence::CompareParams params;
//   params.request = request;                        // the image and the prompt
//   params.options = model->defaultOptions();        // useCache is set by the job
//   params.repeats = 3;
//   params.cancel = &stopFlag;                       // set from another thread to stop
//   florence::CompareHooks hooks;
//   hooks.onProgress = [](int done, int total) { std::cerr << done << "/" << total << "\n"; };
//   florence::Session session(model);
//   const florence::CompareResult r = florence::CompareJob(params).run(session, hooks);
//   const florence::CompareFigures f = florence::compareFigures(r);
//   if (f.conclusive)
//       std::cout << f.speedup << "x faster, same answer: " << r.identical << "\n";
#pragma once

#include <florence/engine.h>

#include <atomic>
#include <functional>
#include <optional>
#include <vector>

namespace florence {

// Which kind of pass: the app numbers them 0 and 1.
enum class ComparePass { Cached = 0, Uncached = 1 };

struct CompareParams {
    Request request;
    // The run's settings; the job sets useCache per pass, recomputes the features in every
    // pass (reuseFeatures off) and replaces the hooks (onToken, cancel) with its own.
    GenerationOptions options;
    int repeats = 3;    // measured passes of each kind asked for (at least 1)
    bool warmup = true; // a short cached pass first, not measured
    // Set from another thread to stop: the pass running ends at its next step.
    const std::atomic<bool>* cancel = nullptr;
};

// The job's hooks, called on the thread that runs it.
struct CompareHooks {
    // Every step of the first measured repeat of each kind, with the milliseconds since that
    // pass started (the first one is the time to the first token).
    std::function<void(ComparePass, const TokenEvent&, double elapsedMs)> onToken;
    // The later repeats do not stream their text: how many tokens the pass has so far, at its
    // first step and then at most about ten times a second.
    std::function<void(ComparePass, int tokens)> onRepeatTokens;
    // The first measured repeat of each kind, once it finished (not when it was cancelled).
    std::function<void(ComparePass, const Result&)> onPassFinished;
    // Passes done of all planned (the warm-up included); `total` grows when the repeats
    // disagree, and equals `done` when the ones planned are skipped because it is settled.
    std::function<void(int done, int total)> onProgress;
    // The processor time this job's work used so far, in ms; null: the whole process's
    // (cpuClockMs). The app leaves out its GUI thread, which draws the streamed tokens.
    std::function<double()> processorMs;
};

// Every measured repeat of one kind of pass.
struct ComparePassTimes {
    Result first;                 // the first measured repeat in full: its answer is the one shown
    std::vector<double> totalsMs; // one per repeat, in run order
    std::vector<double> decodeMs;
    std::vector<std::vector<double>> stepMs; // every repeat's steps
    std::vector<double> firstTokenMs;
    // The processor time each repeat used (all of the process's threads): what another busy
    // program on the same cores does not inflate, unlike the wall-clock totals.
    std::vector<double> processorMs;
};

struct CompareResult {
    ComparePassTimes cached, uncached;
    int repeats = 0;        // measured repeats of both kinds that completed
    bool identical = false; // the same generated token ids, in every repeat
    bool cancelled = false; // stopped before every planned repeat finished
    int numBeams = 1;       // the beams both kinds of pass searched with

    ComparePassTimes& pass(ComparePass p) { return p == ComparePass::Cached ? cached : uncached; }
    const ComparePassTimes& pass(ComparePass p) const {
        return p == ComparePass::Cached ? cached : uncached;
    }
};

class CompareJob {
public:
    explicit CompareJob(CompareParams params);

    const CompareParams& params() const { return m_params; }

    // Runs the passes on `session`. Throws what Session::generate throws (EngineError,
    // ImageError); a cancelled job returns what it measured with `cancelled` set.
    CompareResult run(Session& session, const CompareHooks& hooks = {}) const;

private:
    CompareParams m_params;
};

// The repeats of one pass, in milliseconds.
struct Spread {
    int count = 0;
    double medianMs = 0, minMs = 0, maxMs = 0;
    // (max - min) / median; 0 for fewer than two values.
    double relative() const { return count > 1 && medianMs > 0 ? (maxMs - minMs) / medianMs : 0; }
};

Spread spreadOf(const std::vector<double>& ms);

// What a comparison may conclude. Each pass ran several times, alternating; the verdict uses
// the medians of the wall-clock totals when the repeats agree, and otherwise (another program
// was using the cores) the processor time each pass used, which that program does not inflate.
// Only when both disagree does it refuse to conclude, instead of presenting noise as the
// cache's effect.
struct CompareFigures {
    Spread cached, uncached;             // wall-clock totals
    Spread cachedDecode, uncachedDecode; // decoding only
    Spread cachedCpu, uncachedCpu;       // processor time of each pass
    double speedup = 0;                  // median uncached / median cached, on `basis`
    double decodeSpeedup = 0;
    bool enoughRuns = false; // at least one repeat of each kind, with a time
    bool conclusive = false;
    enum class Basis { WallClock, ProcessorTime } basis = Basis::WallClock;
};

CompareFigures compareFigures(const CompareResult& result);

// Whether the repeats allow a verdict: those of each pass agree (in wall-clock or processor
// time), or every repeat of one pass took less than every repeat of the other. The job runs
// more repeats while they do not.
bool comparisonConcludes(const CompareResult& result);

// Whether the repeats so far already settle it, so the ones still planned can be skipped:
// at least two of each, agreeing, and the slower of one pass at least kSettledGap times faster
// than the faster of the other. At Florence-2-base an uncached pass takes minutes on a slow or
// busy machine; a third repeat of a tenfold difference would only confirm it.
bool comparisonSettled(const CompareResult& result);
constexpr double kSettledGap = 2.0;

// Above this relative spread of a pass's totals the repeats disagree too much to conclude.
constexpr double kMaxConclusiveSpread = 0.3;

// Where the first measured answers of the two passes part, when they do: the generated token
// at which they first differ (0 = the first after the decoder start) and the probability each
// pass gave the token it chose there. Up to that token both passes saw the same tokens, so with
// one beam (which takes the likeliest token) two probabilities within kNearTie of each other are
// a near tie that the two ways' different order of arithmetic (and int8's or bfloat16's
// rounding, more than float32's) can tip; further apart, the passes computed differently. A
// beam search returns its best-scoring hypothesis: there the tie is between the two answers'
// beam scores (Result::score), within kNearTieScore of each other (relative, at least 1).
struct AnswerSplit {
    int token = 0;
    // exp of Result::tokenLogprobs at `token`; negative where that answer had ended before it.
    double cachedProbability = -1, uncachedProbability = -1;
    bool greedy = true; // one beam
    double cachedScore = 0, uncachedScore = 0; // the answers' beam scores
    // Greedy: both probabilities known, within kNearTie; beams: the scores within kNearTieScore.
    bool nearTie() const;
};
constexpr double kNearTie = 0.03;
constexpr double kNearTieScore = 0.01;

// Null when the first measured answers are the same tokens (or a pass has none).
std::optional<AnswerSplit> answersPart(const CompareResult& result);

} // namespace florence
