#include "presentation/CompareVerdict.h"

#include <florence/stats.h>

#include <QObject>

#include <algorithm>

namespace florence::ui {

namespace {

QString msText(double ms) {
    return QString::fromStdString(formatMs(ms));
}

} // namespace

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

bool comparisonSettled(const CompareOutcome& o) {
    const Spread wall[2] = {spreadOf(o.cachedTotalsMs), spreadOf(o.uncachedTotalsMs)};
    const Spread cpu[2] = {spreadOf(o.cachedCpuMs), spreadOf(o.uncachedCpuMs)};
    const auto apart = [](const Spread& a, const Spread& b) {
        return a.count >= 2 && b.count >= 2 && agree(a, b) &&
               (a.maxMs * kSettledGap < b.minMs || b.maxMs * kSettledGap < a.minMs);
    };
    return apart(cpu[0], cpu[1]) || apart(wall[0], wall[1]);
}

bool comparisonConcludes(const CompareOutcome& o) {
    const Spread wall[2] = {spreadOf(o.cachedTotalsMs), spreadOf(o.uncachedTotalsMs)};
    const Spread cpu[2] = {spreadOf(o.cachedCpuMs), spreadOf(o.uncachedCpuMs)};
    return agree(wall[0], wall[1]) || agree(cpu[0], cpu[1]) || separated(cpu[0], cpu[1]) ||
           separated(wall[0], wall[1]);
}

namespace {

// "850 ms", "3.1 s", "31 s": as a person says a duration.
QString roundDuration(double ms) {
    if (ms < 1000)
        return QObject::tr("%1 ms").arg(ms, 0, 'f', ms < 10 ? 1 : 0);
    return QObject::tr("%1 s").arg(ms / 1000, 0, 'f', ms < 10'000 ? 1 : 0);
}

QString tokensText(int n) {
    return n == 1 ? QObject::tr("1 token") : QObject::tr("%1 tokens").arg(n);
}

// "With the cache, 256 tokens took 3.1 s instead of 31 s: 10× faster. Same answer."
QString headlineFor(const CompareVerdict& v, const CompareOutcome& o) {
    const bool cpu = v.basis == CompareVerdict::Basis::ProcessorTime;
    const Spread& with = cpu ? v.cachedCpu : v.cached;
    const Spread& without = cpu ? v.uncachedCpu : v.uncached;
    const int tokens = o.cached.generatedTokens();
    QString s = v.speedup >= 1.05
                    ? QObject::tr("With the cache, %1 took %2 instead of %3: %4× faster.")
                          .arg(tokensText(tokens))
                          .arg(roundDuration(with.medianMs), roundDuration(without.medianMs))
                          .arg(v.speedup, 0, 'f', v.speedup >= 10 ? 0 : 1)
                    : QObject::tr("At %1 the cache saves nothing yet: %2 with it, %3 without.")
                          .arg(tokensText(tokens))
                          .arg(roundDuration(with.medianMs), roundDuration(without.medianMs));
    if (!o.cancelled)
        s += QLatin1Char(' ') +
             (o.identical ? QObject::tr("Same answer.")
                          : QObject::tr("The answers differ (the cache changed the answer)."));
    return s;
}

} // namespace

CompareVerdict judgeComparison(const CompareOutcome& o) {
    CompareVerdict v;
    v.cached = spreadOf(o.cachedTotalsMs);
    v.uncached = spreadOf(o.uncachedTotalsMs);
    v.cachedDecode = spreadOf(o.cachedDecodeMs);
    v.uncachedDecode = spreadOf(o.uncachedDecodeMs);
    v.cachedCpu = spreadOf(o.cachedCpuMs);
    v.uncachedCpu = spreadOf(o.uncachedCpuMs);
    if (v.cached.count == 0 || v.uncached.count == 0 || v.cached.medianMs <= 0) {
        v.speedupText = QStringLiteral("–");
        v.conclusion = QObject::tr("Not enough runs to compare.");
        return v;
    }
    // Wall-clock times when the repeats agree; else the processor time each pass used, which
    // another program does not inflate; else whichever puts every repeat of one kind below
    // every repeat of the other.
    const bool wallAgrees = agree(v.cached, v.uncached);
    const bool cpuAgrees = agree(v.cachedCpu, v.uncachedCpu);
    const bool cpuSeparated = separated(v.cachedCpu, v.uncachedCpu);
    v.conclusive = wallAgrees || cpuAgrees || cpuSeparated || separated(v.cached, v.uncached);
    v.basis = !wallAgrees && (cpuAgrees || cpuSeparated) ? CompareVerdict::Basis::ProcessorTime
                                                         : CompareVerdict::Basis::WallClock;
    const bool cpu = v.basis == CompareVerdict::Basis::ProcessorTime;
    v.speedup = cpu ? v.uncachedCpu.medianMs / v.cachedCpu.medianMs
                    : v.uncached.medianMs / v.cached.medianMs;
    v.decodeSpeedup =
        v.cachedDecode.medianMs > 0 ? v.uncachedDecode.medianMs / v.cachedDecode.medianMs : 0;
    v.speedupText =
        (cpu ? QObject::tr("%1× in processor time, %2× decoding (medians of %3 alternating runs "
                           "each)")
             : QObject::tr("%1× overall, %2× decoding (medians of %3 alternating runs each)"))
            .arg(v.speedup, 0, 'f', 2)
            .arg(v.decodeSpeedup, 0, 'f', 2)
            .arg(std::min(v.cached.count, v.uncached.count));
    const QString why =
        QObject::tr("With the cache each new token attends to the stored keys and values of the "
                    "earlier ones; without it every step runs the whole answer so far through "
                    "the decoder again, so the cache saves more the longer the answer is.");
    if (!v.conclusive) {
        v.headline = QObject::tr("No verdict: the machine was too busy to measure.");
        v.conclusion = QObject::tr("The repeats disagree too much to conclude (cache on %1–%2, "
                                   "cache off %3–%4): the machine was busy; run again.")
                           .arg(msText(v.cached.minMs), msText(v.cached.maxMs),
                                msText(v.uncached.minMs), msText(v.uncached.maxMs));
        return v;
    }
    v.headline = headlineFor(v, o);
    const int tokens = o.cached.generatedTokens();
    v.conclusion =
        (v.speedup >= 1.0 ? QObject::tr("The cache made this %1-token answer %2× faster. ")
                                .arg(tokens)
                                .arg(v.speedup, 0, 'f', 2)
                          : QObject::tr("At %1 tokens the answer is too short for the cache to "
                                        "pay off. ")
                                .arg(tokens)) +
        why;
    if (cpu)
        v.conclusion += QLatin1Char(' ') +
                        QObject::tr("Another program was using the processor (wall-clock times "
                                    "varied: cache on %1–%2, cache off %3–%4), so these figures "
                                    "are the processor time each pass used, which it does not "
                                    "inflate.")
                            .arg(msText(v.cached.minMs), msText(v.cached.maxMs),
                                 msText(v.uncached.minMs), msText(v.uncached.maxMs));
    return v;
}

} // namespace florence::ui
