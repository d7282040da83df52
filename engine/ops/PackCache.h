#pragma once
// A weight's packed form (a layout an operator's kernel reads faster), made on its first use and
// kept while the weight tensor lives:
//
//     std::shared_ptr<const Packed> p = florence::ops::cachedPack<std::shared_ptr<const Packed>>(
//         weight, [](const at::Tensor& w) { return std::make_shared<const Packed>(w); });
//
// Keyed by the tensor (its TensorImpl, held weakly: an entry whose weight is gone is dropped,
// never reused for another tensor at the same address) and its version counter, so a weight
// changed in place is packed again; an inference tensor (made under c10::InferenceMode) has no
// version counter, and a change to it in place goes unseen. One cache per instantiation (Packed
// and the Pack callable's type); thread-safe.

#include <ATen/ATen.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace florence::ops {

template <class Packed, class Pack> Packed cachedPack(const at::Tensor& weight, Pack pack) {
    using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
    struct Entry {
        WeakImpl weight;
        uint32_t version;
        Packed packed;
    };
    static std::mutex mutex;
    static std::unordered_map<const c10::TensorImpl*, Entry> cache;
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = cache.begin(); it != cache.end();)
        it = it->second.weight.expired() ? cache.erase(it) : std::next(it);
    const c10::TensorImpl* key = weight.unsafeGetTensorImpl();
    const auto version = weight.is_inference() ? 0u : static_cast<uint32_t>(weight._version());
    if (auto it = cache.find(key); it != cache.end() && it->second.version == version)
        return it->second.packed;
    Packed packed = pack(weight);
    cache.insert_or_assign(key, Entry{WeakImpl(weight.getIntrusivePtr()), version, packed});
    return packed;
}

} // namespace florence::ops
