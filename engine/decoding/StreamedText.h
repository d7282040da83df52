// Internal to the engine. The text of one row's best hypothesis as it grows. A step that appends
// one token to the hypothesis reported before decodes only that token; a switch to another beam
// decodes the new hypothesis from the start. Bytes of a character split over tokens are held back
// until it is complete, so streamed text never shows half a character.
//
//   StreamedText text(tokenizer);
//   text.update(bestHypothesis, event); // sets event.textDelta and event.rewound
#pragma once

#include <florence/engine.h>
#include <florence/tokenizer.h>

#include <cstdint>
#include <string>
#include <vector>

namespace florence::detail {

class StreamedText {
public:
    explicit StreamedText(const Tokenizer& tokenizer)
        : m_tokenizer(&tokenizer), m_decoder(tokenizer) {}

    // Sets the event's textDelta and rewound for hypothesis `best`: what it adds to the text
    // reported before, or its whole text when it does not start with that text.
    void update(const std::vector<int64_t>& best, TokenEvent& e);

private:
    const Tokenizer* m_tokenizer;
    Tokenizer::StreamDecoder m_decoder;
    std::vector<int64_t> m_ids;
    std::string m_text;
};

} // namespace florence::detail
