#include "decoding/DecodeBackends.h"

#include <cstring>

namespace florence::detail {

namespace {

// One token per step; the cache lives in a preallocated tensor written in place.
class CachedBackend : public DecodeBackend {
public:
    CachedBackend(torch::jit::Module& decoder, torch::Tensor crossKv, torch::Tensor encoderMask,
                  std::shared_ptr<const NativeStep> native)
        : m_decoder(decoder), m_crossKv(std::move(crossKv)), m_mask(std::move(encoderMask)),
          m_native(std::move(native)) {}

    void begin(int batch, int capacity) override {
        m_cache = m_decoder.run_method("new_cache", batch, capacity).toTensor();
        m_ids = torch::empty({batch, 1}, torch::kInt64);
        m_useNative = m_native && NativeStep::handles(batch);
        if (m_useNative && !m_crossMask.defined())
            m_crossMask = NativeStep::crossMask(m_mask);
    }

    torch::Tensor next(const std::vector<std::vector<int64_t>>& seqs) override {
        int64_t* ids = m_ids.data_ptr<int64_t>();
        for (size_t b = 0; b < seqs.size(); ++b)
            ids[b] = seqs[b].back();
        const int64_t past = static_cast<int64_t>(seqs[0].size()) - 1;
        if (m_useNative) {
            torch::Tensor logits = m_native->step(m_ids, past, m_cache, m_crossKv, m_crossMask);
            m_filled = past + 1;
            return logits;
        }
        auto out = m_decoder.run_method("step", m_ids, past, m_cache, m_crossKv, m_mask).toTuple();
        m_cache = out->elements()[1].toTensor();
        m_filled = past + 1;
        return out->elements()[0].toTensor();
    }

    void reorder(const std::vector<int64_t>& origin) override {
        bool identity = true;
        for (size_t i = 0; i < origin.size(); ++i)
            identity = identity && origin[i] == static_cast<int64_t>(i);
        if (identity || m_filled == 0)
            return;
        // Only the filled part of the cache moves: [layers, 2, beams, heads, filled, head_dim].
        torch::Tensor part = m_cache.narrow(4, 0, m_filled);
        part.copy_(part.index_select(2, torch::tensor(origin, torch::kInt64)));
    }

private:
    torch::jit::Module& m_decoder;
    torch::Tensor m_crossKv;
    torch::Tensor m_mask;
    torch::Tensor m_cache;
    torch::Tensor m_ids;
    int64_t m_filled = 0;
    std::shared_ptr<const NativeStep> m_native;
    bool m_useNative = false;  // m_native handles this run's batch
    torch::Tensor m_crossMask; // NativeStep::crossMask(m_mask), made for the first such run
};

// The whole prefix through the decoder at every step, cross-attention keys and values
// included: what a traced model without a cache does.
class FullBackend : public DecodeBackend {
public:
    FullBackend(torch::jit::Module& decoder, torch::Tensor encoderHidden, torch::Tensor encoderMask)
        : m_decoder(decoder), m_hidden(std::move(encoderHidden)), m_mask(std::move(encoderMask)) {}

    void begin(int batch, int) override {
        // Beams get their own copy of the encoder output, as Hugging Face expands it.
        m_hiddenB = m_hidden.expand({batch, m_hidden.size(1), m_hidden.size(2)}).contiguous();
        m_maskB = m_mask.expand({batch, m_mask.size(1)}).contiguous();
    }

    torch::Tensor next(const std::vector<std::vector<int64_t>>& seqs) override {
        const int64_t batch = static_cast<int64_t>(seqs.size());
        const int64_t len = static_cast<int64_t>(seqs[0].size());
        torch::Tensor ids = torch::empty({batch, len}, torch::kInt64);
        int64_t* p = ids.data_ptr<int64_t>();
        for (int64_t b = 0; b < batch; ++b)
            std::memcpy(p + b * len, seqs[b].data(), sizeof(int64_t) * len);
        return m_decoder.run_method("forward_full", ids, m_hiddenB, m_maskB, true).toTensor();
    }

    void reorder(const std::vector<int64_t>&) override {}

private:
    torch::jit::Module& m_decoder;
    torch::Tensor m_hidden;
    torch::Tensor m_mask;
    torch::Tensor m_hiddenB;
    torch::Tensor m_maskB;
};

} // namespace

std::unique_ptr<DecodeBackend> makeCachedBackend(torch::jit::Module& decoder, torch::Tensor crossKv,
                                                 torch::Tensor encoderMask,
                                                 std::shared_ptr<const NativeStep> native) {
    return std::make_unique<CachedBackend>(decoder, std::move(crossKv), std::move(encoderMask),
                                           std::move(native));
}

std::unique_ptr<DecodeBackend> makeFullBackend(torch::jit::Module& decoder,
                                               torch::Tensor encoderHidden,
                                               torch::Tensor encoderMask) {
    return std::make_unique<FullBackend>(decoder, std::move(encoderHidden), std::move(encoderMask));
}

} // namespace florence::detail
