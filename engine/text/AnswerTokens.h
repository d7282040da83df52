// Internal to the engine (and its tests): parsing an answer from its tokens, which also gives
// each item the range of tokens that produced it. Nothing outside the engine needs token spans
// yet; a caller that does (e.g. highlighting the tokens of a box as they stream in) should get
// this through <florence/answer.h> then.
#pragma once

#include <florence/answer.h>

#include <string>
#include <vector>

namespace florence {

// parseAnswer() from the decoded text of each generated token in order; fills the items' token
// spans.
ParsedAnswer parseAnswerTokens(const std::string& task, const std::vector<std::string>& tokenTexts,
                               int imageWidth, int imageHeight);

} // namespace florence
