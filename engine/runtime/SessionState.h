// Internal to the engine (includes LibTorch). What a Session keeps between runs: the features of
// the last images it encoded and the text encoder output encodeImage ran ahead.
#pragma once

#include "runtime/FeatureCache.h"
#include <florence/engine.h>

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace florence {

// The text encoder's output for one image and prompt, run ahead of the request by
// encodeImage, with the decoder's cross-attention keys and values of it.
struct PromptEncoding {
    uint64_t imageKey = 0;
    std::vector<int64_t> ids;
    torch::Tensor hidden;  // [1, image tokens + prompt, d_model]
    torch::Tensor crossKv; // the decoder's cross_kv(hidden)
};

struct Session::State {
    detail::FeatureCache features;
    std::optional<PromptEncoding> prompt; // the last one encodeImage made
};

} // namespace florence
