// Confidence scores as the window shows them: the minimum-score filter that the overlay, the
// table and the exports share, and the score's text. Items without a score (parsed from text
// alone, e.g. while tokens stream in) are never hidden: there is nothing to compare.
//
//   ParsedAnswer shown = florence::ui::withMinScore(answer, 0.5);   // items scored >= 0.5
//   QString s = florence::ui::scoreText(item.score);                 // "0.973", "" unscored
#pragma once

#include <florence/answer.h>

#include <QString>

namespace florence::ui {

// Whether `score` is a confidence (in (0, 1]) rather than "not scored" (-1).
bool isScored(double score);

// `answer` without the items scored below `minScore`; the answer's text and score stay.
ParsedAnswer withMinScore(const ParsedAnswer& answer, double minScore);

// Three decimals ("0.973"), or "" for an item without a score.
QString scoreText(double score);

} // namespace florence::ui
