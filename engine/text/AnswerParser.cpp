#include <florence/answer.h>

#include "text/AnswerTokens.h"

#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

// The parsing below mirrors Florence2PostProcesser in the original processing_florence2.py
// regular expression by regular expression, so that odd outputs (labels made of "loc_12>",
// dropped labels with a line break, …) come out exactly as the original's.

namespace florence {

namespace {

// The text the regular expressions run on. Bytes are widened one-to-one to QChars (Latin-1), so
// offsets stay byte offsets of the UTF-8 text, and a stream cut inside a multi-byte character
// cannot disturb them; every pattern only looks at ASCII characters.
struct Cleaned {
    QString text;
    std::vector<int> origin; // origin[i]: byte offset in the generated text of text[i]

    int originBegin(qsizetype begin) const { return origin[size_t(begin)]; }
    int originEnd(qsizetype end) const { return origin[size_t(end - 1)] + 1; }
};

// Removes the tokens one after another, like the original's chained str.replace calls (so a
// token that only forms once an earlier one is removed stays, as it does there).
Cleaned removeTokens(const std::string& generated, std::initializer_list<const char*> tokens) {
    std::string text = generated;
    std::vector<int> origin(text.size());
    std::iota(origin.begin(), origin.end(), 0);
    for (const char* token : tokens) {
        const std::string t(token);
        std::string kept;
        std::vector<int> keptOrigin;
        kept.reserve(text.size());
        keptOrigin.reserve(text.size());
        for (size_t i = 0; i < text.size();) {
            if (text.compare(i, t.size(), t) == 0) {
                i += t.size();
                continue;
            }
            kept.push_back(text[i]);
            keptOrigin.push_back(origin[i]);
            ++i;
        }
        text.swap(kept);
        origin.swap(keptOrigin);
    }
    return {QString::fromLatin1(text.data(), qsizetype(text.size())), std::move(origin)};
}

std::string bytesOf(const QString& latin1) {
    return latin1.toLatin1().toStdString();
}

std::string replaceAll(std::string text, const std::string& token) {
    for (size_t at = text.find(token); at != std::string::npos; at = text.find(token, at))
        text.erase(at, token.size());
    return text;
}

// Multi-byte UTF-8 forms of the characters Python's str.strip() removes besides ASCII ones.
const char* const kUnicodeSpaces[] = {
    "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
    "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
    "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8",
    "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80",
};

bool isAsciiSpace(unsigned char c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
}

// Python's str.strip() on UTF-8 bytes.
std::string pythonStrip(const std::string& s) {
    size_t begin = 0, end = s.size();
    for (bool more = true; more && begin < end;) {
        more = false;
        if (isAsciiSpace(static_cast<unsigned char>(s[begin]))) {
            ++begin;
            more = true;
            continue;
        }
        for (const char* space : kUnicodeSpaces) {
            const std::string sp(space);
            if (end - begin >= sp.size() && s.compare(begin, sp.size(), sp) == 0) {
                begin += sp.size();
                more = true;
                break;
            }
        }
    }
    for (bool more = true; more && begin < end;) {
        more = false;
        if (isAsciiSpace(static_cast<unsigned char>(s[end - 1]))) {
            --end;
            more = true;
            continue;
        }
        for (const char* space : kUnicodeSpaces) {
            const std::string sp(space);
            if (end - begin >= sp.size() && s.compare(end - sp.size(), sp.size(), sp) == 0) {
                end -= sp.size();
                more = true;
                break;
            }
        }
    }
    return s.substr(begin, end - begin);
}

// phrase.encode('ascii', errors='ignore'): the original drops every non-ASCII character.
std::string asciiOnly(const std::string& s) {
    std::string out;
    std::copy_if(s.begin(), s.end(), std::back_inserter(out),
                 [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    return out;
}

// int() of a \d+ group. The model only emits 0..999, but text can spell out any digits; bins
// saturate instead of overflowing.
int parseBin(QStringView digits) {
    constexpr long long kMaxBin = 1'000'000'000;
    long long value = 0;
    for (QChar c : digits)
        value = std::min(value * 10 + (c.unicode() - u'0'), kMaxBin);
    return static_cast<int>(value);
}

const std::set<std::string>& phraseGroundingBlackList() {
    // Verbatim from the original (duplicates and all); matched case-sensitively after strip().
    static const std::set<std::string> kList = {"it",         "I",
                                                "me",         "mine",
                                                "you",        "your",
                                                "yours",      "he",
                                                "him",        "his",
                                                "she",        "her",
                                                "hers",       "they",
                                                "them",       "their",
                                                "theirs",     "one",
                                                "oneself",    "we",
                                                "us",         "our",
                                                "ours",       "you",
                                                "your",       "yours",
                                                "they",       "them",
                                                "their",      "theirs",
                                                "mine",       "yours",
                                                "his",        "hers",
                                                "its",        "ours",
                                                "yours",      "theirs",
                                                "myself",     "yourself",
                                                "himself",    "herself",
                                                "itself",     "ourselves",
                                                "yourselves", "themselves",
                                                "this",       "that",
                                                "these",      "those",
                                                "who",        "whom",
                                                "whose",      "which",
                                                "what",       "who",
                                                "whom",       "whose",
                                                "which",      "that",
                                                "all",        "another",
                                                "any",        "anybody",
                                                "anyone",     "anything",
                                                "each",       "everybody",
                                                "everyone",   "everything",
                                                "few",        "many",
                                                "nobody",     "none",
                                                "one",        "several",
                                                "some",       "somebody",
                                                "someone",    "something",
                                                "each other", "one another",
                                                "myself",     "yourself",
                                                "himself",    "herself",
                                                "itself",     "ourselves",
                                                "yourselves", "themselves",
                                                "the image",  "image",
                                                "images",     "the",
                                                "a",          "an",
                                                "a group",    "other objects",
                                                "lots",       "a set"};
    return kList;
}

// Compiled once per thread: a QRegularExpression is reentrant, not documented thread-safe, and
// the parser runs on the engine's worker thread as well as in tests.
const QRegularExpression& regex(const char* pattern) {
    thread_local std::map<const char*, QRegularExpression> cache;
    auto it = cache.find(pattern);
    if (it == cache.end())
        it = cache.emplace(pattern, QRegularExpression(QString::fromLatin1(pattern))).first;
    return it->second;
}

constexpr const char* kPhrasePattern =
    R"(^\s*(.*?)(?=<od>|</od>|<box>|</box>|<bbox>|</bbox>|<loc_))";
constexpr const char* kBoxPattern = R"(<loc_(\d+)><loc_(\d+)><loc_(\d+)><loc_(\d+)>)";

// parse_description_with_bboxes_from_text_and_spans, and with blackList set
// parse_phrase_grounding_from_text_and_spans (the two differ only by the black list).
void parseBboxes(const std::string& generated, int width, int height, bool allowEmptyPhrase,
                 bool blackList, std::vector<AnswerItem>& items) {
    const Cleaned c = removeTokens(generated, {"<s>", "</s>", "<pad>"});
    const char* phrasesPattern =
        allowEmptyPhrase ? R"((?:(?:<loc_\d+>){4,}))" : R"(([^<]+(?:<loc_\d+>){4,}))";
    auto phrases = regex(phrasesPattern).globalMatch(c.text);
    while (phrases.hasNext()) {
        const QRegularExpressionMatch phraseMatch = phrases.next();
        // The original strips "<obj>" here, but neither pattern can match one.
        const QString phraseText = phraseMatch.captured(0);
        const QRegularExpressionMatch phrase = regex(kPhrasePattern).match(phraseText);
        if (!phrase.hasMatch())
            continue;
        const std::string label = pythonStrip(bytesOf(phrase.captured(0)));
        if (blackList && phraseGroundingBlackList().count(label) != 0)
            continue;
        auto boxes = regex(kBoxPattern).globalMatch(phraseText);
        while (boxes.hasNext()) {
            const QRegularExpressionMatch boxMatch = boxes.next();
            AnswerItem item;
            item.kind = AnswerItem::Kind::Box;
            item.label = asciiOnly(label);
            std::vector<int> bins;
            for (int i = 1; i <= 4; ++i)
                bins.push_back(parseBin(boxMatch.capturedView(i)));
            item.box = {binToPixel(bins[0], width), binToPixel(bins[1], height),
                        binToPixel(bins[2], width), binToPixel(bins[3], height)};
            item.bins.push_back(std::move(bins));
            const qsizetype start = phraseMatch.capturedStart(0);
            item.charBegin = c.originBegin(start);
            item.charEnd = c.originEnd(start + boxMatch.capturedEnd(0));
            if (phrase.capturedLength(0) > 0)
                item.ownChars.push_back(
                    {item.charBegin, c.originEnd(start + phrase.capturedEnd(0))});
            item.ownChars.push_back(
                {c.originBegin(start + boxMatch.capturedStart(0)), item.charEnd});
            items.push_back(std::move(item));
        }
    }
}

// parse_ocr_from_text_and_spans (its area threshold is 0 in the original's config: no filter).
void parseOcr(const std::string& generated, int width, int height, std::vector<AnswerItem>& items) {
    // Only <s> is removed: a leading "</s>" stays part of the first label, as in the original.
    const Cleaned c = removeTokens(generated, {"<s>"});
    auto lines = regex(R"((.+?)<loc_(\d+)><loc_(\d+)><loc_(\d+)><loc_(\d+)>)"
                       R"(<loc_(\d+)><loc_(\d+)><loc_(\d+)><loc_(\d+)>)")
                     .globalMatch(c.text);
    while (lines.hasNext()) {
        const QRegularExpressionMatch line = lines.next();
        AnswerItem item;
        item.kind = AnswerItem::Kind::Quad;
        item.label = bytesOf(line.captured(1));
        std::vector<int> bins;
        for (int i = 0; i < 8; ++i) {
            bins.push_back(parseBin(line.capturedView(i + 2)));
            item.quad.push_back(binToPixel(bins.back(), i % 2 == 0 ? width : height));
        }
        item.bins.push_back(std::move(bins));
        item.charBegin = c.originBegin(line.capturedStart(0));
        item.charEnd = c.originEnd(line.capturedEnd(0));
        item.ownChars.push_back({item.charBegin, item.charEnd});
        items.push_back(std::move(item));
    }
}

// parse_description_with_polygons_from_text_and_spans (with_box_at_start is never set).
void parsePolygons(const std::string& generated, int width, int height, bool allowEmptyPhrase,
                   std::vector<AnswerItem>& items) {
    const Cleaned c = removeTokens(generated, {"<s>", "</s>", "<pad>"});
    const char* phrasesPattern = allowEmptyPhrase
                                     ? R"((?:(?:<loc_\d+>|<sep>|<poly>|</poly>){4,}))"
                                     : R"(([^<]+(?:<loc_\d+>|<sep>|<poly>|</poly>){4,}))";
    auto phrases = regex(phrasesPattern).globalMatch(c.text);
    while (phrases.hasNext()) {
        const QRegularExpressionMatch phraseMatch = phrases.next();
        const QString phraseText = phraseMatch.captured(0);
        const qsizetype phraseStart = phraseMatch.capturedStart(0);
        // [^<]+ can start inside a location token ("loc_12><loc_…"); the original cuts that off
        // before reading the label.
        QString phraseTextStrip = phraseText;
        phraseTextStrip.remove(regex(R"(^loc_\d+>)"));
        if (phraseTextStrip.isEmpty() && !allowEmptyPhrase)
            continue;
        const QRegularExpressionMatch phrase =
            regex(R"(^\s*(.*?)(?=<od>|</od>|<box>|</box>|<bbox>|</bbox>|<loc_|<poly>))")
                .match(phraseTextStrip);
        if (!phrase.hasMatch())
            continue;
        // No ASCII filtering here: the original keeps non-ASCII labels for polygons.
        const std::string label = pythonStrip(bytesOf(phrase.captured(0)));

        // One object per <poly>…</poly>; without both markers the whole phrase is one object.
        struct Instance {
            QString text;
            qsizetype offset; // in phraseText
        };
        std::vector<Instance> instances;
        if (phraseText.contains(QLatin1String("<poly>")) &&
            phraseText.contains(QLatin1String("</poly>"))) {
            auto polys = regex(R"(<poly>(.*?)</poly>)").globalMatch(phraseText);
            while (polys.hasNext()) {
                const QRegularExpressionMatch poly = polys.next();
                instances.push_back({poly.captured(1), poly.capturedStart(1)});
            }
        } else {
            instances.push_back({phraseText, 0});
        }

        for (const Instance& instance : instances) {
            AnswerItem item;
            item.kind = AnswerItem::Kind::Polygon;
            item.label = label;
            qsizetype lastEnd = -1;
            auto polygons = regex(R"(((?:<loc_\d+>)+)(?:<sep>|$))").globalMatch(instance.text);
            while (polygons.hasNext()) {
                const QRegularExpressionMatch polygon = polygons.next();
                std::vector<int> bins;
                auto locs = regex(R"(<loc_(\d+)>)").globalMatch(polygon.captured(1));
                while (locs.hasNext())
                    bins.push_back(parseBin(locs.next().capturedView(1)));
                // An unpaired last coordinate is abandoned, as in the original.
                if (bins.size() % 2 == 1)
                    bins.pop_back();
                std::vector<double> points;
                for (size_t i = 0; i < bins.size(); ++i)
                    points.push_back(binToPixel(bins[i], i % 2 == 0 ? width : height));
                item.polygons.push_back(std::move(points));
                item.bins.push_back(std::move(bins));
                lastEnd = polygon.capturedEnd(1);
            }
            if (item.polygons.empty())
                continue;
            item.charBegin = c.originBegin(phraseStart);
            item.charEnd = c.originEnd(phraseStart + instance.offset + lastEnd);
            // The label is what precedes the phrase's first token; the geometry this object's.
            const qsizetype labelEnd = phraseText.indexOf(QLatin1Char('<'));
            if (labelEnd > 0)
                item.ownChars.push_back({item.charBegin, c.originEnd(phraseStart + labelEnd)});
            item.ownChars.push_back({c.originBegin(phraseStart + instance.offset), item.charEnd});
            items.push_back(std::move(item));
        }
    }
}

AnswerType answerTypeOf(const std::string& task) {
    try {
        return taskInfo(task).answerType; // a standard task or a package's own
    } catch (const TaskError&) {
        // The original's tasks_answer_post_processing_type.get(task, 'pure_text').
        return AnswerType::PureText;
    }
}

} // namespace

std::string answerTypeName(AnswerType type) {
    switch (type) {
    case AnswerType::PureText:
        return "pure_text";
    case AnswerType::DescriptionWithBboxes:
        return "description_with_bboxes";
    case AnswerType::Bboxes:
        return "bboxes";
    case AnswerType::Ocr:
        return "ocr";
    case AnswerType::PhraseGrounding:
        return "phrase_grounding";
    case AnswerType::Polygons:
        return "polygons";
    case AnswerType::DescriptionWithBboxesOrPolygons:
        return "description_with_bboxes_or_polygons";
    }
    return "pure_text";
}

std::optional<AnswerType> answerTypeNamed(const std::string& name) {
    for (AnswerType type : {AnswerType::PureText, AnswerType::DescriptionWithBboxes,
                            AnswerType::Bboxes, AnswerType::Ocr, AnswerType::PhraseGrounding,
                            AnswerType::Polygons, AnswerType::DescriptionWithBboxesOrPolygons})
        if (answerTypeName(type) == name)
            return type;
    return std::nullopt;
}

ParsedAnswer parseAnswer(const std::string& task, const std::string& generatedText, int imageWidth,
                         int imageHeight) {
    ParsedAnswer answer;
    answer.task = task;
    answer.type = answerTypeOf(task);
    answer.imageWidth = imageWidth;
    answer.imageHeight = imageHeight;
    if (answer.type == AnswerType::PureText) {
        answer.text = replaceAll(replaceAll(generatedText, "<s>"), "</s>");
        return answer;
    }
    answer.text = replaceAll(replaceAll(replaceAll(generatedText, "<s>"), "</s>"), "<pad>");

    const int w = imageWidth, h = imageHeight;
    switch (answer.type) {
    case AnswerType::PureText:
        break;
    case AnswerType::DescriptionWithBboxes:
        parseBboxes(generatedText, w, h, false, false, answer.items);
        break;
    case AnswerType::Bboxes:
        parseBboxes(generatedText, w, h, true, false, answer.items);
        break;
    case AnswerType::PhraseGrounding:
        parseBboxes(generatedText, w, h, false, true, answer.items);
        break;
    case AnswerType::Ocr:
        parseOcr(generatedText, w, h, answer.items);
        break;
    case AnswerType::Polygons:
        parsePolygons(generatedText, w, h, true, answer.items);
        break;
    case AnswerType::DescriptionWithBboxesOrPolygons:
        // The original supports either polygons or boxes in one answer, never both, and decides
        // on the raw text; while streaming, boxes therefore turn into nothing once "<poly>" shows.
        if (generatedText.find("<poly>") != std::string::npos)
            parsePolygons(generatedText, w, h, false, answer.items);
        else
            parseBboxes(generatedText, w, h, false, false, answer.items);
        break;
    }
    return answer;
}

ParsedAnswer parseAnswerTokens(const std::string& task, const std::vector<std::string>& tokenTexts,
                               int imageWidth, int imageHeight,
                               const std::vector<float>& tokenLogprobs) {
    std::string text;
    std::vector<int> tokenEnds; // byte offset where each token ends
    for (const std::string& piece : tokenTexts) {
        text += piece;
        tokenEnds.push_back(int(text.size()));
    }
    // Tokens [first, last) overlapping bytes [begin, end): the first token ending after the first
    // byte through the first token ending at or after the last one.
    const auto tokensOf = [&](int begin, int end) {
        const int first =
            int(std::upper_bound(tokenEnds.begin(), tokenEnds.end(), begin) - tokenEnds.begin());
        const int last =
            int(std::lower_bound(tokenEnds.begin(), tokenEnds.end(), end) - tokenEnds.begin()) + 1;
        return std::make_pair(first, std::min(last, int(tokenEnds.size())));
    };
    // tokenLogprobs[i] belongs to token i + offset.
    const size_t n = std::min(tokenLogprobs.size(), tokenTexts.size());
    const size_t offset = tokenTexts.size() - n;
    const auto probability = [&](size_t token) {
        return std::exp(double(tokenLogprobs[token - offset + (tokenLogprobs.size() - n)]));
    };

    ParsedAnswer answer = parseAnswer(task, text, imageWidth, imageHeight);
    for (AnswerItem& item : answer.items) {
        if (item.charBegin < 0 || item.charEnd <= item.charBegin)
            continue;
        std::tie(item.tokenBegin, item.tokenEnd) = tokensOf(item.charBegin, item.charEnd);
        if (n == 0)
            continue;
        std::set<size_t> own;
        for (const auto& [begin, end] : item.ownChars) {
            const auto [first, last] = tokensOf(begin, end);
            for (int t = std::max(first, int(offset)); t < last; ++t)
                own.insert(size_t(t));
        }
        double sum = 0;
        for (size_t t : own)
            sum += probability(t);
        if (!own.empty())
            item.score = sum / double(own.size());
    }
    if (n > 0) {
        // The answer's words: location tokens echo a region (<REGION_TO_CATEGORY>) or belong to
        // items, which have scores of their own. An answer of special tokens only (an <OCR> that
        // found no text) is as sure as its </s> was.
        double sum = 0, all = 0;
        int count = 0;
        for (size_t t = offset; t < tokenTexts.size(); ++t) {
            const std::string& piece = tokenTexts[t];
            all += probability(t);
            if (piece == "<s>" || piece == "</s>" || piece == "<pad>" ||
                piece.rfind("<loc_", 0) == 0)
                continue;
            sum += probability(t);
            ++count;
        }
        answer.score = count > 0 ? sum / count : all / double(n);
    }
    return answer;
}

} // namespace florence
