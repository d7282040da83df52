// Model::load: the package's files checked, its TorchScript code checked against the allow-list,
// the modules loaded in the chosen precision and their shared and generated parameters filled.
#include "runtime/ModelImpl.h"

#include "KernelPath.h"
#include "Ops.h"
#include "PackCache.h"
#include "decoding/NativeStep.h"
#include "package/CancellableFile.h"
#include "package/CodeCheck.h"
#include "runtime/PrecisionPlan.h"
#include "runtime/TorchError.h"
#include <florence/machine.h>
#include <florence/process.h>
#include <florence/stats.h>
#include <florence/tasks.h>

#include <torch/csrc/jit/runtime/graph_executor.h>

#include <algorithm>
#include <array>
#include <functional>
#include <optional>

namespace florence {

namespace detail {

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

} // namespace detail

using detail::cancelledError;
using detail::linearModules;
using detail::oneLine;

namespace {

// A module in bfloat16: only its linear layers, which carry nearly all the work and bytes, and
// which the model's linear() helper runs with oneDNN's bf16 kernels.
void toBFloat16(torch::jit::Module& m) {
    for (torch::jit::Module lin : linearModules(m))
        lin.setattr("weight", lin.attr("weight").toTensor().to(torch::kBFloat16));
}

torch::jit::Module loadModule(const std::string& path, const Manifest& manifest,
                              Precision precision, const std::atomic<bool>* cancel,
                              std::function<void(size_t bytes)> onRead) {
    try {
        torch::jit::Module m = torch::jit::load(
            std::make_shared<detail::CancellableFile>(path, cancel, std::move(onRead)),
            torch::kCPU);
        m.eval();
        if (manifest.storage == "float16")
            m.to(torch::kFloat32);
        if (precision == Precision::BFloat16)
            toBFloat16(m);
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

bool hasModule(const Model::Impl& d, const char* role) {
    return std::find(d.int8Modules.begin(), d.int8Modules.end(), role) != d.int8Modules.end();
}

// What runs where the encoders do not take the chosen precision (Model::precisionNote).
std::string floatEncodersNote(const Model::Impl& d, Precision precision) {
    const ops::KernelPath path = ops::kernelPath();
    const bool vision8 = hasModule(d, "vision"), text8 = hasModule(d, "text_encoder");
    std::string note;
    if (vision8 || text8)
        note = std::string("the encoders run in float32 except the large products of ") +
               (vision8 && text8 ? "both"
                : vision8        ? "the vision encoder"
                                 : "the text encoder") +
               ", which run in int8 like the decoder (an int8 GEMM on " + ops::int8GemmKind() +
               ", activations quantized per row)";
    else
        note = std::string("the encoders run in float32 and only the decoder in ") +
               precisionName(precision);
    // Why not bfloat16 activations, as bfloat16 has on AVX-512.
    const bool ownGemm = precision == Precision::Int8 && ops::ownInt8Gemm();
    note += ownGemm && path == ops::KernelPath::Avx512 && bfloat16ProductsAccurate()
                ? ": with the int8 GEMM's float32 activations the first token comes sooner than "
                  "with bfloat16 ones"
            : bfloat16ProductsAccurate()
                ? ": the AVX2 kernels were asked for (FLORENCE_KERNELS=avx2)"
            : bfloat16ProductsRun() ? ": without AVX-512, LibTorch's bfloat16 products sum in "
                                      "bfloat16, which changes the answers"
                                    : ": LibTorch cannot run bfloat16 products here (oneDNN "
                                      "is held below the CPU's bfloat16 instructions)";
    if (vision8 || text8)
        return note; // the int8 decoder's kernels: the runtime line names them
    if (ownGemm)
        note += !d.hasFloatActivationInt8()
                    ? ", and this package's encoder code predates int8 products with float32 "
                      "activations"
                : d.visionWidth() > Model::Impl::kInt8VisionMaxWidth
                    ? ", and encoders wider than Florence-2-base's lose too much accuracy with "
                      "int8 products"
                    : ", and none of their products is large enough to gain from int8";
    if (path == ops::KernelPath::Torch)
        note += "; its reduced-precision kernels are slower than float32's: float32 is the "
                "faster choice on this CPU";
    else
        note += "; its decoding steps read the smaller weights with the " + ops::rowKernelName() +
                " row kernels, faster than float32's";
    return note;
}

// Model::load's progress: each stage weighs what it reads or makes (the files hashed, each
// module's archive, the generated weights, the weights quantized), so the fraction moves about
// evenly in time whatever the package holds. Reported at most once per percent.
class LoadProgress {
public:
    LoadProgress(const Manifest& m, const LoadOptions& options) : m_onProgress(options.onProgress) {
        if (!m_onProgress)
            return;
        auto fileBytes = [&](const char* role) {
            const auto it = m.files.find(role);
            return it == m.files.end() ? 0.0 : double(std::max<int64_t>(0, it->second.size));
        };
        double generated = 0;
        for (const GeneratedParameter& p : m.generatedParameters) {
            double n = 4;
            for (int64_t d : p.shape)
                n *= double(d);
            generated += n;
        }
        const double modules =
            fileBytes("vision") + fileBytes("text_encoder") + fileBytes("decoder");
        double all = 0;
        for (const auto& entry : m.files)
            all += double(std::max<int64_t>(0, entry.second.size));
        m_weight = {all,
                    fileBytes("vision"),
                    fileBytes("text_encoder"),
                    fileBytes("decoder"),
                    std::max(generated, 0.01 * modules),
                    options.precision == Precision::Int8 ? fileBytes("decoder") : 0.0};
        for (double w : m_weight)
            m_total += w;
    }

    // `fraction` of `stage` is done.
    void update(LoadStage stage, double fraction) {
        if (!m_onProgress || m_total <= 0)
            return;
        const size_t at = static_cast<size_t>(stage);
        double before = 0;
        for (size_t i = 0; i < at; ++i)
            before += m_weight[i];
        const double f =
            std::clamp((before + std::clamp(fraction, 0.0, 1.0) * m_weight[at]) / m_total, 0.0,
                       0.999); // 1 is for finished()
        if (stage == m_stage && f < m_reported + 0.01)
            return;
        m_stage = stage;
        m_reported = std::max(m_reported, f);
        m_onProgress(stage, m_reported);
    }
    void finished() {
        if (m_onProgress)
            m_onProgress(m_stage, 1.0);
    }

private:
    LoadProgressCallback m_onProgress;
    std::array<double, 6> m_weight{}; // by LoadStage
    double m_total = 0;
    LoadStage m_stage = LoadStage::VerifyingFiles;
    double m_reported = -1;
};

} // namespace

const char* loadStageName(LoadStage stage) {
    switch (stage) {
    case LoadStage::VerifyingFiles:
        return "verifying the files";
    case LoadStage::ReadingVision:
        return "reading the vision encoder";
    case LoadStage::ReadingTextEncoder:
        return "reading the text encoder";
    case LoadStage::ReadingDecoder:
        return "reading the decoder";
    case LoadStage::PreparingWeights:
        return "preparing the weights";
    case LoadStage::Quantizing:
        return "quantizing to int8";
    }
    return "loading";
}

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

void Model::Impl::generateParameters(const std::function<void(double)>& onProgress) const {
    const size_t count = manifest.generatedParameters.size();
    for (size_t i = 0; i < count; ++i) {
        const GeneratedParameter& p = manifest.generatedParameters[i];
        if (onProgress)
            onProgress(double(i) / double(count));
        // Filling the large speed-demo package takes seconds: a load stops between tensors.
        if (options.cancel && options.cancel->load())
            throw cancelledError(manifest);
        const std::string file = manifest.path(p.module);
        const at::Generator generator = at::detail::createCPUGenerator(
            mixSeed(manifest.generatedSeed, p.module + "/" + p.names.front()));
        const torch::Tensor value = at::normal(p.mean, p.std, p.shape, generator, torch::kFloat32);
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

void Model::Impl::checkNoEmptyParameters() const {
    for (const char* role : {"vision", "text_encoder", "decoder"})
        for (const auto& p : module(role).named_parameters(true))
            if (p.value.numel() == 0)
                throw EngineError(manifest.path(role) + " has no weights for " + p.name +
                                  " (an incomplete package: re-export it)");
}

void Model::Impl::shareParameters() const {
    for (const SharedParameter& p : manifest.sharedParameters) {
        const std::string file = manifest.path(p.module);
        const std::string fromFile = manifest.path(p.fromModule);
        torch::Tensor value;
        try {
            auto [from, fromName] = parameterSlot(module(p.fromModule), p.fromName);
            value = from.attr(fromName).toTensor();
        } catch (const std::exception& e) {
            throw EngineError(fromFile + " " + e.what() + ", which manifest.json says " + p.module +
                              " shares");
        }
        try {
            auto [to, name] = parameterSlot(module(p.module), p.name);
            // The exporter leaves a [0, …] tensor in its place, the other sizes as shared.
            const torch::Tensor placeholder = to.attr(name).toTensor();
            const bool empty = placeholder.dim() > 0 && placeholder.size(0) == 0;
            if (placeholder.dim() != value.dim() ||
                (empty ? !placeholder.sizes().slice(1).equals(value.sizes().slice(1))
                       : !placeholder.sizes().equals(value.sizes())))
                throw std::runtime_error("has " + p.name + " of another shape than " + p.fromName +
                                         " of " + fromFile);
            to.setattr(name, value);
        } catch (const c10::Error& e) {
            throw EngineError(file + ": cannot share " + p.name + " (" + oneLine(e) + ")");
        } catch (const std::exception& e) {
            throw EngineError(file + " " + e.what());
        }
    }
}

Model::Model() : m_impl(std::make_unique<Impl>()) {}
Model::~Model() {
    // The operators' packed weights of this model (int8 encoders, convolutions) go with it,
    // not at the next call of the same operator, which another precision may never make. Named
    // by the model's tensors, while they live: oneDNN's packed form holds its weight, which
    // would never be gone.
    ops::WeightSet weights;
    if (m_impl)
        for (const torch::jit::Module* m :
             {&m_impl->vision, &m_impl->textEncoder, &m_impl->decoder})
            try {
                for (const auto& a : m->named_attributes(/*recurse=*/true))
                    if (a.value.isTensor())
                        weights.insert(a.value.toTensor().unsafeGetTensorImpl());
            } catch (const c10::Error&) {
                // A module a failed load never filled.
            }
    ops::dropPacks(weights);
    m_impl.reset();
    ops::dropPacks(); // and what only the modules still held
}

namespace {

// A module is a program: run only the code this version's exporter writes, whatever the
// manifest's checksums say (its author computed them). All three from one model family.
// Returns whether the decoder's code is this version's exporter's (NativeStep.h may run it).
bool checkModuleCode(const Manifest& manifest) {
    std::vector<std::string> families;
    bool currentDecoder = false;
    for (const char* role : {"vision", "text_encoder", "decoder"}) {
        const std::string path = manifest.path(role);
        std::vector<std::string> found;
        try {
            const std::string digest = detail::torchScriptCodeDigest(path);
            found = detail::codeFamilies(role, digest);
            if (std::string(role) == "decoder")
                currentDecoder = detail::currentExporterCode(role, digest);
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
    return currentDecoder;
}

} // namespace

std::shared_ptr<const Model> Model::load(const std::string& packageDir,
                                         const LoadOptions& options) {
    const auto start = Clock::now();
    std::shared_ptr<Model> model(new Model());
    Impl& d = *model->m_impl;
    d.options = options;
    d.options.beforeModules = nullptr; // the caller's, for this load only
    d.options.onProgress = nullptr;
    std::optional<LoadProgress> progress;
    try {
        d.manifest = readManifest(packageDir);
        progress.emplace(d.manifest, options);
        progress->update(LoadStage::VerifyingFiles, 0);
        VerifyOptions verify;
        verify.cancel = options.cancel;
        verify.onProgress = [&](double f) { progress->update(LoadStage::VerifyingFiles, f); };
        verifyPackageFiles(d.manifest, verify);
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

    const bool currentDecoder = checkModuleCode(d.manifest);
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
    // Which precision each module loads in and which int8 quantization follows (PrecisionPlan.h).
    // A fact is asked for only where the plan depends on it: the bfloat16 probe runs a product,
    // and asking for oneDNN's int8 GEMM makes it LibTorch's quantized engine. The package's code
    // is known once its modules are loaded: they load as planned for this exporter's code, and the
    // plan is made again with it before quantizing (an earlier package's encoders may then turn
    // bfloat16).
    PrecisionFacts facts;
    facts.ownInt8Gemm = ops::ownInt8Gemm();
    facts.encodersTooWideForInt8 = d.manifest.dModel > Model::Impl::kInt8TextMaxWidth;
    if (options.precision != Precision::Float32)
        facts.bfloat16ProductsAccurate = bfloat16ProductsAccurate();
    // The decoder's products of five rows and more (the prompt, the image features' keys and
    // values) are LibTorch's in bfloat16: where it refuses them every run would fail.
    if (options.precision == Precision::BFloat16 && !bfloat16ProductsRun())
        throw EngineError(d.manifest.dir +
                          ": cannot run in bfloat16 on this machine: LibTorch cannot run "
                          "bfloat16 products here (oneDNN held below the CPU's bfloat16 "
                          "instructions, e.g. by DNNL_MAX_CPU_ISA); float32 and int8 can");
    const bool int8Own =
        options.precision == Precision::Int8 && facts.ownInt8Gemm && !facts.encodersTooWideForInt8;
    if (int8Own)
        facts.int8GemmAvailable = ops::int8GemmAvailable();
    facts.floatActivationInt8Code = true;
    const PrecisionPlan loading = planPrecision(options.precision, facts);
    // The bytes read of a module's archive, as the share of it done.
    auto reading = [&](LoadStage stage, const char* role) {
        const double size = double(std::max<int64_t>(1, d.manifest.files.at(role).size));
        progress->update(stage, 0);
        return [&progress, stage, size](size_t bytes) {
            progress->update(stage, double(bytes) / size);
        };
    };
    d.vision = loadModule(d.manifest.path("vision"), d.manifest, loading.encoders, options.cancel,
                          reading(LoadStage::ReadingVision, "vision"));
    checkCancel();
    d.textEncoder =
        loadModule(d.manifest.path("text_encoder"), d.manifest, loading.encoders, options.cancel,
                   reading(LoadStage::ReadingTextEncoder, "text_encoder"));
    checkCancel();
    d.decoder = loadModule(d.manifest.path("decoder"), d.manifest, loading.decoder, options.cancel,
                           reading(LoadStage::ReadingDecoder, "decoder"));
    checkCancel();
    progress->update(LoadStage::PreparingWeights, 0);
    d.generateParameters([&](double f) { progress->update(LoadStage::PreparingWeights, f); });
    d.shareParameters();
    d.checkNoEmptyParameters();
    if (int8Own)
        facts.floatActivationInt8Code = d.hasFloatActivationInt8();
    const PrecisionPlan plan = planPrecision(options.precision, facts);
    if (plan.encoders == Precision::BFloat16 && loading.encoders != Precision::BFloat16) {
        toBFloat16(d.vision);
        toBFloat16(d.textEncoder);
    }
    if (plan.quantizeDecoder)
        progress->update(LoadStage::Quantizing, 0);
    if (plan.encoderInt8 != EncoderInt8::None)
        d.quantizeEncoders(plan.encoderInt8 == EncoderInt8::FloatActivations);
    if (plan.quantizeDecoder)
        d.quantizeDecoder();
    d.encoderPrecision = hasModule(d, "vision") || hasModule(d, "text_encoder")
                             ? Precision::Int8
                             : plan.encoderReport;
    if (plan.floatEncodersNote)
        d.precisionNote = floatEncodersNote(d, options.precision);
    for (const char* method : {"step", "cross_kv", "new_cache", "forward_full"})
        if (!d.decoder.find_method(method))
            throw EngineError(d.manifest.path("decoder") + " has no " + method +
                              " method: it was not exported by this project's exporter");
    // The decoder's code is the one NativeStep mirrors: its steps run from C++. Should the
    // module lack what that code has (it cannot, with this digest), the scripted step runs.
    const char* native = std::getenv("FLORENCE_NATIVE_STEP");
    if (currentDecoder && !(native && std::string(native) == "0")) {
        try {
            d.nativeStep = detail::NativeStep::fromModule(d.decoder);
        } catch (const std::exception&) {
            d.nativeStep = nullptr;
        }
    }
    d.loadMs = msSince(start);
    progress->finished();
    return model;
}

} // namespace florence
