// Confidence scores as the window shows them: the minimum-score filter that the overlay, the
// table and the exports share, and the score's text. Items without a score (parsed from text
// alone, e.g. while tokens stream in) are never hidden: there is nothing to compare.
//
//   ParsedAnswer shown = florence::ui::withMinScore(answer, 0.5);   // items scored >= 0.5
//   QString s = florence::ui::scoreText(item.score);                 // "0.973", "" unscored
//   cell->setToolTip(florence::ui::scoreToolTip(item.score));       // what 0.973 means
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

// What the score is and what it is not, for tooltips where scores are shown: the mean
// probability of the item's own tokens, not an IoU and not a detection confidence.
QString scoreExplanation();
// One score's tooltip: its value and the explanation; for `textAnswer` (a caption's or an OCR
// answer's row) the score of the answer's words. "" for an item without a score.
QString scoreToolTip(double score, bool textAnswer = false);

} // namespace florence::ui
