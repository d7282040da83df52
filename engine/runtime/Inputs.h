// Internal to the engine (includes LibTorch). The model's inputs as tensors and its outputs as
// plain arrays, with the checks a request's pixels and prompt must pass.
//
//   torch::Tensor pixels = pixelTensor(manifest, request.pixelValues); // throws EngineError
#pragma once

#include <florence/engine.h>

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace florence::detail {

torch::Tensor toTensor(const std::vector<float>& v, std::vector<int64_t> shape);
FloatArray toArray(const torch::Tensor& t);
// [1, 3, height, width]; throws EngineError when the count is not the model's.
torch::Tensor pixelTensor(const Manifest& m, const std::vector<float>& pixelValues);
torch::Tensor idTensor(const std::vector<int64_t>& ids); // [1, n]
// Throws EngineError when the prompt does not fit beside the image tokens.
void checkPrompt(const Manifest& m, const std::vector<int64_t>& ids);

} // namespace florence::detail
