#include "run/AnswerDisplay.h"

namespace florence::ui {

std::string cleanAnswerText(const std::string& text) {
    return readableText(text); // the engine's, so batch's text sidecars read the same
}

ParsedAnswer displayAnswer(const ParsedAnswer& answer, const std::optional<Box>& askedRegion) {
    ParsedAnswer shown = answer;
    shown.text = cleanAnswerText(answer.text);
    for (AnswerItem& item : shown.items)
        item.label = cleanAnswerText(item.label);
    if (askedRegion && shown.items.empty() && !shown.text.empty()) {
        // "green star" for the box the user asked about: a row and an outline like any box.
        AnswerItem item;
        item.kind = AnswerItem::Kind::Box;
        item.label = shown.text;
        item.box = *askedRegion;
        item.score = answer.score; // the answer's confidence is this row's
        shown.items.push_back(item);
        if (shown.type == AnswerType::PureText)
            shown.type = AnswerType::DescriptionWithBboxes;
    }
    return shown;
}

} // namespace florence::ui
