// Internal to the engine (includes LibTorch). The two ways a decoder step runs under the search
// (Generator.h): with a key/value cache, one token per step, or the whole prefix every step.
//
//   auto backend = makeCachedBackend(decoder, crossKv, encoderMask);
//   greedySearchBatch(*backend, settings, rows, callbacks);
#pragma once

#include "decoding/Generator.h"
#include "decoding/NativeStep.h"

#include <torch/script.h>

#include <memory>

namespace florence::detail {

// One token per step; the cache lives in a preallocated tensor written in place. `crossKv` is
// the decoder's cross_kv() of the encoder output. With `native` (NativeStep.h), the steps it
// handles run from C++ instead of the scripted method, to the same bits.
std::unique_ptr<DecodeBackend>
makeCachedBackend(torch::jit::Module& decoder, torch::Tensor crossKv, torch::Tensor encoderMask,
                  std::shared_ptr<const NativeStep> native = nullptr);
// The whole prefix through the decoder at every step, cross-attention keys and values
// included: what a traced model without a cache does.
std::unique_ptr<DecodeBackend> makeFullBackend(torch::jit::Module& decoder,
                                               torch::Tensor encoderHidden,
                                               torch::Tensor encoderMask);

} // namespace florence::detail
