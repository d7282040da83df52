#include <florence/answer.h>
#include <florence/tasks.h>

#include <cctype>
#include <regex>

namespace florence {

namespace {

// "<s>", "</s>", "<pad>", "<unk>", "<loc_12>", "<OD>", "<poly>", "<sep>": a model token is a
// short run without spaces between angle brackets. Text a model writes ("a < b") has spaces.
bool isModelToken(const std::string& s, size_t open, size_t close) {
    if (close - open < 2 || close - open > 40)
        return false;
    for (size_t i = open + 1; i < close; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (!(std::isalnum(c) || c == '_' || c == '/'))
            return false;
    }
    return true;
}

} // namespace

std::string readableText(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    bool pendingSpace = false;
    for (size_t i = 0; i < text.size();) {
        if (text[i] == '<') {
            const size_t close = text.find('>', i);
            if (close != std::string::npos && isModelToken(text, i, close)) {
                // A token between two words separates them ("red circle<loc_1>blue square").
                pendingSpace = pendingSpace || !out.empty();
                i = close + 1;
                continue;
            }
        }
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (std::isspace(c)) {
            pendingSpace = !out.empty();
        } else {
            if (pendingSpace)
                out += ' ';
            pendingSpace = false;
            out += text[i];
        }
        ++i;
    }
    return out;
}

ParsedAnswer readableAnswer(const ParsedAnswer& answer, const std::optional<Box>& askedRegion) {
    ParsedAnswer shown = answer;
    shown.text = readableText(answer.text);
    for (AnswerItem& item : shown.items)
        item.label = readableText(item.label);
    if (askedRegion && shown.items.empty() && !shown.text.empty()) {
        // "green star" for the box the user asked about: an item like any box.
        AnswerItem item;
        item.kind = AnswerItem::Kind::Box;
        item.label = shown.text;
        item.box = *askedRegion;
        item.score = answer.score; // the answer's confidence is this item's
        shown.items.push_back(item);
        if (shown.type == AnswerType::PureText)
            shown.type = AnswerType::DescriptionWithBboxes;
    }
    return shown;
}

std::optional<Box> regionInPrompt(const std::string& prompt, int imageWidth, int imageHeight) {
    static const std::regex four(
        "<loc_(\\d{1,3})><loc_(\\d{1,3})><loc_(\\d{1,3})><loc_(\\d{1,3})>");
    std::smatch m;
    if (imageWidth <= 0 || imageHeight <= 0 || !std::regex_search(prompt, m, four))
        return std::nullopt;
    const auto bin = [&](int i) { return std::stoi(m[i].str()); };
    return Box{binToPixel(bin(1), imageWidth), binToPixel(bin(2), imageHeight),
               binToPixel(bin(3), imageWidth), binToPixel(bin(4), imageHeight)};
}

std::optional<Box> askedRegion(const ParsedAnswer& answer, const std::string& prompt) {
    try {
        if (taskInfo(answer.task).input != TaskInput::Region)
            return std::nullopt;
    } catch (const TaskError&) {
        return std::nullopt; // a task of the model's own
    }
    return regionInPrompt(prompt, answer.imageWidth, answer.imageHeight);
}

} // namespace florence
