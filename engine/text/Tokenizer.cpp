#include <florence/tokenizer.h>

#include <florence/files.h>

#include <QByteArray>
#include <QChar>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <QJsonValue>
#include <QString>

#include <algorithm>
#include <array>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <string_view>

namespace florence {

namespace {

// Florence-2's processor appends these after BART's vocabulary, in exactly this order; the
// model's embedding rows 50265–51288 were trained with these ids.
constexpr const char* kTokensBeforeLoc[] = {"<od>", "</od>", "<ocr>", "</ocr>"};
// Space-separated to keep the list readable; "desciption" is the real (misspelt) token.
constexpr std::string_view kTokensAfterLoc =
    "<cap> </cap> <ncap> </ncap> <dcap> </dcap> <grounding> </grounding> <seg> </seg> <sep> "
    "<region_cap> </region_cap> <region_to_desciption> </region_to_desciption> <proposal> "
    "</proposal> <poly> </poly> <and>";
constexpr int kLocCount = 1000;

// BART's own special tokens; they are "added tokens" in tokenizer.json, so they are matched in
// the raw text before BPE just like Florence-2's.
constexpr const char* kBartSpecials[] = {"<s>", "<pad>", "</s>", "<unk>"};
constexpr const char* kMaskToken = "<mask>";

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD"; // U+FFFD

// The HF BPE cache only keeps short words and stops growing when full; same idea here, so a
// long document cannot grow memory without bound.
constexpr size_t kCacheCapacity = 10000;
constexpr size_t kCacheMaxWordBytes = 256;

void appendUtf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

struct Utf8Char {
    size_t length = 1;    // bytes covered: the whole character, or the ill-formed prefix
    char32_t cp = 0xFFFD; // U+FFFD when not valid
    bool valid = false;
    bool truncated = false; // ill-formed only because the input ended; more bytes may fix it
};

// Decodes one UTF-8 sequence at in[pos] following the well-formedness table of the Unicode
// standard (no overlongs, no surrogates). An ill-formed sequence covers its maximal valid
// prefix (at least one byte), which is the unit that gets one U+FFFD.
Utf8Char decodeUtf8(std::string_view in, size_t pos) {
    Utf8Char ch;
    const auto b = static_cast<unsigned char>(in[pos]);
    if (b < 0x80) {
        ch.cp = b;
        ch.valid = true;
        return ch;
    }
    size_t need = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    char32_t value = 0;
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
        value = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        value = b & 0x0F;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        value = b & 0x07;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else {
        return ch; // 80..C1, F5..FF never start a character
    }
    size_t j = pos + 1;
    for (size_t got = 0; got < need; ++got, ++j) {
        if (j >= in.size()) {
            ch.truncated = true;
            ch.length = j - pos;
            return ch;
        }
        const auto c = static_cast<unsigned char>(in[j]);
        if (c < (got == 0 ? lo : 0x80) || c > (got == 0 ? hi : 0xBF)) {
            ch.length = j - pos;
            return ch;
        }
        value = (value << 6) | (c & 0x3F);
    }
    ch.cp = value;
    ch.valid = true;
    ch.length = j - pos;
    return ch;
}

// Appends `in` as valid UTF-8 to `out`, replacing each maximal ill-formed subsequence by one
// U+FFFD — the same policy as Rust's from_utf8_lossy and Python's errors="replace", so our
// decode matches the reference text byte for byte. Unless `final`, a trailing sequence that
// is still incomplete is left unconsumed; returns the number of bytes consumed.
size_t appendLossyUtf8(std::string_view in, std::string& out, bool final) {
    size_t i = 0;
    while (i < in.size()) {
        // ASCII runs are the common case; copy them without per-byte decoding.
        size_t run = i;
        while (run < in.size() && static_cast<unsigned char>(in[run]) < 0x80)
            ++run;
        if (run > i) {
            out.append(in.substr(i, run - i));
            i = run;
            continue;
        }
        const Utf8Char ch = decodeUtf8(in, i);
        if (ch.truncated && !final)
            return i;
        if (ch.valid)
            out.append(in.substr(i, ch.length));
        else
            out.append(kReplacementChar);
        i += ch.length;
    }
    return in.size();
}

// Unicode White_Space, which is what both \s in the pre-tokenizer regex (Oniguruma) and Rust's
// char::is_whitespace (used for <mask>'s lstrip) test.
bool isWhiteSpace(char32_t cp) {
    if (cp <= 0x20)
        return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    if (cp < 0x85)
        return false;
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

enum class CharClass : unsigned char { Letter, Number, Space, Other };

CharClass classify(char32_t cp) {
    if (cp < 0x80) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))
            return CharClass::Letter;
        if (cp >= '0' && cp <= '9')
            return CharClass::Number;
        return isWhiteSpace(cp) ? CharClass::Space : CharClass::Other;
    }
    if (isWhiteSpace(cp))
        return CharClass::Space;
    if (QChar::isLetter(cp))
        return CharClass::Letter;
    if (QChar::isNumber(cp))
        return CharClass::Number;
    return CharClass::Other;
}

// Byte length of `text` without its trailing White_Space (for <mask>'s lstrip).
size_t lengthWithoutTrailingSpace(std::string_view text) {
    size_t end = text.size();
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80 &&
               end - start < 4)
            --start;
        const Utf8Char ch = decodeUtf8(text, start);
        if (start + ch.length != end || !ch.valid || !isWhiteSpace(ch.cp))
            break;
        end = start;
    }
    return end;
}

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes
// are shifted to U+0100… so every byte has a visible, non-space character in vocab strings.
std::array<char32_t, 256> byteToCodePoint() {
    std::array<char32_t, 256> table{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        table[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return table;
}

QByteArray readFile(const std::string& path, const char* what) {
    // Bounded and regular files only: Florence-2's vocab.json is 1 MB, its merges 0.5 MB; a FIFO
    // or /dev/zero in a package is refused, never waited on or read without end.
    constexpr int64_t kMaxTokenizerFileBytes = 64 << 20;
    try {
        return readSmallFile(path, kMaxTokenizerFileBytes);
    } catch (const Error& e) {
        throw Error("cannot read " + std::string(what) + ": " + e.what());
    }
}

} // namespace

struct Tokenizer::Data {
    std::vector<std::string> idToToken; // empty string for ids that do not exist
    std::vector<std::string> idToBytes; // raw bytes each token stands for
    std::vector<bool> valid;            // ids vocab.json defines, to reject a reused id
    std::vector<bool> added;
    std::unordered_map<std::string, int64_t> tokenToId;

    // Merges keyed by the pair of token ids; value is (rank, id of the merged token).
    std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;
    std::array<int32_t, 256> byteTokenId{};

    // Added tokens, matched in the raw text before BPE.
    std::unordered_map<std::string_view, int64_t> addedByText; // views into idToToken
    std::array<bool, 256> addedFirstByte{};
    size_t addedMinLen = SIZE_MAX;
    size_t addedMaxLen = 0;
    int64_t lstripId = -1; // <mask>

    std::vector<int64_t> locIds;

    mutable std::mutex cacheMutex;
    mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

    void bpe(std::string_view word, std::vector<int64_t>& out) const;
    void encodeSegment(std::string_view text, std::vector<int64_t>& out) const;
    int64_t addToken(const std::string& token, bool isAdded);

    // The steps of Tokenizer::fromFiles, in order.
    void readVocab(const std::string& vocabJsonPath);
    void mapTokenBytes(const std::string& vocabJsonPath);
    void addFlorenceTokens(const std::string& vocabJsonPath);
    void readMerges(const std::string& mergesPath);
};

namespace {
uint64_t pairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}
} // namespace

int64_t Tokenizer::Data::addToken(const std::string& token, bool isAdded) {
    auto it = tokenToId.find(token);
    int64_t id = 0;
    if (it != tokenToId.end()) {
        // Like HF's add_special_tokens, a token the vocabulary already has keeps its id.
        id = it->second;
    } else {
        id = static_cast<int64_t>(idToToken.size());
        idToToken.push_back(token);
        idToBytes.emplace_back();
        valid.push_back(true);
        added.push_back(false);
        tokenToId.emplace(token, id);
    }
    if (isAdded) {
        added[id] = true;
        // An added token is written out verbatim on decode, not through the byte map.
        idToBytes[id] = token;
    }
    return id;
}

// Byte-level BPE of one pre-token: start from one symbol per byte and repeatedly apply the
// lowest-ranked merge, leftmost first — what HF's Word::merge_all does. A heap with lazy
// invalidation keeps long words (a line of 10 000 dashes) O(n log n) instead of quadratic.
void Tokenizer::Data::bpe(std::string_view word, std::vector<int64_t>& out) const {
    if (word.size() == 1) {
        out.push_back(byteTokenId[static_cast<unsigned char>(word[0])]);
        return;
    }
    const bool cacheable = word.size() <= kCacheMaxWordBytes;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cacheMutex);
        auto it = cache.find(std::string(word));
        if (it != cache.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }

    struct Symbol {
        int32_t id;
        int32_t prev;
        int32_t next;
        bool alive;
    };
    const auto n = static_cast<int32_t>(word.size());
    std::vector<Symbol> symbols(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i)
        symbols[i] = {byteTokenId[static_cast<unsigned char>(word[i])], i - 1,
                      i + 1 < n ? i + 1 : -1, true};

    struct Candidate {
        int32_t rank;
        int32_t pos;
        int32_t newId;
        bool operator>(const Candidate& o) const {
            return rank != o.rank ? rank > o.rank : pos > o.pos;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
    auto consider = [&](int32_t pos) {
        const int32_t next = symbols[pos].next;
        if (next < 0)
            return;
        auto it = merges.find(pairKey(symbols[pos].id, symbols[next].id));
        if (it != merges.end())
            queue.push({it->second.first, pos, it->second.second});
    };
    for (int32_t i = 0; i + 1 < n; ++i)
        consider(i);

    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        Symbol& left = symbols[top.pos];
        if (!left.alive || left.next < 0)
            continue;
        // Stale entry: one side was merged with something else since it was queued.
        auto it = merges.find(pairKey(left.id, symbols[left.next].id));
        if (it == merges.end() || it->second.second != top.newId)
            continue;
        Symbol& right = symbols[left.next];
        left.id = top.newId;
        right.alive = false;
        left.next = right.next;
        if (right.next >= 0)
            symbols[right.next].prev = top.pos;
        if (left.prev >= 0)
            consider(left.prev);
        consider(top.pos);
    }

    std::vector<int32_t> result;
    for (int32_t i = 0; i >= 0; i = symbols[i].next)
        result.push_back(symbols[i].id);
    out.insert(out.end(), result.begin(), result.end());
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cacheMutex);
        if (cache.size() < kCacheCapacity)
            cache.emplace(std::string(word), std::move(result));
    }
}

// GPT-2's pre-tokenizer regex, written out as the matcher it compiles to:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// Alternatives are tried in order at each position (leftmost-first, greedy), so a run of
// spaces gives all but its last space to "\s+(?!\S)" and the last one prefixes the next word.
void Tokenizer::Data::encodeSegment(std::string_view text, std::vector<int64_t>& out) const {
    if (text.empty())
        return;
    std::vector<char32_t> cps;
    std::vector<CharClass> classes;
    std::vector<size_t> offsets; // byte offset of each code point, plus the end
    cps.reserve(text.size());
    classes.reserve(text.size());
    offsets.reserve(text.size() + 1);
    for (size_t pos = 0; pos < text.size();) {
        // Invalid bytes become U+FFFD for classification only; their bytes still go to BPE.
        const Utf8Char ch = decodeUtf8(text, pos);
        cps.push_back(ch.cp);
        classes.push_back(classify(ch.cp));
        offsets.push_back(pos);
        pos += ch.length;
    }
    offsets.push_back(text.size());

    const size_t n = cps.size();
    size_t i = 0;
    while (i < n) {
        size_t end = i;
        if (cps[i] == '\'' && i + 1 < n) {
            const char32_t a = cps[i + 1];
            const char32_t b = i + 2 < n ? cps[i + 2] : 0;
            if (a == 's' || a == 't' || a == 'm' || a == 'd')
                end = i + 2;
            else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                end = i + 3;
        }
        if (end == i) {
            size_t start = i;
            if (cps[i] == ' ' && i + 1 < n && classes[i + 1] != CharClass::Space)
                start = i + 1;
            const CharClass cls = classes[start];
            if (cls != CharClass::Space) {
                end = start + 1;
                while (end < n && classes[end] == cls)
                    ++end;
            } else {
                size_t runEnd = i + 1;
                while (runEnd < n && classes[runEnd] == CharClass::Space)
                    ++runEnd;
                // \s+(?!\S): leave the last space for the word that follows, unless the run
                // is a single space (then plain \s+ takes it) or reaches the end.
                end = (runEnd < n && runEnd - i >= 2) ? runEnd - 1 : runEnd;
            }
        }
        bpe(text.substr(offsets[i], offsets[end] - offsets[i]), out);
        i = end;
    }
}

// vocab.json: token -> id, dense ids, no id given twice.
void Tokenizer::Data::readVocab(const std::string& vocabJsonPath) {
    const QByteArray bytes = readFile(vocabJsonPath, "vocabulary file");
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &error);
    if (error.error != QJsonParseError::NoError)
        throw Error("vocabulary file '" + vocabJsonPath +
                    "' is not valid JSON: " + error.errorString().toStdString() + " at offset " +
                    std::to_string(error.offset));
    if (!doc.isObject())
        throw Error("vocabulary file '" + vocabJsonPath + "' is not a JSON object of token → id");
    const QJsonObject object = doc.object();
    // An id far beyond the entry count would make us allocate for nothing; real
    // vocabularies are dense.
    const int64_t maxId = static_cast<int64_t>(object.size()) * 2 + 1024;
    tokenToId.reserve(static_cast<size_t>(object.size()) + 1100);
    for (auto it = object.constBegin(); it != object.constEnd(); ++it) {
        const QJsonValue value = it.value();
        const double number = value.toDouble(-1.0);
        const auto id = static_cast<int64_t>(number);
        if (!value.isDouble() || static_cast<double>(id) != number || id < 0 || id > maxId)
            throw Error("vocabulary file '" + vocabJsonPath + "' has an invalid id for token '" +
                        it.key().toStdString() + "'");
        if (static_cast<size_t>(id) >= idToToken.size()) {
            idToToken.resize(static_cast<size_t>(id) + 1);
            valid.resize(static_cast<size_t>(id) + 1, false);
        }
        if (valid[id])
            throw Error("vocabulary file '" + vocabJsonPath + "' gives id " + std::to_string(id) +
                        " to two tokens");
        std::string token = it.key().toStdString();
        tokenToId.emplace(token, id);
        idToToken[id] = std::move(token);
        valid[id] = true;
    }
}

// Byte-level tokens back to bytes, once, so decode is a table lookup; and the token of every
// single byte, which BPE starts from.
void Tokenizer::Data::mapTokenBytes(const std::string& vocabJsonPath) {
    const size_t bpeCount = idToToken.size();
    added.assign(bpeCount, false);

    const std::array<char32_t, 256> byteToCp = byteToCodePoint();
    std::array<int, 324> cpToByte{};
    cpToByte.fill(-1);
    for (int b = 0; b < 256; ++b)
        cpToByte[byteToCp[b]] = b;
    idToBytes.resize(bpeCount);
    for (size_t id = 0; id < bpeCount; ++id) {
        const std::string& token = idToToken[id];
        std::string bytes;
        bool mapped = true;
        for (size_t pos = 0; pos < token.size() && mapped;) {
            const Utf8Char ch = decodeUtf8(token, pos);
            pos += ch.length;
            mapped = ch.valid && ch.cp < cpToByte.size() && cpToByte[ch.cp] >= 0;
            if (mapped)
                bytes.push_back(static_cast<char>(cpToByte[ch.cp]));
        }
        // Like HF's ByteLevel decoder, a token with characters outside the byte map (only
        // <s>-style specials in practice) is emitted as its own UTF-8 text.
        idToBytes[id] = mapped ? std::move(bytes) : token;
    }
    for (int b = 0; b < 256; ++b) {
        std::string ch;
        appendUtf8(ch, byteToCp[b]);
        auto it = tokenToId.find(ch);
        if (it == tokenToId.end())
            throw Error("vocabulary file '" + vocabJsonPath +
                        "' lacks the byte-level token for byte " + std::to_string(b));
        byteTokenId[b] = static_cast<int32_t>(it->second);
    }
}

// Florence-2's added tokens (BART's specials, <loc_N>, the task tokens), matched in the raw
// text before BPE.
void Tokenizer::Data::addFlorenceTokens(const std::string& vocabJsonPath) {
    for (int64_t expected = 0; expected < 4; ++expected) {
        auto it = tokenToId.find(kBartSpecials[expected]);
        if (it == tokenToId.end() || it->second != expected)
            throw Error("vocabulary file '" + vocabJsonPath + "' does not have " +
                        kBartSpecials[expected] + " at id " + std::to_string(expected));
        addToken(kBartSpecials[expected], true);
    }
    if (tokenToId.count(kMaskToken))
        lstripId = addToken(kMaskToken, true);
    for (const char* token : kTokensBeforeLoc)
        addToken(token, true);
    locIds.reserve(kLocCount);
    for (int bin = 0; bin < kLocCount; ++bin)
        locIds.push_back(addToken("<loc_" + std::to_string(bin) + ">", true));
    for (size_t pos = 0; pos < kTokensAfterLoc.size();) {
        const size_t space = std::min(kTokensAfterLoc.find(' ', pos), kTokensAfterLoc.size());
        addToken(std::string(kTokensAfterLoc.substr(pos, space - pos)), true);
        pos = space + 1;
    }
    for (size_t id = 0; id < idToToken.size(); ++id) {
        if (!added[id])
            continue;
        const std::string_view text = idToToken[id];
        addedByText.emplace(text, static_cast<int64_t>(id));
        addedFirstByte[static_cast<unsigned char>(text[0])] = true;
        addedMinLen = std::min(addedMinLen, text.size());
        addedMaxLen = std::max(addedMaxLen, text.size());
    }
}

// merges.txt: one pair per line, ranked by position; the first occurrence of a pair wins.
void Tokenizer::Data::readMerges(const std::string& mergesPath) {
    const QByteArray bytes = readFile(mergesPath, "merges file");
    const std::string_view text(bytes.constData(), static_cast<size_t>(bytes.size()));
    merges.reserve(60000);
    int32_t rank = 0;
    size_t lineNumber = 0;
    std::string merged;
    for (size_t pos = 0; pos < text.size();) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos)
            eol = text.size();
        std::string_view line = text.substr(pos, eol - pos);
        pos = eol + 1;
        ++lineNumber;
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (line.empty() || line.substr(0, 8) == "#version")
            continue;
        const size_t space = line.find(' ');
        if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string_view::npos)
            throw Error("merges file '" + mergesPath + "' line " + std::to_string(lineNumber) +
                        " is not two tokens separated by a space");
        const std::string_view a = line.substr(0, space);
        const std::string_view b = line.substr(space + 1);
        merged.assign(a);
        merged.append(b);
        auto ia = tokenToId.find(std::string(a));
        auto ib = tokenToId.find(std::string(b));
        auto im = tokenToId.find(merged);
        if (ia == tokenToId.end() || ib == tokenToId.end() || im == tokenToId.end())
            throw Error("merges file '" + mergesPath + "' line " + std::to_string(lineNumber) +
                        " uses a token that is not in the vocabulary");
        // The first occurrence of a pair wins, as in HF.
        merges.emplace(pairKey(static_cast<int32_t>(ia->second), static_cast<int32_t>(ib->second)),
                       std::make_pair(rank, static_cast<int32_t>(im->second)));
        ++rank;
    }
}

Tokenizer Tokenizer::fromFiles(const std::string& vocabJsonPath, const std::string& mergesPath) {
    auto data = std::make_shared<Data>();
    data->readVocab(vocabJsonPath);
    data->mapTokenBytes(vocabJsonPath);
    data->addFlorenceTokens(vocabJsonPath);
    data->readMerges(mergesPath);
    Tokenizer tokenizer;
    tokenizer.m_data = std::move(data);
    return tokenizer;
}

std::vector<int64_t> Tokenizer::encode(const std::string& text) const {
    std::vector<int64_t> ids;
    ids.reserve(text.size() / 3 + 2);
    ids.push_back(bosId());
    std::vector<int64_t> body = encodeWithoutSpecial(text);
    ids.insert(ids.end(), body.begin(), body.end());
    ids.push_back(eosId());
    return ids;
}

std::vector<int64_t> Tokenizer::encodeWithoutSpecial(const std::string& text) const {
    if (!m_data)
        throw std::logic_error("Tokenizer used before it was loaded");
    const Data& d = *m_data;
    std::vector<int64_t> ids;
    ids.reserve(text.size() / 3 + 2);
    const std::string_view all(text);
    size_t segmentStart = 0;
    size_t pos = 0;
    // Leftmost-longest match of added tokens, as HF's AddedVocabulary does; the text between
    // matches is pre-tokenized and BPE-encoded on its own.
    while (pos + d.addedMinLen <= all.size()) {
        if (!d.addedFirstByte[static_cast<unsigned char>(all[pos])]) {
            ++pos;
            continue;
        }
        int64_t matchId = -1;
        size_t matchLen = 0;
        for (size_t len = std::min(d.addedMaxLen, all.size() - pos); len >= d.addedMinLen; --len) {
            auto it = d.addedByText.find(all.substr(pos, len));
            if (it != d.addedByText.end()) {
                matchId = it->second;
                matchLen = len;
                break;
            }
        }
        if (matchId < 0) {
            ++pos;
            continue;
        }
        std::string_view segment = all.substr(segmentStart, pos - segmentStart);
        // <mask> is declared lstrip in tokenizer.json: it swallows the whitespace before it.
        if (matchId == d.lstripId)
            segment = segment.substr(0, lengthWithoutTrailingSpace(segment));
        d.encodeSegment(segment, ids);
        ids.push_back(matchId);
        pos += matchLen;
        segmentStart = pos;
    }
    d.encodeSegment(all.substr(segmentStart), ids);
    return ids;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
    if (!m_data)
        throw std::logic_error("Tokenizer used before it was loaded");
    std::string bytes;
    for (int64_t id : ids) {
        if (id >= 0 && static_cast<size_t>(id) < m_data->idToBytes.size())
            bytes += m_data->idToBytes[id];
    }
    std::string text;
    text.reserve(bytes.size());
    appendLossyUtf8(bytes, text, true);
    return text;
}

std::string Tokenizer::tokenBytes(int64_t id) const {
    if (!m_data || id < 0 || static_cast<size_t>(id) >= m_data->idToBytes.size())
        return {};
    return m_data->idToBytes[id];
}

std::string Tokenizer::tokenString(int64_t id) const {
    if (!m_data || id < 0 || static_cast<size_t>(id) >= m_data->idToToken.size())
        return {};
    return m_data->idToToken[id];
}

int64_t Tokenizer::tokenId(const std::string& token) const {
    if (!m_data)
        return -1;
    auto it = m_data->tokenToId.find(token);
    return it == m_data->tokenToId.end() ? -1 : it->second;
}

bool Tokenizer::isAddedToken(int64_t id) const {
    return m_data && id >= 0 && static_cast<size_t>(id) < m_data->added.size() && m_data->added[id];
}

int64_t Tokenizer::vocabSize() const {
    return m_data ? static_cast<int64_t>(m_data->idToToken.size()) : 0;
}

int64_t Tokenizer::locId(int bin) const {
    if (!m_data || bin < 0 || bin >= kLocCount)
        return -1;
    return m_data->locIds[static_cast<size_t>(bin)];
}

int Tokenizer::locBin(int64_t id) const {
    if (!m_data)
        return -1;
    // The loc tokens are consecutive whenever vocab.json lacks them (always, in practice);
    // the check below keeps this right even if it did not.
    const int64_t bin = id - m_data->locIds.front();
    if (bin >= 0 && bin < kLocCount && m_data->locIds[static_cast<size_t>(bin)] == id)
        return static_cast<int>(bin);
    auto it = std::find(m_data->locIds.begin(), m_data->locIds.end(), id);
    return it == m_data->locIds.end() ? -1 : static_cast<int>(it - m_data->locIds.begin());
}

std::string Tokenizer::StreamDecoder::push(int64_t id) {
    m_pending += m_tokenizer->tokenBytes(id);
    std::string out;
    const size_t used = appendLossyUtf8(m_pending, out, false);
    m_pending.erase(0, used);
    return out;
}

std::string Tokenizer::StreamDecoder::flush() {
    std::string out;
    appendLossyUtf8(m_pending, out, true);
    m_pending.clear();
    return out;
}

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
// Copies share the immutable tables (and the mutex-guarded BPE cache).
Tokenizer::Tokenizer(const Tokenizer&) = default;
Tokenizer& Tokenizer::operator=(const Tokenizer&) = default;

} // namespace florence
