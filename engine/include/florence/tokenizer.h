// Florence-2's tokenizer: BART's byte-level BPE plus the 1024 tokens Florence-2 adds at load
// time (<od>, <loc_0>…<loc_999>, <cap>, …; see docs/florence2-tasks.md).
//
//   florence::Tokenizer tok = florence::Tokenizer::fromFiles("pkg/vocab.json", "pkg/merges.txt");
//   std::vector<int64_t> ids = tok.encode("What does the region <loc_1><loc_2> describe?");
//   std::string text = tok.decode(ids);           // special tokens kept
//   florence::Tokenizer::StreamDecoder stream(tok);
//   for (int64_t id : ids) std::cout << stream.push(id);   // never splits a UTF-8 character
//   std::cout << stream.flush();
#pragma once

#include <florence/error.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace florence {

class Tokenizer {
public:
    // Reads vocab.json and merges.txt. Throws florence::Error naming the file on a missing,
    // unreadable or malformed file.
    static Tokenizer fromFiles(const std::string& vocabJsonPath, const std::string& mergesPath);

    // <s> + tokens + </s>. Added tokens (<loc_N>, <od>, <s>, …) inside the text are matched
    // first; the text between them is BPE-encoded on its own. Safe to call from several
    // threads at once. encode/decode throw std::logic_error on a default-constructed or
    // moved-from Tokenizer.
    std::vector<int64_t> encode(const std::string& text) const;
    // Same without <s> and </s>.
    std::vector<int64_t> encodeWithoutSpecial(const std::string& text) const;

    // Decodes with every special token kept as its text ("</s><s>A cat<loc_5>…").
    // Ids outside [0, vocabSize()) are skipped, as Hugging Face's decode does; bytes that do
    // not form valid UTF-8 become U+FFFD (one per maximal ill-formed subsequence).
    std::string decode(const std::vector<int64_t>& ids) const;
    // The raw bytes a single token stands for (may be part of a UTF-8 character); empty for
    // an unknown id.
    std::string tokenBytes(int64_t id) const;
    // The token's string as in vocab.json / the added-token table ("Ġcat", "<loc_5>"); empty
    // for an unknown id.
    std::string tokenString(int64_t id) const;
    // Id of a token string, or -1.
    int64_t tokenId(const std::string& token) const;
    bool isAddedToken(int64_t id) const;

    int64_t vocabSize() const; // 51289 for Florence-2
    int64_t bosId() const { return 0; }
    int64_t padId() const { return 1; }
    int64_t eosId() const { return 2; }
    int64_t unkId() const { return 3; }
    // <loc_0> is 50269; locId(n) = 50269 + n.
    int64_t locId(int bin) const;
    // Bin of a location token id, or -1.
    int locBin(int64_t id) const;

    // Decodes a stream of ids one at a time, holding back bytes of an incomplete UTF-8
    // character until it is complete.
    class StreamDecoder {
    public:
        explicit StreamDecoder(const Tokenizer& tokenizer) : m_tokenizer(&tokenizer) {}
        std::string push(int64_t id);
        // Whatever is still held back (an incomplete character becomes U+FFFD).
        std::string flush();

    private:
        const Tokenizer* m_tokenizer;
        std::string m_pending;
    };

    Tokenizer();
    ~Tokenizer();
    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    Tokenizer(const Tokenizer&);
    Tokenizer& operator=(const Tokenizer&);

private:
    struct Data;
    std::shared_ptr<const Data> m_data;
};

} // namespace florence
