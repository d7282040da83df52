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
//
// Each call drops the entries of weights that are gone; dropReleasedPacks() does so in every
// cache at once, for when a model is released and no further call may come (switching from
// int8 to float32 would otherwise keep the int8 encoders' packed weights, about 90 MB at base).

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace florence::ops {

// Drops the packed forms of weights that are gone, in every cache; returns how many are kept.
size_t dropReleasedPacks();
// How many packed forms the caches hold, of weights alive or gone (for tests).
size_t packedFormsHeld();

namespace detail {

// Called once per cache: dropReleasedPacks() and packedFormsHeld() then call `sweep`, which
// drops that cache's released entries when `drop` is set and returns how many it holds.
void registerPackSweep(size_t (*sweep)(bool drop));

template <class Packed, class Pack> struct PackStore {
    using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
    struct Entry {
        WeakImpl weight;
        uint32_t version;
        Packed packed;
    };
    static inline std::mutex mutex;
    static inline std::unordered_map<const c10::TensorImpl*, Entry> cache;

    // With `mutex` held.
    static size_t dropReleasedLocked() {
        for (auto it = cache.begin(); it != cache.end();)
            it = it->second.weight.expired() ? cache.erase(it) : std::next(it);
        return cache.size();
    }
    static size_t sweep(bool drop) {
        std::lock_guard<std::mutex> lock(mutex);
        return drop ? dropReleasedLocked() : cache.size();
    }
};

} // namespace detail

template <class Packed, class Pack> Packed cachedPack(const at::Tensor& weight, Pack pack) {
    using Store = detail::PackStore<Packed, Pack>;
    static const bool registered = (detail::registerPackSweep(&Store::sweep), true);
    (void)registered;
    std::lock_guard<std::mutex> lock(Store::mutex);
    Store::dropReleasedLocked();
    const c10::TensorImpl* key = weight.unsafeGetTensorImpl();
    const auto version = weight.is_inference() ? 0u : static_cast<uint32_t>(weight._version());
    if (auto it = Store::cache.find(key); it != Store::cache.end() && it->second.version == version)
        return it->second.packed;
    Packed packed = pack(weight);
    Store::cache.insert_or_assign(
        key,
        typename Store::Entry{typename Store::WeakImpl(weight.getIntrusivePtr()), version, packed});
    return packed;
}

} // namespace florence::ops
