#include "presentation/CompareVerdict.h"

#include <florence/stats.h>

#include <QObject>

#include <algorithm>

namespace florence::ui {

namespace {

QString msText(double ms) {
    return QString::fromStdString(formatMs(ms));
}

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
    if (!o.measured.cancelled)
        s += QLatin1Char(' ') +
             (o.measured.identical
                  ? QObject::tr("Same answer.")
                  : QObject::tr("The answers differ %1.").arg(answerSplitText(o.measured)));
    return s;
}

QString percent(double p) {
    return QString::fromStdString(florence::formatPercent(p));
}

} // namespace

QString answerSplitText(const CompareResult& measured) {
    const std::optional<AnswerSplit> split = answersPart(measured);
    if (!split)
        return QObject::tr("in a repeat of one pass");
    const QString where = QObject::tr("from token %1").arg(split->token + 1);
    if (split->cachedProbability < 0 || split->uncachedProbability < 0)
        return QObject::tr("%1 (one answer ends there)").arg(where);
    QString s =
        QObject::tr("%1: %2 with the cache, %3 without")
            .arg(where, percent(split->cachedProbability), percent(split->uncachedProbability));
    if (!split->greedy) {
        // The answer is the best-scoring hypothesis, not each token the likeliest.
        s += QObject::tr("; beam scores %1 and %2")
                 .arg(split->cachedScore, 0, 'f', 3)
                 .arg(split->uncachedScore, 0, 'f', 3);
        if (split->nearTie())
            s += QObject::tr(" (hypotheses nearly tied, which the two ways' rounding can swap)");
    } else if (split->nearTie()) {
        s += QObject::tr(" (a near tie, which the two ways' rounding can tip)");
    } else {
        s += QObject::tr(" (more than a near tie apart: the two ways computed differently)");
    }
    return s;
}

CompareVerdict judgeComparison(const CompareOutcome& o) {
    CompareVerdict v;
    static_cast<CompareFigures&>(v) = compareFigures(o.measured);
    if (!v.enoughRuns) {
        v.speedupText = QStringLiteral("–");
        v.conclusion = QObject::tr("Not enough runs to compare.");
        return v;
    }
    const bool cpu = v.basis == CompareVerdict::Basis::ProcessorTime;
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
        // No ratio either: medians of repeats that disagree read as a result ("0.90× decoding")
        // beside a headline that says there is none.
        v.speedupText = QObject::tr("– (no verdict: the repeats disagree)");
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
