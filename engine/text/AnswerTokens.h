// Internal to the engine (and its tests): parsing an answer from its tokens, which also gives
// each item the range of tokens that produced it. Nothing outside the engine needs token spans
// yet; a caller that does (e.g. highlighting the tokens of a box as they stream in) should get
// this through <florence/answer.h> then.
#pragma once

#include <florence/answer.h>

#include <string>
#include <vector>

namespace florence {

// parseAnswer() from the decoded text of each generated token in order (Tokenizer::tokenBytes);
// fills the items' token spans. With tokenLogprobs (Result::tokenLogprobs: one per token, aligned
// with the end of tokenTexts, so tokenTexts may start with the decoder start token that has
// none) it also scores the answer and every item: the mean of exp(log-probability) over the
// tokens that overlap the item's ownChars, and over the answer's words for the answer
// (ParsedAnswer::score). Outside the engine, florence::parseResult (<florence/engine.h>) does
// this for a finished run.
ParsedAnswer parseAnswerTokens(const std::string& task, const std::vector<std::string>& tokenTexts,
                               int imageWidth, int imageHeight,
                               const std::vector<float>& tokenLogprobs = {});

} // namespace florence
