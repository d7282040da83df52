#include <florence/compare_job.h>

#include <florence/stats.h>

#include <algorithm>
#include <cmath>

namespace florence {

namespace {

// Repeats beyond those asked for, while a busy machine keeps them from agreeing.
constexpr int kExtraRepeats = 2;

// How often a later repeat says how far it is.
constexpr double kRepeatTokensEveryMs = 100;

} // namespace

CompareJob::CompareJob(CompareParams params) : m_params(std::move(params)) {}

CompareResult CompareJob::run(Session& session, const CompareHooks& hooks) const {
    // The features are recomputed in every pass so the totals measure the same work and differ
    // only by the cache. One pass each is not a measurement on a machine where anything else
    // runs: a warm-up first (allocator, page faults, caches), then the two alternate, so a
    // busy spell slows both rather than one; the verdict uses medians and their spread.
    GenerationOptions cached = m_params.options;
    cached.useCache = true;
    cached.reuseFeatures = false;
    cached.cancel = m_params.cancel;
    cached.onToken = nullptr;
    GenerationOptions uncached = cached;
    uncached.useCache = false;
    const int asked = std::max(1, m_params.repeats);
    int repeats = asked;
    int total = repeats * 2 + (m_params.warmup ? 1 : 0);
    int done = 0;
    const auto cancelled = [&] { return m_params.cancel && m_params.cancel->load(); };
    const auto progress = [&](int d, int t) {
        if (hooks.onProgress)
            hooks.onProgress(d, t);
    };
    // The engine's threads and OpenMP's do the work; the caller may leave out a thread of its
    // own (the app's GUI thread draws the streamed tokens of the first repeat only).
    const auto processorMs = [&] { return hooks.processorMs ? hooks.processorMs() : cpuClockMs(); };
    // Every pass decodes its text as it goes, so that all of them do the same work; the first
    // measured pass of each kind streams it, the later ones say how far they are.
    const auto runPass = [&](GenerationOptions options, ComparePass kind, int rep) {
        const auto start = Clock::now();
        double lastReportMs = -1;
        options.onToken = [&](const TokenEvent& e) {
            const double elapsedMs = msSince(start);
            if (rep == 0 && hooks.onToken) {
                hooks.onToken(kind, e, elapsedMs);
            } else if (rep > 0 && hooks.onRepeatTokens &&
                       (lastReportMs < 0 || elapsedMs - lastReportMs >= kRepeatTokensEveryMs)) {
                // An uncached repeat at base size takes half a minute: say how far it is.
                lastReportMs = elapsedMs;
                hooks.onRepeatTokens(kind, e.step + 1);
            }
            return true;
        };
        return session.generate(m_params.request, options);
    };
    CompareResult r;
    r.numBeams = m_params.options.numBeams;
    if (m_params.warmup) {
        GenerationOptions warm = cached;
        // Short: it only has to touch what the measured passes will use.
        warm.maxNewTokens = std::min(warm.maxNewTokens, 8);
        runPass(warm, ComparePass::Cached, -1);
        progress(++done, total);
    }
    bool identical = true;
    for (int rep = 0; rep < repeats && !cancelled(); ++rep) {
        for (int pass = 0; pass < 2 && !cancelled(); ++pass) {
            const ComparePass kind = pass == 0 ? ComparePass::Cached : ComparePass::Uncached;
            const double cpuStart = processorMs();
            Result result = runPass(pass == 0 ? cached : uncached, kind, rep);
            const double cpuMs = processorMs() - cpuStart;
            if (result.cancelled)
                break;
            ComparePassTimes& times = r.pass(kind);
            times.totalsMs.push_back(result.timings.totalMs);
            times.decodeMs.push_back(result.timings.decodeMs);
            times.stepMs.push_back(result.timings.stepMs);
            times.firstTokenMs.push_back(result.timings.firstTokenMs);
            times.processorMs.push_back(cpuMs);
            if (rep == 0) {
                times.first = std::move(result);
                if (hooks.onPassFinished)
                    hooks.onPassFinished(kind, times.first);
            } else {
                identical = identical && result.generatedIds == times.first.generatedIds;
            }
            progress(++done, total);
        }
        // A tenfold gap needs no third repeat; a busy spell that spoiled the figures needs
        // another, rather than no answer.
        if (rep + 1 >= 2 && rep + 1 < repeats && !cancelled() && comparisonSettled(r)) {
            repeats = rep + 1;
            progress(done, done);
            break;
        }
        if (rep + 1 == repeats && repeats < asked + kExtraRepeats && !cancelled() &&
            !comparisonConcludes(r)) {
            ++repeats;
            total += 2;
        }
    }
    r.repeats = static_cast<int>(std::min(r.cached.totalsMs.size(), r.uncached.totalsMs.size()));
    r.cancelled = cancelled() || r.repeats < repeats;
    if (r.cancelled)
        r.cached.first.cancelled = r.uncached.first.cancelled = true;
    r.identical =
        !r.cancelled && identical && r.cached.first.generatedIds == r.uncached.first.generatedIds;
    return r;
}

Spread spreadOf(const std::vector<double>& ms) {
    Spread s;
    s.count = static_cast<int>(ms.size());
    if (ms.empty())
        return s;
    const auto [lo, hi] = std::minmax_element(ms.begin(), ms.end());
    s.minMs = *lo;
    s.maxMs = *hi;
    s.medianMs = median(ms);
    return s;
}

namespace {

bool agree(const Spread& a, const Spread& b) {
    return a.count > 0 && b.count > 0 && a.medianMs > 0 && b.medianMs > 0 &&
           std::max(a.relative(), b.relative()) <= kMaxConclusiveSpread;
}

// Every repeat of one kind took less than every repeat of the other: with three of each,
// alternating, chance alone orders them so one time in twenty, however noisy each one is.
bool separated(const Spread& a, const Spread& b) {
    return a.count >= 3 && b.count >= 3 && a.medianMs > 0 &&
           (a.maxMs < b.minMs || b.maxMs < a.minMs);
}

} // namespace

bool comparisonSettled(const CompareResult& r) {
    const Spread wall[2] = {spreadOf(r.cached.totalsMs), spreadOf(r.uncached.totalsMs)};
    const Spread cpu[2] = {spreadOf(r.cached.processorMs), spreadOf(r.uncached.processorMs)};
    const auto apart = [](const Spread& a, const Spread& b) {
        return a.count >= 2 && b.count >= 2 && agree(a, b) &&
               (a.maxMs * kSettledGap < b.minMs || b.maxMs * kSettledGap < a.minMs);
    };
    return apart(cpu[0], cpu[1]) || apart(wall[0], wall[1]);
}

bool comparisonConcludes(const CompareResult& r) {
    const Spread wall[2] = {spreadOf(r.cached.totalsMs), spreadOf(r.uncached.totalsMs)};
    const Spread cpu[2] = {spreadOf(r.cached.processorMs), spreadOf(r.uncached.processorMs)};
    return agree(wall[0], wall[1]) || agree(cpu[0], cpu[1]) || separated(cpu[0], cpu[1]) ||
           separated(wall[0], wall[1]);
}

CompareFigures compareFigures(const CompareResult& r) {
    CompareFigures f;
    f.cached = spreadOf(r.cached.totalsMs);
    f.uncached = spreadOf(r.uncached.totalsMs);
    f.cachedDecode = spreadOf(r.cached.decodeMs);
    f.uncachedDecode = spreadOf(r.uncached.decodeMs);
    f.cachedCpu = spreadOf(r.cached.processorMs);
    f.uncachedCpu = spreadOf(r.uncached.processorMs);
    f.enoughRuns = f.cached.count > 0 && f.uncached.count > 0 && f.cached.medianMs > 0;
    if (!f.enoughRuns)
        return f;
    // Wall-clock times when the repeats agree; else the processor time each pass used, which
    // another program does not inflate; else whichever puts every repeat of one kind below
    // every repeat of the other.
    const bool wallAgrees = agree(f.cached, f.uncached);
    const bool cpuAgrees = agree(f.cachedCpu, f.uncachedCpu);
    const bool cpuSeparated = separated(f.cachedCpu, f.uncachedCpu);
    f.conclusive = wallAgrees || cpuAgrees || cpuSeparated || separated(f.cached, f.uncached);
    f.basis = !wallAgrees && (cpuAgrees || cpuSeparated) ? CompareFigures::Basis::ProcessorTime
                                                         : CompareFigures::Basis::WallClock;
    f.speedup = f.basis == CompareFigures::Basis::ProcessorTime
                    ? f.uncachedCpu.medianMs / f.cachedCpu.medianMs
                    : f.uncached.medianMs / f.cached.medianMs;
    f.decodeSpeedup =
        f.cachedDecode.medianMs > 0 ? f.uncachedDecode.medianMs / f.cachedDecode.medianMs : 0;
    return f;
}

bool AnswerSplit::nearTie() const {
    if (!greedy)
        return std::abs(cachedScore - uncachedScore) <=
               kNearTieScore * std::max(1.0, std::abs(cachedScore));
    return cachedProbability >= 0 && uncachedProbability >= 0 &&
           std::abs(cachedProbability - uncachedProbability) <= kNearTie;
}

std::optional<AnswerSplit> answersPart(const CompareResult& r) {
    const Result& c = r.cached.first;
    const Result& u = r.uncached.first;
    if (c.generatedIds.empty() || u.generatedIds.empty() || c.generatedIds == u.generatedIds)
        return std::nullopt;
    // generatedIds starts with the decoder start token, tokenLogprobs does not.
    const auto [ci, ui] = std::mismatch(c.generatedIds.begin() + 1, c.generatedIds.end(),
                                        u.generatedIds.begin() + 1, u.generatedIds.end());
    AnswerSplit split;
    split.token = static_cast<int>(ci - (c.generatedIds.begin() + 1));
    split.greedy = r.numBeams <= 1;
    split.cachedScore = c.score;
    split.uncachedScore = u.score;
    const auto probability = [&split](const Result& res) {
        const size_t at = static_cast<size_t>(split.token);
        return at < res.tokenLogprobs.size() ? std::exp(double(res.tokenLogprobs[at])) : -1.0;
    };
    split.cachedProbability = ci != c.generatedIds.end() ? probability(c) : -1.0;
    split.uncachedProbability = ui != u.generatedIds.end() ? probability(u) : -1.0;
    return split;
}

} // namespace florence
