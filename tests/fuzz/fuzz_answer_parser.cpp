// The answer parser on arbitrary generated text: byte 0 picks the task, bytes 1-4 the image
// size, the rest is the text; every export form is built from what it parsed.
#include <florence/answer.h>
#include <florence/tasks.h>

#include "text/AnswerTokens.h" // internal: token spans and scores

#include <cmath>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 5)
        return 0;
    const auto& tasks = florence::allTasks();
    const std::string task =
        data[0] == 255 ? std::string("<UNKNOWN>") : tasks[data[0] % tasks.size()].token;
    const int width = 1 + (data[1] | data[2] << 8);
    const int height = 1 + (data[3] | data[4] << 8);
    const std::string text(reinterpret_cast<const char*>(data + 5), size - 5);
    const florence::ParsedAnswer a = florence::parseAnswer(task, text, width, height);
    florence::toHuggingFaceJson(a);
    florence::toNativeJson(a);
    florence::toCocoJson(a, "fuzz.png", width, height);
    // Token by token: the text cut into pieces of 1 to 8 bytes.
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
        const size_t n = 1 + (static_cast<unsigned char>(text[i]) % 8);
        pieces.push_back(text.substr(i, n));
        i += n;
    }
    // With a log-probability per piece (from the piece's first byte; -inf included): the item
    // and answer scores, and their JSON.
    std::vector<float> logprobs;
    for (const std::string& piece : pieces)
        logprobs.push_back(static_cast<unsigned char>(piece[0]) == 255
                               ? -INFINITY
                               : -static_cast<float>(static_cast<unsigned char>(piece[0])) / 16);
    if (!logprobs.empty() && data[0] % 2)
        logprobs.erase(logprobs.begin()); // aligned with the end, as after a decoder start token
    const florence::ParsedAnswer scored =
        florence::parseAnswerTokens(task, pieces, width, height, logprobs);
    florence::toNativeJson(scored);
    florence::toCocoJson(scored, "fuzz.png", width, height);
    return 0;
}
