#include <florence/engine.h>

#include "model/CodeCheck.h"
#include "model/Generator.h"
#include <florence/runtime.h>

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <list>
#include <mutex>
#include <set>

namespace florence {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Length of the longest prefix of `s` that does not end inside a UTF-8 character, so streamed
// text never shows half a character.
size_t completeUtf8Prefix(const std::string& s) {
    size_t n = s.size();
    // Look back at most 3 bytes for the lead byte of the last character.
    for (size_t back = 1; back <= 4 && back <= n; ++back) {
        const auto c = static_cast<unsigned char>(s[n - back]);
        if ((c & 0xC0) == 0x80)
            continue; // continuation byte
        size_t need = 1;
        if ((c & 0xE0) == 0xC0)
            need = 2;
        else if ((c & 0xF0) == 0xE0)
            need = 3;
        else if ((c & 0xF8) == 0xF0)
            need = 4;
        return back < need ? n - back : n;
    }
    return n;
}

uint64_t hashImage(const RgbImage& image) {
    // FNV-1a over 8-byte words: fast enough for a 12-megapixel photo (tens of ms).
    uint64_t h = 1469598103934665603ull ^
                 (static_cast<uint64_t>(image.width) << 32 | static_cast<uint32_t>(image.height));
    const uint8_t* p = image.pixels.data();
    size_t n = image.pixels.size();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; ++i)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

// One line a user can read from an error LibTorch or the TorchScript interpreter raised: their
// messages carry a C++ backtrace and, from a module, a traceback of its Python source (57 lines
// for a bad decoder start token); the last non-empty line is the error itself
// ("RuntimeError: index out of range in self").
std::string oneLine(const char* what) {
    std::string text(what ? what : "");
    std::string last;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        std::string line = text.substr(start, end - start);
        const size_t first = line.find_first_not_of(" \t\r");
        if (first != std::string::npos && line.rfind("Exception raised from", first) != first)
            last = line.substr(first);
        start = end + 1;
    }
    if (last.size() > 200)
        last = last.substr(0, 200) + "…";
    return last.empty() ? std::string("unknown error") : last;
}

std::string oneLine(const c10::Error& e) {
    return oneLine(e.what_without_backtrace());
}

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

torch::jit::Module loadModule(const std::string& path, const Manifest& manifest,
                              Precision precision) {
    try {
        torch::jit::Module m = torch::jit::load(path, torch::kCPU);
        m.eval();
        if (manifest.storage == "float16")
            m.to(torch::kFloat32);
        if (precision == Precision::BFloat16) {
            // Only the linear layers: they carry nearly all the work and bytes, and the model's
            // linear() helper runs them with oneDNN's bf16 kernels.
            for (const auto& sub : m.named_modules()) {
                const auto type = sub.value.type()->name();
                if (!type || type->name() != "Linear")
                    continue;
                torch::jit::Module lin = sub.value;
                lin.setattr("weight", lin.attr("weight").toTensor().to(torch::kBFloat16));
            }
        }
        return m;
    } catch (const c10::Error& e) {
        throw EngineError(path +
                          " cannot be loaded as a TorchScript module (damaged, or written "
                          "by another exporter): " +
                          oneLine(e));
    } catch (const std::exception& e) {
        throw EngineError(path + " cannot be loaded as a TorchScript module: " + oneLine(e.what()));
    }
}

// The module, parameter name pair of a dotted path: ("encoder.embed_tokens", "weight").
std::pair<torch::jit::Module, std::string> parameterSlot(torch::jit::Module m,
                                                         const std::string& dotted) {
    size_t start = 0;
    for (size_t dot = dotted.find('.'); dot != std::string::npos; dot = dotted.find('.', start)) {
        const std::string part = dotted.substr(start, dot - start);
        if (!m.hasattr(part) || !m.attr(part).isModule())
            throw std::runtime_error("has no submodule " + dotted.substr(0, dot));
        m = m.attr(part).toModule();
        start = dot + 1;
    }
    const std::string last = dotted.substr(start);
    if (!m.hasattr(last) || !m.attr(last).isTensor())
        throw std::runtime_error("has no tensor " + dotted);
    return {m, last};
}

} // namespace

// ------------------------------------------------------------------------------------------
// Model

const char* precisionName(Precision p) {
    return p == Precision::BFloat16 ? "bfloat16" : "float32";
}

struct Model::Impl {
    Manifest manifest;
    Tokenizer tokenizer;
    LoadOptions options;
    double loadMs = 0;
    // Module methods are not const in the API, but running them changes no state.
    mutable torch::jit::Module vision;
    mutable torch::jit::Module textEncoder;
    mutable torch::jit::Module decoder;

    torch::Tensor imageFeatures(const torch::Tensor& pixels) const {
        return vision.forward({pixels}).toTensor();
    }
    torch::Tensor encode(const torch::Tensor& features, const torch::Tensor& ids) const {
        return textEncoder.forward({features, ids, torch::ones_like(ids)}).toTensor();
    }

    torch::jit::Module& module(const std::string& role) const {
        return role == "vision" ? vision : role == "text_encoder" ? textEncoder : decoder;
    }

    // Puts every tensor the package stores once (the text encoder's token embedding is the
    // decoder's) into the module saved without it: one tensor in memory for both.
    void shareParameters() const {
        for (const SharedParameter& p : manifest.sharedParameters) {
            const std::string file = manifest.path(p.module);
            const std::string fromFile = manifest.path(p.fromModule);
            torch::Tensor value;
            try {
                auto [from, fromName] = parameterSlot(module(p.fromModule), p.fromName);
                value = from.attr(fromName).toTensor();
            } catch (const std::exception& e) {
                throw EngineError(fromFile + " " + e.what() + ", which manifest.json says " +
                                  p.module + " shares");
            }
            try {
                auto [to, name] = parameterSlot(module(p.module), p.name);
                // The exporter leaves a [0, …] tensor in its place, the other sizes as shared.
                const torch::Tensor placeholder = to.attr(name).toTensor();
                const bool empty = placeholder.dim() > 0 && placeholder.size(0) == 0;
                if (placeholder.dim() != value.dim() ||
                    (empty ? !placeholder.sizes().slice(1).equals(value.sizes().slice(1))
                           : !placeholder.sizes().equals(value.sizes())))
                    throw std::runtime_error("has " + p.name + " of another shape than " +
                                             p.fromName + " of " + fromFile);
                to.setattr(name, value);
            } catch (const c10::Error& e) {
                throw EngineError(file + ": cannot share " + p.name + " (" + oneLine(e) + ")");
            } catch (const std::exception& e) {
                throw EngineError(file + " " + e.what());
            }
        }
    }
};

Model::Model() : m_impl(std::make_unique<Impl>()) {}
Model::~Model() = default;

std::shared_ptr<const Model> Model::load(const std::string& packageDir,
                                         const LoadOptions& options) {
    const auto start = Clock::now();
    std::shared_ptr<Model> model(new Model());
    Impl& d = *model->m_impl;
    d.options = options;
    try {
        d.manifest = readManifest(packageDir);
        verifyPackageFiles(d.manifest, true, options.cancel);
        d.tokenizer = Tokenizer::fromFiles(d.manifest.path("vocab"), d.manifest.path("merges"));
    } catch (const EngineError&) {
        throw;
    } catch (const std::exception& e) {
        throw EngineError(e.what());
    }
    if (d.tokenizer.vocabSize() != d.manifest.vocabSize)
        throw EngineError(d.manifest.path("vocab") + " has " +
                          std::to_string(d.tokenizer.vocabSize()) +
                          " tokens with Florence-2's added ones, the model expects " +
                          std::to_string(d.manifest.vocabSize));
    if (d.manifest.precision != "float32")
        throw EngineError(d.manifest.dir + "/manifest.json: unknown precision " +
                          d.manifest.precision);

    // A module is a program: run only the code this version's exporter writes, whatever the
    // manifest's checksums say (its author computed them). All three from one model family.
    std::vector<std::string> families;
    for (const char* role : {"vision", "text_encoder", "decoder"}) {
        const std::string path = d.manifest.path(role);
        std::vector<std::string> found;
        try {
            found = detail::codeFamilies(role, detail::torchScriptCodeDigest(path));
        } catch (const detail::ArchiveError& e) {
            throw EngineError(e.what());
        }
        if (found.empty())
            throw EngineError(path +
                              ": its TorchScript code is not code Florence Studio's exporter "
                              "writes, so it is not run (the package was not made by this "
                              "version's exporter, or was changed); re-import the model from its "
                              "checkpoint (florence-studio-cli import --hf DIR --out PKG)");
        if (std::string(role) == "vision") {
            families = found;
        } else {
            std::vector<std::string> both;
            for (const std::string& f : found)
                if (std::find(families.begin(), families.end(), f) != families.end())
                    both.push_back(f);
            if (both.empty())
                throw EngineError(path + ": its TorchScript code is of another model than " +
                                  d.manifest.path("vision") +
                                  "; re-import the model from its checkpoint");
            families = both;
        }
    }

    setThreads(options.threads);
    tuneAllocator();
    // The simple executor: the profiling one re-specializes graphs for every new sequence length
    // during decoding, which costs more than it saves here.
    torch::jit::getProfilingMode() = false;
    auto checkCancel = [&] {
        if (options.cancel && options.cancel->load())
            throw EngineError("loading " + d.manifest.dir + " was cancelled");
    };
    checkCancel();
    d.vision = loadModule(d.manifest.path("vision"), d.manifest, options.precision);
    checkCancel();
    d.textEncoder = loadModule(d.manifest.path("text_encoder"), d.manifest, options.precision);
    checkCancel();
    d.decoder = loadModule(d.manifest.path("decoder"), d.manifest, options.precision);
    checkCancel();
    d.shareParameters();
    for (const char* method : {"step", "cross_kv", "new_cache", "forward_full"})
        if (!d.decoder.find_method(method))
            throw EngineError(d.manifest.path("decoder") + " has no " + method +
                              " method: it was not exported by this project's exporter");
    d.loadMs = msSince(start);
    return model;
}

int64_t Model::decodeStepBytes(int encoderTokens) const {
    const Manifest& m = m_impl->manifest;
    std::set<const void*> seen;
    int64_t bytes = 0;
    for (const auto& p : m_impl->decoder.named_parameters(true)) {
        const torch::Tensor& t = p.value;
        if (!seen.insert(t.data_ptr()).second)
            continue; // the LM head and the token embedding are one tensor
        const std::string& name = p.name;
        if (name.find("encoder_attn.k_proj") != std::string::npos ||
            name.find("encoder_attn.v_proj") != std::string::npos)
            continue; // computed once per request, not per step
        if (name.find("embed_positions") != std::string::npos)
            bytes += t.size(1) * t.element_size(); // one row per step
        else
            bytes += t.numel() * t.element_size();
    }
    for (const auto& b : m_impl->decoder.named_buffers(true))
        bytes += b.value.numel() * b.value.element_size();
    // Cross-attention keys and values, float32.
    bytes += int64_t(m.decoderLayers) * 2 * encoderTokens * m.dModel * 4;
    return bytes;
}

int64_t Model::weightBytes() const {
    std::set<const void*> seen;
    int64_t bytes = 0;
    for (const torch::jit::Module* m : {&m_impl->vision, &m_impl->textEncoder, &m_impl->decoder}) {
        for (const auto& p : m->named_parameters(true))
            if (p.value.numel() > 0 && seen.insert(p.value.data_ptr()).second)
                bytes += p.value.numel() * p.value.element_size();
        for (const auto& b : m->named_buffers(true))
            if (b.value.numel() > 0 && seen.insert(b.value.data_ptr()).second)
                bytes += b.value.numel() * b.value.element_size();
    }
    return bytes;
}

const Manifest& Model::manifest() const {
    return m_impl->manifest;
}
const Tokenizer& Model::tokenizer() const {
    return m_impl->tokenizer;
}
const LoadOptions& Model::loadOptions() const {
    return m_impl->options;
}
double Model::loadMs() const {
    return m_impl->loadMs;
}

GenerationOptions Model::defaultOptions() const {
    GenerationOptions o;
    const Manifest& m = m_impl->manifest;
    o.numBeams = m.numBeams;
    o.noRepeatNgramSize = m.noRepeatNgramSize;
    o.lengthPenalty = m.lengthPenalty;
    o.earlyStopping = m.earlyStopping;
    o.maxNewTokens = std::min(m.maxNewTokens, m.maxPositions);
    return o;
}

// ------------------------------------------------------------------------------------------
// Decoder backends

namespace {

// One token per step; the cache lives in a preallocated tensor written in place.
class CachedBackend : public detail::DecodeBackend {
public:
    CachedBackend(torch::jit::Module& decoder, torch::Tensor crossKv, torch::Tensor encoderMask)
        : m_decoder(decoder), m_crossKv(std::move(crossKv)), m_mask(std::move(encoderMask)) {}

    void begin(int batch, int capacity) override {
        m_cache = m_decoder.run_method("new_cache", batch, capacity).toTensor();
        m_ids = torch::empty({batch, 1}, torch::kInt64);
    }

    torch::Tensor next(const std::vector<std::vector<int64_t>>& seqs) override {
        int64_t* ids = m_ids.data_ptr<int64_t>();
        for (size_t b = 0; b < seqs.size(); ++b)
            ids[b] = seqs[b].back();
        const int64_t past = static_cast<int64_t>(seqs[0].size()) - 1;
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
};

// The whole prefix through the decoder at every step, cross-attention keys and values
// included: what a traced model without a cache does.
class FullBackend : public detail::DecodeBackend {
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

// ------------------------------------------------------------------------------------------
// Session

struct Session::State {
    struct Features {
        uint64_t key = 0;
        torch::Tensor features;
    };
    std::list<Features> features; // most recent first
    static constexpr size_t kMaxFeatures = 4;

    torch::Tensor find(uint64_t key) {
        for (auto it = features.begin(); it != features.end(); ++it)
            if (it->key == key) {
                features.splice(features.begin(), features, it);
                return features.front().features;
            }
        return {};
    }
    void remember(uint64_t key, torch::Tensor f) {
        features.push_front({key, std::move(f)});
        if (features.size() > kMaxFeatures)
            features.pop_back();
    }
};

Session::Session(std::shared_ptr<const Model> model)
    : m_model(std::move(model)), m_state(std::make_unique<State>()) {
    if (!m_model)
        throw EngineError("Session needs a loaded model");
}

Session::~Session() = default;

void Session::clearFeatureCache() {
    m_state->features.clear();
}

namespace {

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

} // namespace

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

Result Session::generate(const Request& request, const GenerationOptions& options,
                         const TokenCallback& onToken, const std::atomic<bool>* cancel) {
    BatchTokenCallback batchCallback;
    if (onToken)
        batchCallback = [&](size_t, const TokenEvent& e) { return onToken(e); };
    return std::move(generateBatch({request}, options, batchCallback, cancel)[0]);
}

std::vector<Result> Session::generateBatch(const std::vector<Request>& requests,
                                           const GenerationOptions& options,
                                           const BatchTokenCallback& onToken,
                                           const std::atomic<bool>* cancel) {
    if (requests.empty())
        return {};
    try {
        if (options.numBeams > 1 && requests.size() > 1) {
            // Beam search keeps its beams in the batch dimension; requests go one by one.
            std::vector<Result> results;
            for (size_t i = 0; i < requests.size(); ++i) {
                BatchTokenCallback one;
                if (onToken)
                    one = [&, i](size_t, const TokenEvent& e) { return onToken(i, e); };
                results.push_back(std::move(generateRows({requests[i]}, options, one, cancel)[0]));
            }
            return results;
        }
        return generateRows(requests, options, onToken, cancel);
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

std::vector<Result> Session::generateRows(const std::vector<Request>& requests,
                                          const GenerationOptions& options,
                                          const BatchTokenCallback& onToken,
                                          const std::atomic<bool>* cancel) {
    const auto start = Clock::now();
    c10::InferenceMode guard;
    const Model::Impl& impl = m_model->impl();
    const Manifest& m = impl.manifest;
    const int batch = static_cast<int>(requests.size());
    std::vector<Result> results(batch);

    if (options.numBeams < 1 || options.numBeams > 16)
        throw EngineError("beams must be between 1 and 16, not " +
                          std::to_string(options.numBeams));
    if (options.maxNewTokens < 1)
        throw EngineError("maximum new tokens must be at least 1");
    if (options.maxNewTokens > m.maxPositions)
        throw EngineError("maximum new tokens is " + std::to_string(options.maxNewTokens) +
                          "; this model's decoder holds at most " + std::to_string(m.maxPositions));
    size_t longestPrompt = 0;
    for (int b = 0; b < batch; ++b) {
        const Request& request = requests[b];
        if (request.pixelValues.empty() && request.image.empty())
            throw EngineError("no image: load an image first");
        results[b].promptIds = impl.tokenizer.encode(request.prompt);
        checkPrompt(m, results[b].promptIds);
        longestPrompt = std::max(longestPrompt, results[b].promptIds.size());
    }

    // Image features: reused when the same image was seen by this session before; the others
    // go through the vision encoder together.
    std::vector<torch::Tensor> features(batch);
    std::vector<uint64_t> keys(batch, 0);
    std::vector<torch::Tensor> pixels;
    std::vector<int> pending;
    double preprocessMs = 0, visionMs = 0;
    {
        const auto t = Clock::now();
        for (int b = 0; b < batch; ++b) {
            const Request& request = requests[b];
            const bool fromImage = request.pixelValues.empty();
            if (fromImage && options.reuseFeatures) {
                keys[b] = hashImage(request.image);
                features[b] = m_state->find(keys[b]);
                // The same image twice in one batch is encoded once.
                for (int e = 0; e < b && !features[b].defined(); ++e)
                    if (keys[e] == keys[b] &&
                        std::find(pending.begin(), pending.end(), e) == pending.end())
                        features[b] = features[e];
                results[b].timings.featuresReused = features[b].defined();
                if (features[b].defined())
                    continue;
            }
            if (fromImage) {
                std::vector<float> chw =
                    preprocess(request.image, m.imageWidth, m.imageHeight, m.imageMean, m.imageStd);
                pixels.push_back(toTensor(chw, {1, 3, m.imageHeight, m.imageWidth}));
            } else {
                pixels.push_back(pixelTensor(m, request.pixelValues));
            }
            pending.push_back(b);
        }
        preprocessMs = msSince(t);
    }
    if (!pending.empty() && !(cancel && cancel->load())) {
        const auto t = Clock::now();
        torch::Tensor all = impl.imageFeatures(torch::cat(pixels, 0));
        for (size_t i = 0; i < pending.size(); ++i) {
            const int b = pending[i];
            features[b] = all.narrow(0, static_cast<int64_t>(i), 1);
            if (options.reuseFeatures && requests[b].pixelValues.empty())
                m_state->remember(keys[b], features[b]);
        }
        visionMs = msSince(t);
    }

    auto stopNow = [&] {
        if (!cancel || !cancel->load())
            return false;
        for (Result& r : results) {
            r.cancelled = true;
            r.timings.preprocessMs = preprocessMs;
            r.timings.visionMs = visionMs;
            r.timings.totalMs = msSince(start);
        }
        return true;
    };
    if (stopNow())
        return results;

    // Prompts padded to the longest with <pad>; the mask keeps padding out of attention, so a
    // batched request sees exactly what it would alone.
    const auto tEnc = Clock::now();
    const int64_t promptLen = static_cast<int64_t>(longestPrompt);
    torch::Tensor ids = torch::full({batch, promptLen}, m.padId, torch::kInt64);
    torch::Tensor promptMask = torch::zeros({batch, promptLen}, torch::kInt64);
    for (int b = 0; b < batch; ++b) {
        const auto& p = results[b].promptIds;
        const int64_t n = static_cast<int64_t>(p.size());
        ids[b].narrow(0, 0, n).copy_(torch::tensor(p, torch::kInt64));
        promptMask[b].narrow(0, 0, n).fill_(1);
    }
    torch::Tensor featureBatch = torch::cat(features, 0);
    torch::Tensor hidden = impl.textEncoder.forward({featureBatch, ids, promptMask}).toTensor();
    torch::Tensor mask =
        torch::cat({torch::ones({batch, featureBatch.size(1)}, torch::kInt64), promptMask}, 1);
    const double textEncoderMs = msSince(tEnc);
    if (stopNow())
        return results;

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

    std::vector<std::string> reported(batch);
    detail::SearchCallbacks callbacks;
    callbacks.cancel = cancel;
    callbacks.onStep = [&](int index, int step, int64_t id, const std::vector<int64_t>& best,
                           double ms) {
        if (step == 0)
            results[index].timings.firstTokenMs = msSince(start);
        if (!onToken)
            return true;
        TokenEvent e;
        e.step = step;
        e.id = id;
        e.stepMs = ms;
        e.preprocessMs = preprocessMs;
        e.visionMs = visionMs;
        e.textEncoderMs = textEncoderMs;
        e.sequence = best;
        std::string full = impl.tokenizer.decode(best);
        full.resize(completeUtf8Prefix(full));
        std::string& seen = reported[index];
        if (full.compare(0, seen.size(), seen) == 0) {
            e.textDelta = full.substr(seen.size());
        } else {
            e.rewound = true;
            e.textDelta = full;
        }
        e.text = full;
        seen = std::move(full);
        return onToken(static_cast<size_t>(index), e);
    };

    std::unique_ptr<detail::DecodeBackend> backend;
    if (options.useCache) {
        torch::Tensor crossKv = impl.decoder.run_method("cross_kv", hidden).toTensor();
        backend = std::make_unique<CachedBackend>(impl.decoder, crossKv, mask);
    } else {
        backend = std::make_unique<FullBackend>(impl.decoder, hidden, mask);
    }
    const auto tDecode = Clock::now();
    std::vector<detail::SearchResult> found;
    if (options.numBeams > 1)
        found.push_back(detail::beamSearch(*backend, s, callbacks));
    else
        found = detail::greedySearchBatch(*backend, s, batch, callbacks);
    const double decodeMs = msSince(tDecode);
    const double totalMs = msSince(start);

    for (int b = 0; b < batch; ++b) {
        Result& r = results[b];
        r.generatedIds = std::move(found[b].sequence);
        r.score = found[b].score;
        r.cancelled = found[b].cancelled;
        r.text = impl.tokenizer.decode(r.generatedIds);
        r.timings.stepMs = std::move(found[b].stepMs);
        r.timings.preprocessMs = preprocessMs;
        r.timings.visionMs = visionMs;
        r.timings.textEncoderMs = textEncoderMs;
        r.timings.decodeMs = decodeMs;
        r.timings.totalMs = totalMs;
    }
    return results;
}

} // namespace florence
