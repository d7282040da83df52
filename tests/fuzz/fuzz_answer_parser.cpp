// The answer parser on arbitrary generated text: byte 0 picks the task, bytes 1-4 the image
// size, the rest is the text; every export form is built from what it parsed.
#include <florence/answer.h>
#include <florence/tasks.h>

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
    florence::parseAnswerTokens(task, pieces, width, height);
    return 0;
}
