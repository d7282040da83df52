// Florence-2's tokenizer on arbitrary text (encode, decode back) and arbitrary ids (decode).
#include <florence/tokenizer.h>

#include <cstring>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const florence::Tokenizer tokenizer = florence::Tokenizer::fromFiles(
        FLORENCE_TOKENIZER_DIR "/vocab.json", FLORENCE_TOKENIZER_DIR "/merges.txt");
    const std::string text(reinterpret_cast<const char*>(data), size);
    const std::vector<int64_t> ids = tokenizer.encode(text);
    for (int64_t id : ids)
        if (id < 0 || id >= tokenizer.vocabSize())
            __builtin_trap();
    tokenizer.decode(ids);
    // The bytes as ids, in range or not (decode skips the others).
    std::vector<int64_t> raw(size / 4);
    for (size_t i = 0; i < raw.size(); ++i) {
        int32_t v;
        std::memcpy(&v, data + 4 * i, 4);
        raw[i] = v;
    }
    tokenizer.decode(raw);
    for (int64_t id : raw)
        tokenizer.tokenBytes(id);
    return 0;
}
