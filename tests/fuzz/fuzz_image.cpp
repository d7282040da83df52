// The image loader on arbitrary bytes: format by signature, header sizes against the pixel limit
// and the data, libpng through the program's own handlers, libjpeg's check, OpenCV's decoders.
#include <florence/image.h>

#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const florence::RgbImage image =
            florence::decodeImage(std::vector<uint8_t>(data, data + size), "fuzz");
        // A decoded image must be what it says.
        if (image.pixels.size() != size_t(image.width) * size_t(image.height) * 3)
            __builtin_trap();
        if (int64_t(image.width) * image.height <= 4096)
            florence::preprocess(image, 32, 32, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f});
    } catch (const florence::ImageError&) {
    }
    return 0;
}
