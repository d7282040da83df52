#include <florence/answer.h>
#include <florence/engine.h>

#include "text/AnswerTokens.h"

namespace florence {

ParsedAnswer parseResult(const Tokenizer& tokenizer, const std::string& task, const Result& result,
                         int imageWidth, int imageHeight) {
    std::vector<std::string> pieces;
    pieces.reserve(result.generatedIds.size());
    for (int64_t id : result.generatedIds)
        pieces.push_back(tokenizer.tokenBytes(id));
    return parseAnswerTokens(task, pieces, imageWidth, imageHeight, result.tokenLogprobs);
}

} // namespace florence
