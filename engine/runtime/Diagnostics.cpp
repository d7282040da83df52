// Session's diagnostics for the parity tests: the stages on their own, as plain arrays.
#include "runtime/ModelImpl.h"

#include "runtime/Inputs.h"

namespace florence {

using detail::checkPrompt;
using detail::idTensor;
using detail::pixelTensor;
using detail::toArray;

FloatArray Session::imageFeatures(const std::vector<float>& pixelValues) {
    c10::InferenceMode guard;
    return toArray(m_model->impl().imageFeatures(pixelTensor(m_model->manifest(), pixelValues)));
}

FloatArray Session::encoderHidden(const std::vector<float>& pixelValues,
                                  const std::vector<int64_t>& promptIds) {
    c10::InferenceMode guard;
    checkPrompt(m_model->manifest(), promptIds);
    const auto& impl = m_model->impl();
    torch::Tensor f = impl.imageFeatures(pixelTensor(m_model->manifest(), pixelValues));
    return toArray(impl.encode(f, idTensor(promptIds)));
}

FloatArray Session::decoderLogits(const std::vector<float>& pixelValues,
                                  const std::vector<int64_t>& promptIds,
                                  const std::vector<int64_t>& decoderIds) {
    c10::InferenceMode guard;
    checkPrompt(m_model->manifest(), promptIds);
    const auto& impl = m_model->impl();
    torch::Tensor f = impl.imageFeatures(pixelTensor(m_model->manifest(), pixelValues));
    torch::Tensor h = impl.encode(f, idTensor(promptIds));
    torch::Tensor mask = torch::ones({1, h.size(1)}, torch::kInt64);
    torch::Tensor logits =
        impl.decoder.run_method("forward_full", idTensor(decoderIds), h, mask, false).toTensor();
    return toArray(logits.squeeze(0));
}

} // namespace florence
