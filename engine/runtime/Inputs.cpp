#include "runtime/Inputs.h"

namespace florence::detail {

torch::Tensor toTensor(const std::vector<float>& v, std::vector<int64_t> shape) {
    return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32).clone();
}

FloatArray toArray(const torch::Tensor& t) {
    torch::Tensor c = t.to(torch::kFloat32).contiguous();
    FloatArray a;
    a.shape = c.sizes().vec();
    a.data.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    return a;
}

torch::Tensor pixelTensor(const Manifest& m, const std::vector<float>& pixelValues) {
    const size_t expected = 3ull * m.imageWidth * m.imageHeight;
    if (pixelValues.size() != expected)
        throw EngineError("pixel values hold " + std::to_string(pixelValues.size()) +
                          " numbers; this model takes 3x" + std::to_string(m.imageHeight) + "x" +
                          std::to_string(m.imageWidth) + " = " + std::to_string(expected));
    return toTensor(pixelValues, {1, 3, m.imageHeight, m.imageWidth});
}

torch::Tensor idTensor(const std::vector<int64_t>& ids) {
    return torch::tensor(ids, torch::kInt64).unsqueeze(0);
}

void checkPrompt(const Manifest& m, const std::vector<int64_t>& ids) {
    const int room = m.maxPositions - m.imageTokens;
    if (static_cast<int>(ids.size()) > room)
        throw EngineError("the prompt is " + std::to_string(ids.size()) +
                          " tokens long; with the image this model takes at most " +
                          std::to_string(room) + ". Shorten the text.");
}

} // namespace florence::detail
