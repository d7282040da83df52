// What a comparison says to the user, on top of the figures it may rest on
// (florence::compareFigures: wall-clock medians when the repeats agree, else processor time,
// no verdict when both disagree).
//
//   CompareVerdict v = judgeComparison(outcome);
//   headline->setText(v.headline);  // "With the cache, 256 tokens took 3.1 s instead of 31 s: …"
//   speedupLabel->setText(v.speedupText);        // "3.20× overall, 4.05× decoding"
//   noteLabel->setText(v.conclusion);
#pragma once

#include "controllers/WorkerTypes.h"

#include <florence/compare_job.h>

#include <QString>

namespace florence::ui {

struct CompareVerdict : CompareFigures {
    QString headline;    // one sentence a newcomer reads: the times, the speedup, same answer
    QString speedupText; // the figures behind it
    QString conclusion;  // why, and what the figures are based on
};

CompareVerdict judgeComparison(const CompareOutcome& outcome);

} // namespace florence::ui
