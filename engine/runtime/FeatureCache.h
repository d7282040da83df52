// Internal to the engine (includes LibTorch). The image features a session keeps, keyed by a
// hash of the image's pixels.
//
//   torch::Tensor f = cache.find(hashImage(image)); // undefined when not seen lately
#pragma once

#include <florence/image.h>

#include <torch/torch.h>

#include <cstdint>
#include <list>

namespace florence::detail {

// FNV-1a over the pixels, the size mixed in: fast enough for a 12-megapixel photo (tens of ms).
uint64_t hashImage(const RgbImage& image);

// The image features of the last few images this session encoded, so a second task on the same
// image skips the vision encoder.
class FeatureCache {
public:
    torch::Tensor find(uint64_t key) {
        for (auto it = m_entries.begin(); it != m_entries.end(); ++it)
            if (it->key == key) {
                m_entries.splice(m_entries.begin(), m_entries, it);
                return m_entries.front().features;
            }
        return {};
    }
    void remember(uint64_t key, torch::Tensor f) {
        m_entries.push_front({key, std::move(f)});
        if (m_entries.size() > kMaxEntries)
            m_entries.pop_back();
    }

private:
    struct Entry {
        uint64_t key = 0;
        torch::Tensor features;
    };
    std::list<Entry> m_entries; // most recent first
    static constexpr size_t kMaxEntries = 4;
};

} // namespace florence::detail
