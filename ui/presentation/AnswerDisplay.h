// What a person reads of an answer: labels and text without the model's special tokens
// (<s>, </s>, <pad>, <loc_N>, task tokens), and a region task's answer as one labelled row for
// the region it was asked about. The Hugging Face form (exports) keeps the parser's answer as
// it is; the table, the overlay and copied text use this.
//
//   ParsedAnswer shown = florence::ui::displayAnswer(parsed, Box{10, 10, 80, 60});
//   QString text = florence::ui::cleanAnswerText(rawText);   // "A red circle."
#pragma once

#include <florence/answer.h>
#include <florence/tasks.h>

#include <QString>

#include <optional>
#include <string>

namespace florence::ui {

// `text` without anything in angle brackets that is a model token, whitespace runs squeezed
// and trimmed.
std::string cleanAnswerText(const std::string& text);

// `answer` with clean labels and text. For a region task, `askedRegion` is the box the user
// dragged: an answer without geometry becomes one box item there, labelled with the answer.
ParsedAnswer displayAnswer(const ParsedAnswer& answer, const std::optional<Box>& askedRegion);

// How much the answer holds, as the results' summary says it: "text answer", "1 item", "4 items",
// or, for a task that finds things but found none, "no items, text only" when the model wrote
// text instead (the table then holds that text's row).
QString itemCountText(const ParsedAnswer& answer);

// What a person calls a task: "Object detection" for "<OD>"; an unknown token as it is.
QString taskDisplayName(const QString& token);

} // namespace florence::ui
