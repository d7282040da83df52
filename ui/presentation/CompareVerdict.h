// What a comparison may conclude. Each pass ran several times, alternating; the verdict uses
// the medians of the wall-clock totals when the repeats agree, and otherwise (another program
// was using the cores) the processor time each pass used, which that program does not inflate.
// Only when both disagree does it refuse to conclude, instead of presenting noise as the
// cache's effect.
//
//   CompareVerdict v = judgeComparison(outcome);
//   headline->setText(v.headline);  // "With the cache, 256 tokens took 3.1 s instead of 31 s: …"
//   speedupLabel->setText(v.speedupText);        // "3.20× overall, 4.05× decoding"
//   noteLabel->setText(v.conclusion);
#pragma once

#include "controllers/WorkerTypes.h"

#include <QString>

#include <vector>

namespace florence::ui {

struct Spread {
    int count = 0;
    double medianMs = 0, minMs = 0, maxMs = 0;
    // (max - min) / median; 0 for fewer than two values.
    double relative() const { return count > 1 && medianMs > 0 ? (maxMs - minMs) / medianMs : 0; }
};

Spread spreadOf(const std::vector<double>& ms);

struct CompareVerdict {
    Spread cached, uncached;             // wall-clock totals
    Spread cachedDecode, uncachedDecode; // decoding only
    Spread cachedCpu, uncachedCpu;       // processor time of each pass
    double speedup = 0;                  // median uncached / median cached, on `basis`
    double decodeSpeedup = 0;
    bool conclusive = false;
    enum class Basis { WallClock, ProcessorTime } basis = Basis::WallClock;
    QString headline;    // one sentence a newcomer reads: the times, the speedup, same answer
    QString speedupText; // the figures behind it
    QString conclusion;  // why, and what the figures are based on
};

// Whether the repeats allow a verdict: those of each pass agree (in wall-clock or processor
// time), or every repeat of one pass took less than every repeat of the other. The worker runs
// more repeats while they do not.
bool comparisonConcludes(const CompareOutcome& outcome);

// Whether the repeats so far already settle it, so the ones still planned can be skipped:
// at least two of each, agreeing, and the slower of one pass at least kSettledGap times faster
// than the faster of the other. At Florence-2-base an uncached pass takes minutes on a slow or
// busy machine; a third repeat of a tenfold difference would only confirm it.
bool comparisonSettled(const CompareOutcome& outcome);
constexpr double kSettledGap = 2.0;

// Above this relative spread of a pass's totals the repeats disagree too much to conclude.
constexpr double kMaxConclusiveSpread = 0.3;

CompareVerdict judgeComparison(const CompareOutcome& outcome);

} // namespace florence::ui
