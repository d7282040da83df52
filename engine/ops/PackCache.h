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
// Each call drops the entries of weights that are gone; dropPacks() does so in every cache at
// once, for when a model is released and no further call may come (switching from int8 to
// float32 would otherwise keep the int8 encoders' packed weights, about 90 MB at base). A
// packed form may hold its weight itself (oneDNN's does), so that weight is never gone: the
// model names its weights to drop.

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace florence::ops {

using WeightSet = std::unordered_set<const c10::TensorImpl*>;

// Drops the packed forms of `weights` and of weights that are gone, in every cache; returns how
// many are kept. Call it while `weights` live (no other tensor has their address yet).
size_t dropPacks(const WeightSet& weights = {});
// How many packed forms the caches hold, of weights alive or gone (for tests).
size_t packedFormsHeld();

namespace detail {

// Called once per cache: dropPacks() and packedFormsHeld() then call `sweep`, which drops that
// cache's entries of `drop` and of released weights (nothing when `drop` is null) and returns
// how many it holds.
using PackSweep = size_t (*)(const WeightSet* drop);
void registerPackSweep(PackSweep sweep);

template <class Packed, class Pack> struct PackStore {
    using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
    struct Entry {
        WeakImpl weight;
        uint32_t version;
        Packed packed;
    };
    using Cache = std::unordered_map<const c10::TensorImpl*, Entry>;
    // Made at the first use and never destroyed, like the list of sweeps: a model released
    // during the program's exit still finds them.
    static std::mutex& mutex() {
        static auto* m = new std::mutex;
        return *m;
    }
    static Cache& cache() {
        static auto* c = new Cache;
        return *c;
    }

    // With `mutex` held.
    static size_t dropLocked(const WeightSet& also) {
        Cache& entries = cache();
        for (auto it = entries.begin(); it != entries.end();)
            it = it->second.weight.expired() || also.count(it->first) ? entries.erase(it)
                                                                      : std::next(it);
        return entries.size();
    }
    static size_t sweep(const WeightSet* drop) {
        std::lock_guard<std::mutex> lock(mutex());
        return drop ? dropLocked(*drop) : cache().size();
    }
};

} // namespace detail

template <class Packed, class Pack> Packed cachedPack(const at::Tensor& weight, Pack pack) {
    using Store = detail::PackStore<Packed, Pack>;
    static const bool registered = (detail::registerPackSweep(&Store::sweep), true);
    (void)registered;
    std::lock_guard<std::mutex> lock(Store::mutex());
    Store::dropLocked({});
    const c10::TensorImpl* key = weight.unsafeGetTensorImpl();
    const auto version = weight.is_inference() ? 0u : static_cast<uint32_t>(weight._version());
    typename Store::Cache& entries = Store::cache();
    if (auto it = entries.find(key); it != entries.end() && it->second.version == version)
        return it->second.packed;
    Packed packed = pack(weight);
    entries.insert_or_assign(
        key,
        typename Store::Entry{typename Store::WeakImpl(weight.getIntrusivePtr()), version, packed});
    return packed;
}

} // namespace florence::ops
