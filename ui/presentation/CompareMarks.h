// Where the cache's saving shows along an answer: the decoding time summed token by token, the
// speedup at a few marks (32, 128, 256 tokens, those the answer reached) and at its end, and the
// time to first token, which the cache does not change. Medians over a comparison's repeats.
//
//   const CompareMarks m = compareMarks(outcome);
//   marksLabel->setText(m.speedupText);       // "32 tokens: 3.10× · 128: 6.80× · 256 (end): 10.2×"
//   firstTokenLabel->setText(m.firstTokenText);
#pragma once

#include "controllers/WorkerTypes.h"

#include <QString>

#include <vector>

namespace florence::ui {

// The marks along an answer at which a comparison states the speedup.
constexpr int kSpeedupMarks[] = {32, 128, 256};

// Elapsed decoding time after each token: element i is the sum of the first i + 1 steps.
std::vector<double> cumulativeMs(const std::vector<double>& stepMs);

struct SpeedupMark {
    int tokens = 0;
    double cachedMs = 0, uncachedMs = 0; // median decoding time of the first `tokens` tokens
    double speedup = 0;                  // uncachedMs / cachedMs
    bool end = false;                    // the answer's last token
};

struct CompareMarks {
    std::vector<SpeedupMark> marks; // those reached by both passes, then the end
    double cachedFirstTokenMs = 0, uncachedFirstTokenMs = 0; // medians
    QString speedupText;    // decoding: "32 tokens: 3.10× · 128: 6.80× · 256 (end): 10.2×"
    QString firstTokenText; // "cache on 812 ms, cache off 809 ms"
};

// From every repeat's steps and first-token times (CompareOutcome); empty texts when a pass has
// no repeat with a token.
CompareMarks compareMarks(const CompareOutcome& outcome);

} // namespace florence::ui
