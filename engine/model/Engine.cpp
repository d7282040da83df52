#include <florence/engine.h>

#include "KernelPath.h"
#include "Ops.h"
#include "model/CancellableFile.h"
#include "model/CodeCheck.h"
#include "model/Generator.h"
#include <florence/machine.h>
#include <florence/process.h>
#include <florence/stats.h>
#include <florence/tasks.h>

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <set>

namespace florence {

namespace {

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

EngineError cancelledError(const Manifest& manifest) {
    return EngineError("loading " + manifest.dir + " was cancelled");
}

std::vector<torch::jit::Module> linearModules(const torch::jit::Module& m) {
    std::vector<torch::jit::Module> found;
    for (const auto& sub : m.named_modules()) {
        const auto type = sub.value.type()->name();
        if (type && type->name() == "Linear")
            found.push_back(sub.value);
    }
    return found;
}

// int8 weights: symmetric, one scale per output channel (its largest magnitude / 127), as a
// per-channel quantized tensor, which carries its scales with it, so the model code's
// linear(x, weight, bias) is unchanged and florence::linear_rows reads both. Made at load from
// the float32 weights (about 1 s for base, see README), after shared and generated parameters
// are in place: the LM head gets its own int8 copy of the token embedding, which stays float32
// for the lookup.
torch::Tensor quantizeInt8(const torch::Tensor& weight) {
    const torch::Tensor w = weight.to(torch::kFloat32).contiguous();
    const torch::Tensor scales = (w.abs().amax({1}).to(torch::kDouble) / 127.0).clamp_min(1e-30);
    return at::quantize_per_channel(w, scales, torch::zeros({w.size(0)}, torch::kLong), 0,
                                    torch::kQInt8);
}

torch::jit::Module loadModule(const std::string& path, const Manifest& manifest,
                              Precision precision, const std::atomic<bool>* cancel) {
    try {
        torch::jit::Module m =
            torch::jit::load(std::make_shared<detail::CancellableFile>(path, cancel), torch::kCPU);
        m.eval();
        if (manifest.storage == "float16")
            m.to(torch::kFloat32);
        if (precision == Precision::BFloat16) {
            // Only the linear layers: they carry nearly all the work and bytes, and the model's
            // linear() helper runs them with oneDNN's bf16 kernels.
            for (torch::jit::Module lin : linearModules(m))
                lin.setattr("weight", lin.attr("weight").toTensor().to(torch::kBFloat16));
        }
        return m;
    } catch (const c10::Error& e) {
        if (cancel && cancel->load()) // the archive reader failed on a short read
            throw cancelledError(manifest);
        throw EngineError(path +
                          " cannot be loaded as a TorchScript module (damaged, or written "
                          "by another exporter): " +
                          oneLine(e));
    } catch (const std::exception& e) {
        if (cancel && cancel->load())
            throw cancelledError(manifest);
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

// A generator seed from the package's seed and a tensor's name (FNV-1a, then splitmix64's
// finalizer, so neighbouring names give unrelated seeds).
uint64_t mixSeed(uint64_t seed, const std::string& name) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : name)
        h = (h ^ c) * 1099511628211ull;
    uint64_t z = seed ^ h;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

} // namespace

// ------------------------------------------------------------------------------------------
// Model

const char* precisionName(Precision p) {
    switch (p) {
    case Precision::BFloat16:
        return "bfloat16";
    case Precision::Int8:
        return "int8";
    default:
        return "float32";
    }
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
    std::vector<std::string> int8Modules; // filled by the quantize functions
    Precision encoderPrecision = Precision::Float32;
    std::string precisionNote;

    torch::Tensor imageFeatures(const torch::Tensor& pixels) const {
        return vision.forward({pixels}).toTensor();
    }
    torch::Tensor encode(const torch::Tensor& features, const torch::Tensor& ids) const {
        return textEncoder.forward({features, ids, torch::ones_like(ids)}).toTensor();
    }

    torch::jit::Module& module(const std::string& role) const {
        return role == "vision" ? vision : role == "text_encoder" ? textEncoder : decoder;
    }

    // int8: the encoders' large linear layers (both sides >= 512: Florence-2-base's vision
    // stages 2 and 3 and its text encoder, about 80% of an image's multiply-adds), when the
    // package's code runs them with florence::linear_int8 (it has int8_products(); an earlier
    // exporter's does not). oneDNN's int8 GEMM is ~1.8x its bfloat16 one on these shapes and
    // slower on the smaller ones, which stay bfloat16 (README, Precision).
    // An encoder wider than Florence-2-base's (vision: last stage 1024 channels, large 2048;
    // text: d_model 768, large 1024) stays bfloat16: oneDNN quantizes each product's
    // activations with one scale per tensor, and over large's wider layers that error grows
    // (speed demo at large size, the decoder's logits cosine against float32: 0.9931 with both
    // encoders int8, 0.9987 with the text encoder alone, 0.9989 with neither; image features
    // 7.6-11% from float32 in int8 against 3% in bfloat16. At base, everything int8: 0.9998).
    static constexpr int64_t kInt8VisionMaxWidth = 1024;
    static constexpr int64_t kInt8TextMaxWidth = 768;

    void quantizeEncoders() {
        for (const char* role : {"vision", "text_encoder"}) {
            const torch::jit::Module& m = module(role);
            if (!m.find_method("int8_products"))
                continue;
            if (&m == &vision ? visionWidth() > kInt8VisionMaxWidth
                              : manifest.dModel > kInt8TextMaxWidth)
                continue;
            bool any = false;
            for (torch::jit::Module lin : linearModules(m)) {
                const torch::Tensor w = lin.attr("weight").toTensor();
                if (w.dim() == 2 && w.size(0) >= 512 && w.size(1) >= 512) {
                    lin.setattr("weight", quantizeInt8(w));
                    any = true;
                }
            }
            if (any)
                int8Modules.push_back(role);
            if (options.cancel && options.cancel->load())
                throw cancelledError(manifest);
        }
    }

    // The vision encoder's last-stage width: the rows of its image projection.
    int64_t visionWidth() const {
        if (!vision.hasattr("image_projection") || !vision.attr("image_projection").isTensor())
            return 0;
        const torch::Tensor p = vision.attr("image_projection").toTensor();
        return p.dim() == 2 ? p.size(0) : 0;
    }

    // Architecture packages: every parameter is an empty placeholder; fill each from a seeded
    // normal distribution with the package's recipe. One generator per tensor, seeded by the
    // package's seed and the tensor's name, so the weights do not depend on the list's order.
    void generateParameters() const {
        for (const GeneratedParameter& p : manifest.generatedParameters) {
            // Filling the large speed-demo package takes seconds: a load stops between tensors.
            if (options.cancel && options.cancel->load())
                throw cancelledError(manifest);
            const std::string file = manifest.path(p.module);
            const at::Generator generator = at::detail::createCPUGenerator(
                mixSeed(manifest.generatedSeed, p.module + "/" + p.names.front()));
            const torch::Tensor value =
                at::normal(p.mean, p.std, p.shape, generator, torch::kFloat32);
            for (const std::string& name : p.names) {
                try {
                    auto [to, slot] = parameterSlot(module(p.module), name);
                    const torch::Tensor placeholder = to.attr(slot).toTensor();
                    if (placeholder.dim() != value.dim() || placeholder.size(0) != 0 ||
                        !placeholder.sizes().slice(1).equals(value.sizes().slice(1)))
                        throw std::runtime_error("has " + name + " of another shape than " +
                                                 "manifest.json generates");
                    // Linear weights are bfloat16 already when that precision was chosen.
                    to.setattr(slot, value.to(placeholder.scalar_type()));
                } catch (const c10::Error& e) {
                    throw EngineError(file + ": cannot fill " + name + " (" +
                                      std::string(e.what_without_backtrace()).substr(0, 200) + ")");
                } catch (const std::exception& e) {
                    throw EngineError(file + " " + e.what());
                }
            }
        }
    }

    // int8: the decoder's linear layers (its decoding step and the LM head), once every
    // parameter is in place.
    // LibTorch quantizes on one thread: the layers are spread over the threads (base: about 1 s
    // of work, the LM head 0.4 of it).
    void quantizeDecoder() {
        std::vector<torch::jit::Module> layers = linearModules(decoder);
        std::vector<torch::Tensor> quantized(layers.size());
        at::parallel_for(0, int64_t(layers.size()), 1, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i)
                if (!(options.cancel && options.cancel->load()))
                    quantized[size_t(i)] =
                        quantizeInt8(layers[size_t(i)].attr("weight").toTensor());
        });
        if (options.cancel && options.cancel->load())
            throw cancelledError(manifest);
        for (size_t i = 0; i < layers.size(); ++i)
            layers[i].setattr("weight", quantized[i]);
        int8Modules.push_back("decoder");
    }

    // A parameter still empty once the package is loaded has no weights: a package that lists
    // it neither as shared nor as generated is broken, and would fail in the middle of a run.
    void checkNoEmptyParameters() const {
        for (const char* role : {"vision", "text_encoder", "decoder"})
            for (const auto& p : module(role).named_parameters(true))
                if (p.value.numel() == 0)
                    throw EngineError(manifest.path(role) + " has no weights for " + p.name +
                                      " (an incomplete package: re-export it)");
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

namespace {

// A module is a program: run only the code this version's exporter writes, whatever the
// manifest's checksums say (its author computed them). All three from one model family.
void checkModuleCode(const Manifest& manifest) {
    std::vector<std::string> families;
    for (const char* role : {"vision", "text_encoder", "decoder"}) {
        const std::string path = manifest.path(role);
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
                                  manifest.path("vision") +
                                  "; re-import the model from its checkpoint");
            families = both;
        }
    }
}

} // namespace

std::shared_ptr<const Model> Model::load(const std::string& packageDir,
                                         const LoadOptions& options) {
    const auto start = Clock::now();
    std::shared_ptr<Model> model(new Model());
    Impl& d = *model->m_impl;
    d.options = options;
    d.options.beforeModules = nullptr; // the caller's, for this load only
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

    checkModuleCode(d.manifest);
    addPackageTasks(d.manifest.tasks); // a fine-tune's own tasks, for taskInfo and the parser

    setThreads(options.threads);
    tuneAllocator();
    // The simple executor: the profiling one re-specializes graphs for every new sequence length
    // during decoding, which costs more than it saves here.
    torch::jit::getProfilingMode() = false;
    auto checkCancel = [&] {
        if (options.cancel && options.cancel->load())
            throw cancelledError(d.manifest);
    };
    checkCancel();
    if (options.beforeModules)
        options.beforeModules();
    // int8 loads the encoders in bfloat16 (README, Precision); their large linear layers and the
    // decoder are quantized below.
    // Both reduced precisions run the encoders' attention as bfloat16 batched products. Where
    // LibTorch sums those in bfloat16 (CPUs without AVX-512), the image features drift enough to
    // change the answers (a four-shape caption became "A yellow star."), so the encoders stay
    // float32 there and only the decoder, whose activations stay float32, takes the precision.
    const bool int8 = options.precision == Precision::Int8;
    const bool reduced = options.precision != Precision::Float32;
    const bool lowEncoders = reduced && bfloat16ProductsAccurate();
    const Precision encoders = !lowEncoders ? Precision::Float32
                               : int8       ? Precision::BFloat16
                                            : options.precision;
    const Precision decoder = int8 ? Precision::Float32 : options.precision;
    d.encoderPrecision = lowEncoders ? options.precision : Precision::Float32;
    if (reduced && !lowEncoders)
        // With the row kernels (engine/ops/KernelPath.h) a step reads the smaller weights at
        // memory speed; on the LibTorch path it is slower than float32's.
        d.precisionNote =
            std::string("the encoders run in float32 and only the decoder in ") +
            precisionName(options.precision) +
            ": without AVX-512, LibTorch's bfloat16 products sum in bfloat16, which changes the "
            "answers" +
            (ops::kernelPath() == ops::KernelPath::Torch
                 ? std::string(", and its reduced-precision kernels are slower than float32's; "
                               "float32 is the faster choice on this CPU")
                 : "; its decoding steps read the smaller weights with the " +
                       ops::rowKernelName() + " row kernels, faster than float32's");
    d.vision = loadModule(d.manifest.path("vision"), d.manifest, encoders, options.cancel);
    checkCancel();
    d.textEncoder =
        loadModule(d.manifest.path("text_encoder"), d.manifest, encoders, options.cancel);
    checkCancel();
    d.decoder = loadModule(d.manifest.path("decoder"), d.manifest, decoder, options.cancel);
    checkCancel();
    d.generateParameters();
    d.shareParameters();
    d.checkNoEmptyParameters();
    if (int8) {
        if (lowEncoders)
            d.quantizeEncoders();
        d.quantizeDecoder();
    }
    for (const char* method : {"step", "cross_kv", "new_cache", "forward_full"})
        if (!d.decoder.find_method(method))
            throw EngineError(d.manifest.path("decoder") + " has no " + method +
                              " method: it was not exported by this project's exporter");
    d.loadMs = msSince(start);
    return model;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> Model::parameterShapes() const {
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
    for (const char* role : {"vision", "text_encoder", "decoder"})
        for (const auto& p : m_impl->module(role).named_parameters(true))
            shapes.emplace_back(std::string(role) + "/" + p.name, p.value.sizes().vec());
    return shapes;
}

std::vector<std::string> Model::int8Modules() const {
    return m_impl->int8Modules;
}

Precision Model::encoderPrecision() const {
    return m_impl->encoderPrecision;
}

std::string Model::precisionNote() const {
    return m_impl->precisionNote;
}

int64_t Model::decodeStepBytes(int encoderTokens) const {
    const Manifest& m = m_impl->manifest;
    std::set<const void*> seen;
    int64_t bytes = 0;
    for (const auto& p : m_impl->decoder.named_parameters(true)) {
        const torch::Tensor& t = p.value;
        const std::string& name = p.name;
        if (name.find("encoder_attn.k_proj") != std::string::npos ||
            name.find("encoder_attn.v_proj") != std::string::npos)
            continue; // computed once per request, not per step
        // The embeddings: one row per step. The token embedding is the LM head's tensor in
        // float32 and bfloat16, which the LM head reads whole; in int8 the head has its own.
        if (name.find("embed_positions") != std::string::npos ||
            name.find("embed_tokens") != std::string::npos) {
            bytes += t.size(1) * t.element_size();
            continue;
        }
        if (!seen.insert(t.data_ptr()).second)
            continue;
        bytes += t.numel() * t.element_size();
        if (t.is_quantized()) // int8: a float64 scale per output channel
            bytes += t.size(0) * int64_t(sizeof(double));
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
    o.ignoreEos = m.ignoreEos;
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

namespace {

// The image features of the last few images this session encoded, so a second task on the same
// image skips the vision encoder.
class FeatureCache {
public:
    torch::Tensor find(uint64_t key) {
        for (auto it = m_entries.begin(); it != m_entries.end(); ++it)
            if (it->key == key) {
                m_entries.splice(m_entries.begin(), m_entries, it);
                return m_entries.front().features;
            }
        return {};
    }
    void remember(uint64_t key, torch::Tensor f) {
        m_entries.push_front({key, std::move(f)});
        if (m_entries.size() > kMaxEntries)
            m_entries.pop_back();
    }

private:
    struct Entry {
        uint64_t key = 0;
        torch::Tensor features;
    };
    std::list<Entry> m_entries; // most recent first
    static constexpr size_t kMaxEntries = 4;
};

} // namespace

// The text encoder's output for one image and prompt, run ahead of the request by
// encodeImage, with the decoder's cross-attention keys and values of it.
struct PromptEncoding {
    uint64_t imageKey = 0;
    std::vector<int64_t> ids;
    torch::Tensor hidden;  // [1, image tokens + prompt, d_model]
    torch::Tensor crossKv; // the decoder's cross_kv(hidden)
};

struct Session::State {
    FeatureCache features;
    std::optional<PromptEncoding> prompt; // the last one encodeImage made
};

Session::Session(std::shared_ptr<const Model> model)
    : m_model(std::move(model)), m_state(std::make_unique<State>()) {
    if (!m_model)
        throw EngineError("Session needs a loaded model");
}

Session::~Session() = default;

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

ImageEncoding Session::encodeImage(const RgbImage& image, const std::atomic<bool>* cancel,
                                   const std::string& prompt) {
    c10::InferenceMode guard;
    ImageEncoding out;
    auto cancelled = [&] { return out.cancelled = cancel && cancel->load(); };
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
        features = impl.imageFeatures(toTensor(chw, {1, 3, m.imageHeight, m.imageWidth}));
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
    const auto start = Clock::now();
    PromptEncoding e;
    e.imageKey = key;
    e.ids = std::move(ids);
    e.hidden = impl.encode(features, idTensor(e.ids));
    e.crossKv = impl.decoder.run_method("cross_kv", e.hidden).toTensor();
    out.textEncoderMs = msSince(start);
    m_state->prompt = std::move(e);
    out.promptEncoded = true;
    return out;
}

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

namespace {

// The steps of Session::generateRows, in the order it runs them.

void checkOptions(const Manifest& m, const GenerationOptions& options) {
    if (options.numBeams < 1 || options.numBeams > 16)
        throw EngineError("beams must be between 1 and 16, not " +
                          std::to_string(options.numBeams));
    if (options.maxNewTokens < 1)
        throw EngineError("maximum new tokens must be at least 1");
    if (options.maxNewTokens > m.maxPositions)
        throw EngineError("maximum new tokens is " + std::to_string(options.maxNewTokens) +
                          "; this model's decoder holds at most " + std::to_string(m.maxPositions));
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
// others preprocessed here and encoded together by encodePendingImages.
struct RowFeatures {
    std::vector<torch::Tensor> features; // per row; undefined until encoded
    std::vector<uint64_t> keys;          // per row; 0 when not cached
    std::vector<torch::Tensor> pixels;   // model inputs of the rows still to encode
    std::vector<int> pending;            // those rows
};

RowFeatures collectFeatures(const Manifest& m, FeatureCache& cache,
                            const std::vector<Request>& requests, const GenerationOptions& options,
                            std::vector<Result>& results) {
    const int batch = static_cast<int>(requests.size());
    RowFeatures rows;
    rows.features.resize(batch);
    rows.keys.assign(batch, 0);
    for (int b = 0; b < batch; ++b) {
        const Request& request = requests[b];
        const bool fromImage = request.pixelValues.empty();
        if (fromImage && options.reuseFeatures) {
            rows.keys[b] = hashImage(*request.image);
            rows.features[b] = cache.find(rows.keys[b]);
            // The same image twice in one batch is encoded once.
            for (int e = 0; e < b && !rows.features[b].defined(); ++e)
                if (rows.keys[e] == rows.keys[b] &&
                    std::find(rows.pending.begin(), rows.pending.end(), e) == rows.pending.end())
                    rows.features[b] = rows.features[e];
            results[b].timings.featuresReused = rows.features[b].defined();
            if (rows.features[b].defined())
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

void encodePendingImages(const Model::Impl& impl, FeatureCache& cache,
                         const std::vector<Request>& requests, const GenerationOptions& options,
                         RowFeatures& rows) {
    if (rows.pending.empty())
        return;
    torch::Tensor all = impl.imageFeatures(torch::cat(rows.pixels, 0));
    for (size_t i = 0; i < rows.pending.size(); ++i) {
        const int b = rows.pending[i];
        rows.features[b] = all.narrow(0, static_cast<int64_t>(i), 1);
        if (options.reuseFeatures && requests[b].pixelValues.empty())
            cache.remember(rows.keys[b], rows.features[b]);
    }
}

struct EncodedPrompts {
    torch::Tensor hidden; // [batch, image tokens + longest prompt, d_model]
    torch::Tensor mask;   // [batch, same]: 0 on padding
};

// Prompts padded to the longest with <pad>; the mask keeps padding out of attention, so a
// batched request sees exactly what it would alone.
EncodedPrompts encodePrompts(const Model::Impl& impl, const std::vector<torch::Tensor>& features,
                             const std::vector<Result>& results, size_t longestPrompt) {
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
    out.hidden = impl.textEncoder.forward({featureBatch, ids, promptMask}).toTensor();
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

// The text of one row's best hypothesis as it grows. A step that appends one token to the
// hypothesis reported before decodes only that token; a switch to another beam decodes the new
// hypothesis from the start. Bytes of a character split over tokens are held back until it is
// complete, so streamed text never shows half a character.
class StreamedText {
public:
    explicit StreamedText(const Tokenizer& tokenizer)
        : m_tokenizer(&tokenizer), m_decoder(tokenizer) {}

    // Sets the event's textDelta, rewound and text for hypothesis `best`.
    void update(const std::vector<int64_t>& best, TokenEvent& e) {
        const bool extends =
            best.size() == m_ids.size() + 1 && std::equal(m_ids.begin(), m_ids.end(), best.begin());
        if (extends) {
            e.textDelta = m_decoder.push(best.back());
            m_text += e.textDelta;
            m_ids.push_back(best.back());
        } else {
            m_decoder = Tokenizer::StreamDecoder(*m_tokenizer);
            std::string full;
            for (int64_t id : best)
                full += m_decoder.push(id);
            if (full.compare(0, m_text.size(), m_text) == 0) {
                e.textDelta = full.substr(m_text.size());
            } else {
                e.rewound = true;
                e.textDelta = full;
            }
            m_text = std::move(full);
            m_ids = best;
        }
        e.text = m_text;
    }

private:
    const Tokenizer* m_tokenizer;
    Tokenizer::StreamDecoder m_decoder;
    std::vector<int64_t> m_ids;
    std::string m_text;
};

std::unique_ptr<detail::DecodeBackend> makeBackend(const Model::Impl& impl,
                                                   const GenerationOptions& options,
                                                   const EncodedPrompts& encoded,
                                                   const torch::Tensor& crossKvAhead) {
    if (options.useCache) {
        torch::Tensor crossKv =
            crossKvAhead.defined() ? crossKvAhead
                                   : impl.decoder.run_method("cross_kv", encoded.hidden).toTensor();
        return std::make_unique<CachedBackend>(impl.decoder, crossKv, encoded.mask);
    }
    return std::make_unique<FullBackend>(impl.decoder, encoded.hidden, encoded.mask);
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
// listens, a TokenEvent with the row's text so far.
detail::SearchCallbacks streamingCallbacks(const Tokenizer& tokenizer, std::vector<Result>& results,
                                           const StageTimes& stages,
                                           const BatchTokenCallback& onToken,
                                           const std::atomic<bool>* cancel,
                                           Clock::time_point start) {
    auto streams =
        std::make_shared<std::vector<StreamedText>>(results.size(), StreamedText(tokenizer));
    detail::SearchCallbacks callbacks;
    callbacks.cancel = cancel;
    callbacks.onStep = [&results, &stages, &onToken, streams,
                        start](int index, int step, int64_t id, const std::vector<int64_t>& best,
                               double ms) {
        if (step == 0)
            results[index].timings.firstTokenMs = msSince(start);
        if (!onToken)
            return true;
        TokenEvent e;
        e.step = step;
        e.id = id;
        e.stepMs = ms;
        e.preprocessMs = stages.preprocessMs;
        e.visionMs = stages.visionMs;
        e.textEncoderMs = stages.textEncoderMs;
        e.sequence = best;
        (*streams)[static_cast<size_t>(index)].update(best, e);
        return onToken(static_cast<size_t>(index), e);
    };
    return callbacks;
}

} // namespace

const PromptEncoding* Session::promptEncodedAhead(const std::vector<Request>& requests,
                                                  const GenerationOptions& options,
                                                  const std::vector<Result>& results) const {
    const std::optional<PromptEncoding>& p = m_state->prompt;
    if (!p || requests.size() != 1 || !options.reuseFeatures || !requests[0].pixelValues.empty() ||
        p->ids != results[0].promptIds)
        return nullptr;
    return hashImage(*requests[0].image) == p->imageKey ? &*p : nullptr;
}

std::vector<Result> Session::generateRows(const std::vector<Request>& requests,
                                          const GenerationOptions& options,
                                          const BatchTokenCallback& onToken,
                                          const std::atomic<bool>* cancel) {
    const auto start = Clock::now();
    c10::InferenceMode guard;
    const Model::Impl& impl = m_model->impl();
    const Manifest& m = impl.manifest;
    std::vector<Result> results(requests.size());
    const auto cancelled = [cancel] { return cancel && cancel->load(); };

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
        encoded = encodePrompts(impl, rows.features, results, longestPrompt);
        stages.textEncoderMs = msSince(t);
    }
    if (cancelled())
        return cancelledBeforeDecoding(results, stages, msSince(start));

    const detail::SearchSettings settings = searchSettings(m, options);
    const detail::SearchCallbacks callbacks =
        streamingCallbacks(impl.tokenizer, results, stages, onToken, cancel, start);
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
    return results;
}

} // namespace florence
