#include <florence/answer.h>

#include <cctype>

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

} // namespace florence
