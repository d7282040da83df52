// Session's diagnostics for the parity tests: the stages on their own, as plain arrays.
#include "runtime/ModelImpl.h"

#include "runtime/Inputs.h"

namespace florence {

using detail::checkPrompt;
using detail::idTensor;
using detail::pixelTensor;
using detail::toArray;

FloatArray Session::imageFeatures(const std::vector<float>& pixelValues,
                                  const std::atomic<bool>* cancel) {
    c10::InferenceMode guard;
    const torch::Tensor f =
        m_model->impl().imageFeatures(pixelTensor(m_model->manifest(), pixelValues), cancel);
    return f.defined() ? toArray(f) : FloatArray{};
}

FloatArray Session::encoderHidden(const std::vector<float>& pixelValues,
                                  const std::vector<int64_t>& promptIds,
                                  const std::atomic<bool>* cancel) {
    c10::InferenceMode guard;
    checkPrompt(m_model->manifest(), promptIds);
    const auto& impl = m_model->impl();
    const torch::Tensor f =
        impl.imageFeatures(pixelTensor(m_model->manifest(), pixelValues), cancel);
    if (!f.defined())
        return {};
    const torch::Tensor h = impl.encode(f, idTensor(promptIds), cancel);
    return h.defined() ? toArray(h) : FloatArray{};
}

FloatArray Session::decoderLogits(const std::vector<float>& pixelValues,
                                  const std::vector<int64_t>& promptIds,
                                  const std::vector<int64_t>& decoderIds,
                                  const std::atomic<bool>* cancel) {
    c10::InferenceMode guard;
    checkPrompt(m_model->manifest(), promptIds);
    const auto& impl = m_model->impl();
    const torch::Tensor f =
        impl.imageFeatures(pixelTensor(m_model->manifest(), pixelValues), cancel);
    if (!f.defined())
        return {};
    const torch::Tensor h = impl.encode(f, idTensor(promptIds), cancel);
    if (!h.defined())
        return {};
    const torch::Tensor mask = torch::ones({1, h.size(1)}, torch::kInt64);
    const torch::Tensor logits = Model::Impl::interruptible(cancel, [&] {
        return impl.decoder.run_method("forward_full", idTensor(decoderIds), h, mask, false)
            .toTensor();
    });
    return logits.defined() ? toArray(logits.squeeze(0)) : FloatArray{};
}

} // namespace florence
