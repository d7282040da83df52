#include "run/CompareVerdict.h"

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

CompareVerdict judgeComparison(const CompareOutcome& o) {
    CompareVerdict v;
    v.cached = spreadOf(o.cachedTotalsMs);
    v.uncached = spreadOf(o.uncachedTotalsMs);
    v.cachedDecode = spreadOf(o.cachedDecodeMs);
    v.uncachedDecode = spreadOf(o.uncachedDecodeMs);
    if (v.cached.count == 0 || v.uncached.count == 0 || v.cached.medianMs <= 0) {
        v.speedupText = QStringLiteral("–");
        v.conclusion = QObject::tr("Not enough runs to compare.");
        return v;
    }
    v.speedup = v.uncached.medianMs / v.cached.medianMs;
    v.decodeSpeedup =
        v.cachedDecode.medianMs > 0 ? v.uncachedDecode.medianMs / v.cachedDecode.medianMs : 0;
    v.speedupText = QObject::tr("%1× overall, %2× decoding (medians of %3 alternating runs each)")
                        .arg(v.speedup, 0, 'f', 2)
                        .arg(v.decodeSpeedup, 0, 'f', 2)
                        .arg(std::min(v.cached.count, v.uncached.count));
    const double worst = std::max(v.cached.relative(), v.uncached.relative());
    v.conclusive = worst <= kMaxConclusiveSpread;
    const QString why =
        QObject::tr("With the cache each new token attends to the stored keys and values of the "
                    "earlier ones; without it every step runs the whole answer so far through "
                    "the decoder again, so the cache saves more the longer the answer is.");
    if (!v.conclusive) {
        v.conclusion = QObject::tr("The repeats disagree too much to conclude (cache on %1–%2, "
                                   "cache off %3–%4): the machine was busy; run again.")
                           .arg(msText(v.cached.minMs), msText(v.cached.maxMs),
                                msText(v.uncached.minMs), msText(v.uncached.maxMs));
        return v;
    }
    const int tokens = o.cached.generatedTokens();
    v.conclusion =
        (v.speedup >= 1.0 ? QObject::tr("The cache made this %1-token answer %2× faster. ")
                                .arg(tokens)
                                .arg(v.speedup, 0, 'f', 2)
                          : QObject::tr("At %1 tokens the answer is too short for the cache to "
                                        "pay off. ")
                                .arg(tokens)) +
        why;
    return v;
}

} // namespace florence::ui
