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

// Where the answers of a comparison part, for "different": "from token 12: 41% with the cache,
// 40% without (a near tie, which the two ways' rounding can tip)"; "in a repeat of one pass"
// when the first answers agree but a repeat's did not.
QString answerSplitText(const CompareResult& measured);

} // namespace florence::ui
