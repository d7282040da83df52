// Session::generateRows: one batch of rows from the request to the results, in the order it
// runs: options checked, prompts tokenized, image features (cached, or encoded one image at a
// time), prompts encoded with a padding mask, then the search over a decode backend, streaming
// each step.
#include "runtime/ModelImpl.h"
#include "runtime/SessionState.h"

#include "decoding/DecodeBackends.h"
#include "decoding/Generator.h"
#include "decoding/StreamedText.h"
#include "runtime/Inputs.h"
#include <florence/stats.h>

#include <algorithm>

namespace florence {

using detail::checkPrompt;
using detail::hashImage;
using detail::pixelTensor;
using detail::toTensor;

namespace {

// The steps of Session::generateRows, in the order it runs them.

void checkOptions(const Manifest& m, const GenerationOptions& options) {
    if (options.numBeams < 1 || options.numBeams > 16)
        throw EngineError("beams must be between 1 and 16, not " +
                          std::to_string(options.numBeams));
    if (options.maxNewTokens < 1)
        throw EngineError("maximum new tokens must be at least 1");
    if (options.maxNewTokens > m.maxPositions)
        throw EngineError("asked for " + std::to_string(options.maxNewTokens) +
                          " new tokens; this model's decoder holds at most " +
                          std::to_string(m.maxPositions));
}

// Fills every result's prompt ids; returns the longest prompt's length.
size_t tokenizePrompts(const Tokenizer& tokenizer, const Manifest& m,
                       const std::vector<Request>& requests, std::vector<Result>& results) {
    size_t longest = 0;
    for (size_t b = 0; b < requests.size(); ++b) {
        const Request& request = requests[b];
        if (request.pixelValues.empty() && (!request.image || request.image->empty()))
            throw EngineError("no image: load an image first");
        results[b].promptIds = tokenizer.encode(request.prompt);
        checkPrompt(m, results[b].promptIds);
        longest = std::max(longest, results[b].promptIds.size());
    }
    return longest;
}

// The times of the stages before decoding, the same for every row of a batch.
struct StageTimes {
    double preprocessMs = 0;
    double visionMs = 0;
    double textEncoderMs = 0;
};

// The image features of every row: reused when this session saw the same image before, the
// others preprocessed here and encoded by encodePendingImages.
struct RowFeatures {
    std::vector<torch::Tensor> features; // per row; undefined until encoded
    std::vector<uint64_t> keys;          // per row; 0 when not cached
    std::vector<torch::Tensor> pixels;   // model inputs of the rows still to encode
    std::vector<int> pending;            // those rows
    std::vector<int> sameAs;             // per row: an earlier pending row of the same image, or -1
};

RowFeatures collectFeatures(const Manifest& m, detail::FeatureCache& cache,
                            const std::vector<Request>& requests, const GenerationOptions& options,
                            std::vector<Result>& results) {
    const int batch = static_cast<int>(requests.size());
    RowFeatures rows;
    rows.features.resize(batch);
    rows.keys.assign(batch, 0);
    rows.sameAs.assign(batch, -1);
    for (int b = 0; b < batch; ++b) {
        const Request& request = requests[b];
        const bool fromImage = request.pixelValues.empty();
        if (fromImage && options.reuseFeatures) {
            rows.keys[b] = hashImage(*request.image);
            // The same image twice in one batch is encoded once: the first row of that image
            // is either cached or pending, and this row takes its features.
            int first = 0;
            while (!requests[first].pixelValues.empty() || rows.keys[first] != rows.keys[b])
                ++first;
            if (first < b) {
                rows.features[b] = rows.features[first];
                if (!rows.features[b].defined())
                    rows.sameAs[b] = first;
            } else {
                rows.features[b] = cache.find(rows.keys[b]);
            }
            results[b].timings.featuresReused = rows.features[b].defined() || rows.sameAs[b] >= 0;
            if (results[b].timings.featuresReused)
                continue;
        }
        if (fromImage) {
            std::vector<float> chw =
                preprocess(*request.image, m.imageWidth, m.imageHeight, m.imageMean, m.imageStd);
            rows.pixels.push_back(toTensor(chw, {1, 3, m.imageHeight, m.imageWidth}));
        } else {
            rows.pixels.push_back(pixelTensor(m, request.pixelValues));
        }
        rows.pending.push_back(b);
    }
    return rows;
}

// One image at a time, not the pending rows as one batch: the vision encoder is compute-bound on
// a single image already, and a batch of four took 1.25-1.3x the time of four alone (its
// activations four times the size; base size, 2 threads, float32 and int8). A cancel stops
// between images.
void encodePendingImages(const Model::Impl& impl, detail::FeatureCache& cache,
                         const std::vector<Request>& requests, const GenerationOptions& options,
                         RowFeatures& rows) {
    for (size_t i = 0; i < rows.pending.size(); ++i) {
        if (options.cancel && options.cancel->load())
            return;
        const int b = rows.pending[i];
        rows.features[b] = impl.imageFeatures(rows.pixels[i], options.cancel);
        if (!rows.features[b].defined()) // cancelled during the pass
            return;
        rows.pixels[i] = torch::Tensor(); // the model input is not needed again
        if (options.reuseFeatures && requests[b].pixelValues.empty())
            cache.remember(rows.keys[b], rows.features[b]);
    }
    for (size_t b = 0; b < rows.sameAs.size(); ++b)
        if (rows.sameAs[b] >= 0)
            rows.features[b] = rows.features[rows.sameAs[b]];
}

struct EncodedPrompts {
    torch::Tensor hidden; // [batch, image tokens + longest prompt, d_model]
    torch::Tensor mask;   // [batch, same]: 0 on padding
};

// Prompts padded to the longest with <pad>; the mask keeps padding out of attention, so a
// batched request sees exactly what it would alone. `hidden` is undefined when `cancel` stopped
// the text encoder's pass.
EncodedPrompts encodePrompts(const Model::Impl& impl, const std::vector<torch::Tensor>& features,
                             const std::vector<Result>& results, size_t longestPrompt,
                             const std::atomic<bool>* cancel) {
    const int64_t batch = static_cast<int64_t>(results.size());
    const int64_t promptLen = static_cast<int64_t>(longestPrompt);
    torch::Tensor ids = torch::full({batch, promptLen}, impl.manifest.padId, torch::kInt64);
    torch::Tensor promptMask = torch::zeros({batch, promptLen}, torch::kInt64);
    for (int64_t b = 0; b < batch; ++b) {
        const auto& p = results[b].promptIds;
        const int64_t n = static_cast<int64_t>(p.size());
        ids[b].narrow(0, 0, n).copy_(torch::tensor(p, torch::kInt64));
        promptMask[b].narrow(0, 0, n).fill_(1);
    }
    torch::Tensor featureBatch = torch::cat(features, 0);
    EncodedPrompts out;
    out.hidden = Model::Impl::interruptible(cancel, [&] {
        return impl.textEncoder.forward({featureBatch, ids, promptMask}).toTensor();
    });
    out.mask =
        torch::cat({torch::ones({batch, featureBatch.size(1)}, torch::kInt64), promptMask}, 1);
    return out;
}

detail::SearchSettings searchSettings(const Manifest& m, const GenerationOptions& options) {
    detail::SearchSettings s;
    s.numBeams = options.numBeams;
    s.maxLength = options.maxNewTokens + 1;
    s.noRepeatNgramSize = options.noRepeatNgramSize;
    s.lengthPenalty = options.lengthPenalty;
    s.earlyStopping = options.earlyStopping;
    s.ignoreEos = options.ignoreEos;
    s.decoderStartId = m.decoderStartId;
    s.eosId = m.eosId;
    s.padId = m.padId;
    s.forcedBosId = m.forcedBosId;
    s.forcedEosId = m.forcedEosId;
    return s;
}

std::unique_ptr<detail::DecodeBackend> makeBackend(const Model::Impl& impl,
                                                   const GenerationOptions& options,
                                                   const EncodedPrompts& encoded,
                                                   const torch::Tensor& crossKvAhead) {
    if (options.useCache) {
        torch::Tensor crossKv =
            crossKvAhead.defined() ? crossKvAhead
                                   : impl.decoder.run_method("cross_kv", encoded.hidden).toTensor();
        return detail::makeCachedBackend(impl.decoder, crossKv, encoded.mask, impl.nativeStep);
    }
    return detail::makeFullBackend(impl.decoder, encoded.hidden, encoded.mask);
}

void stampStages(std::vector<Result>& results, const StageTimes& stages) {
    for (Result& r : results) {
        r.timings.preprocessMs = stages.preprocessMs;
        r.timings.visionMs = stages.visionMs;
        r.timings.textEncoderMs = stages.textEncoderMs;
    }
}

// A run stopped before decoding: what is known so far, marked cancelled.
std::vector<Result>& cancelledBeforeDecoding(std::vector<Result>& results, const StageTimes& stages,
                                             double totalMs) {
    stampStages(results, stages);
    for (Result& r : results) {
        r.cancelled = true;
        r.timings.totalMs = totalMs;
    }
    return results;
}

void assembleResults(const Tokenizer& tokenizer, std::vector<detail::SearchResult>& found,
                     const StageTimes& stages, double decodeMs, double totalMs,
                     std::vector<Result>& results) {
    stampStages(results, stages);
    for (size_t b = 0; b < results.size(); ++b) {
        Result& r = results[b];
        r.generatedIds = std::move(found[b].sequence);
        r.tokenLogprobs = std::move(found[b].tokenLogprobs);
        r.score = found[b].score;
        r.cancelled = found[b].cancelled;
        r.text = tokenizer.decode(r.generatedIds);
        r.timings.stepMs = std::move(found[b].stepMs);
        r.timings.decodeMs = decodeMs;
        r.timings.totalMs = totalMs;
    }
}

// Reports every step: the first token's time into the row's result, and, when the caller
// listens, a TokenEvent with what the step added to the row's text.
detail::SearchCallbacks streamingCallbacks(const Tokenizer& tokenizer, std::vector<Result>& results,
                                           const StageTimes& stages,
                                           const GenerationOptions& options, size_t firstIndex,
                                           Clock::time_point start) {
    auto streams = std::make_shared<std::vector<detail::StreamedText>>(
        results.size(), detail::StreamedText(tokenizer));
    detail::SearchCallbacks callbacks;
    callbacks.cancel = options.cancel;
    callbacks.onStep = [&results, &stages, &onToken = options.onToken, streams, firstIndex,
                        start](int index, int step, int64_t id, const std::vector<int64_t>& best,
                               double ms) {
        if (step == 0)
            results[index].timings.firstTokenMs = msSince(start);
        if (!onToken)
            return true;
        TokenEvent e;
        e.index = firstIndex + static_cast<size_t>(index);
        e.step = step;
        e.id = id;
        e.stepMs = ms;
        e.preprocessMs = stages.preprocessMs;
        e.visionMs = stages.visionMs;
        e.textEncoderMs = stages.textEncoderMs;
        (*streams)[static_cast<size_t>(index)].update(best, e);
        return onToken(e);
    };
    return callbacks;
}

} // namespace

std::vector<Result> Session::generateRows(const std::vector<Request>& requests,
                                          const GenerationOptions& options, size_t firstIndex) {
    const auto start = Clock::now();
    c10::InferenceMode guard;
    const Model::Impl& impl = m_model->impl();
    const Manifest& m = impl.manifest;
    std::vector<Result> results(requests.size());
    const auto cancelled = [cancel = options.cancel] { return cancel && cancel->load(); };

    checkOptions(m, options);
    const size_t longestPrompt = tokenizePrompts(impl.tokenizer, m, requests, results);

    StageTimes stages;
    EncodedPrompts encoded;
    torch::Tensor crossKvAhead;
    if (const PromptEncoding* ahead = promptEncodedAhead(requests, options, results)) {
        // encodeImage ran the text encoder for exactly this image and prompt: decoding starts.
        encoded.hidden = ahead->hidden;
        encoded.mask = torch::ones({1, ahead->hidden.size(1)}, torch::kInt64);
        crossKvAhead = ahead->crossKv;
        results[0].timings.featuresReused = true;
        results[0].timings.promptReused = true;
    } else {
        auto t = Clock::now();
        RowFeatures rows = collectFeatures(m, m_state->features, requests, options, results);
        stages.preprocessMs = msSince(t);
        if (!rows.pending.empty() && !cancelled()) {
            t = Clock::now();
            encodePendingImages(impl, m_state->features, requests, options, rows);
            stages.visionMs = msSince(t);
        }
        if (cancelled())
            return cancelledBeforeDecoding(results, stages, msSince(start));

        t = Clock::now();
        encoded = encodePrompts(impl, rows.features, results, longestPrompt, options.cancel);
        stages.textEncoderMs = msSince(t);
    }
    if (cancelled())
        return cancelledBeforeDecoding(results, stages, msSince(start));

    const detail::SearchSettings settings = searchSettings(m, options);
    const detail::SearchCallbacks callbacks =
        streamingCallbacks(impl.tokenizer, results, stages, options, firstIndex, start);
    std::unique_ptr<detail::DecodeBackend> backend =
        makeBackend(impl, options, encoded, crossKvAhead);
    auto t = Clock::now();
    std::vector<detail::SearchResult> found;
    if (options.numBeams > 1)
        found.push_back(detail::beamSearch(*backend, settings, callbacks));
    else
        found = detail::greedySearchBatch(*backend, settings, static_cast<int>(results.size()),
                                          callbacks);
    const double decodeMs = msSince(t);
    assembleResults(impl.tokenizer, found, stages, decodeMs, msSince(start), results);
    for (Result& r : results)
        r.reachedTokenLimit = !r.cancelled && !options.ignoreEos &&
                              r.generatedIds.size() >= static_cast<size_t>(settings.maxLength);
    return results;
}

} // namespace florence
