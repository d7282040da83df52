#include "runtime/FeatureCache.h"

#include <cstring>

namespace florence::detail {

uint64_t hashImage(const RgbImage& image) {
    // FNV-1a over 8-byte words: fast enough for a 12-megapixel photo (tens of ms).
    uint64_t h = 1469598103934665603ull ^
                 (static_cast<uint64_t>(image.width) << 32 | static_cast<uint32_t>(image.height));
    const uint8_t* p = image.pixels.data();
    size_t n = image.pixels.size();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; ++i)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

} // namespace florence::detail
