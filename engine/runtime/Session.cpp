// Session: encoding ahead of a run (encodeImage), and generate/generateBatch around the
// pipeline of one batch of rows (Pipeline.cpp), with LibTorch's errors made readable.
#include "runtime/ModelImpl.h"
#include "runtime/SessionState.h"

#include "runtime/Inputs.h"
#include "runtime/TorchError.h"
#include <florence/stats.h>

namespace florence {

using detail::checkPrompt;
using detail::hashImage;
using detail::idTensor;
using detail::oneLine;
using detail::toTensor;

Session::Session(std::shared_ptr<const Model> model)
    : m_model(std::move(model)), m_state(std::make_unique<State>()) {
    if (!m_model)
        throw EngineError("Session needs a loaded model");
}

Session::~Session() = default;

ImageEncoding Session::encodeImage(const RgbImage& image, const EncodeOptions& options) {
    c10::InferenceMode guard;
    ImageEncoding out;
    const std::string& prompt = options.prompt;
    auto cancelled = [&] { return out.cancelled = options.cancel && options.cancel->load(); };
    if (image.empty())
        throw ImageError("no image to encode");
    const Model::Impl& impl = m_model->impl();
    const Manifest& m = impl.manifest;
    std::vector<int64_t> ids;
    if (!prompt.empty()) {
        ids = impl.tokenizer.encode(prompt);
        checkPrompt(m, ids);
    }
    const uint64_t key = hashImage(image);
    torch::Tensor features = m_state->features.find(key);
    out.alreadyEncoded = features.defined();
    if (!features.defined()) {
        if (cancelled())
            return out;
        auto start = Clock::now();
        const std::vector<float> chw =
            preprocess(image, m.imageWidth, m.imageHeight, m.imageMean, m.imageStd);
        out.preprocessMs = msSince(start);
        if (cancelled())
            return out;
        start = Clock::now();
        features =
            impl.imageFeatures(toTensor(chw, {1, 3, m.imageHeight, m.imageWidth}), options.cancel);
        if (!features.defined()) {
            out.cancelled = true;
            return out;
        }
        out.visionMs = msSince(start);
        m_state->features.remember(key, features);
    }
    if (ids.empty())
        return out;
    const std::optional<PromptEncoding>& last = m_state->prompt;
    if (last && last->imageKey == key && last->ids == ids) {
        out.promptEncoded = out.promptAlreadyEncoded = true;
        return out;
    }
    if (cancelled())
        return out;
    if (options.skipPrompt && options.skipPrompt->load()) {
        out.cancelled = true;
        return out;
    }
    const auto start = Clock::now();
    PromptEncoding e;
    e.imageKey = key;
    e.ids = std::move(ids);
    e.hidden = impl.encode(features, idTensor(e.ids), options.cancel);
    if (!e.hidden.defined()) {
        out.cancelled = true;
        return out;
    }
    e.crossKv = impl.decoder.run_method("cross_kv", e.hidden).toTensor();
    out.textEncoderMs = msSince(start);
    m_state->prompt = std::move(e);
    out.promptEncoded = true;
    return out;
}

Result Session::generate(const Request& request, const GenerationOptions& options) {
    return std::move(generateBatch({request}, options)[0]);
}

std::vector<Result> Session::generateBatch(const std::vector<Request>& requests,
                                           const GenerationOptions& options) {
    if (requests.empty())
        return {};
    try {
        if (options.numBeams > 1 && requests.size() > 1) {
            // Beam search keeps its beams in the batch dimension; requests go one by one.
            std::vector<Result> results;
            for (size_t i = 0; i < requests.size(); ++i)
                results.push_back(std::move(generateRows({requests[i]}, options, i)[0]));
            return results;
        }
        return generateRows(requests, options, 0);
    } catch (const EngineError&) {
        throw;
    } catch (const c10::Error& e) {
        throw EngineError(std::string("the model failed to run: ") + oneLine(e));
    } catch (const std::exception& e) {
        // torch::jit::JITException (an error raised inside a module) and the search's own
        // range checks.
        throw EngineError(std::string("the model failed to run: ") + oneLine(e.what()));
    }
}

const PromptEncoding* Session::promptEncodedAhead(const std::vector<Request>& requests,
                                                  const GenerationOptions& options,
                                                  const std::vector<Result>& results) const {
    const std::optional<PromptEncoding>& p = m_state->prompt;
    if (!p || requests.size() != 1 || !options.reuseFeatures || !requests[0].pixelValues.empty() ||
        p->ids != results[0].promptIds)
        return nullptr;
    return hashImage(*requests[0].image) == p->imageKey ? &*p : nullptr;
}

} // namespace florence
