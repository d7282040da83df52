// What a comparison may conclude. Each pass ran several times, alternating; the verdict uses
// the medians and refuses to conclude when the repeats of a pass disagree too much (something
// else was using the machine), instead of presenting noise as the cache's effect.
//
//   CompareVerdict v = judgeComparison(outcome);
//   speedupLabel->setText(v.speedupText);        // "3.20× overall, 4.05× decoding"
//   noteLabel->setText(v.conclusion);            // "… the machine was busy; run again."
#pragma once

#include "run/WorkerTypes.h"

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
    Spread cached, uncached;             // totals
    Spread cachedDecode, uncachedDecode; // decoding only
    double speedup = 0;                  // median uncached total / median cached total
    double decodeSpeedup = 0;
    bool conclusive = false;
    QString speedupText;
    QString conclusion;
};

// Above this relative spread of a pass's totals the repeats disagree too much to conclude.
constexpr double kMaxConclusiveSpread = 0.3;

CompareVerdict judgeComparison(const CompareOutcome& outcome);

} // namespace florence::ui
