// The measuring half of <florence/auto_precision.h>: the keys of the cache, the probe that loads
// a package in each precision, and automaticPrecision() which puts them together.
#include <florence/auto_precision.h>

#include <florence/image.h>
#include <florence/machine.h>
#include <florence/process.h>
#include <florence/stats.h>
#include <florence/tasks.h>
#include <florence/version.h>

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLockFile>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <thread>

namespace florence {

namespace {

// The CPU's model name as the kernel reports it, and the instruction sets the kernels and
// LibTorch choose between.
std::string cpuDescription() {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(in, line) && (model.empty() || flags.empty())) {
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
        const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
        if (key == "model name" && model.empty())
            model = value;
        else if (key == "flags" && flags.empty())
            flags = " " + value + " ";
    }
    std::string isa;
    for (const char* f : {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                          "avx512_bf16", "amx_bf16", "amx_int8"})
        if (flags.find(std::string(" ") + f + " ") != std::string::npos)
            isa += std::string(isa.empty() ? "" : " ") + f;
    return (model.empty() ? std::string("unknown CPU") : model) + " [" + isa + "]";
}

// A picture with edges and colours (the probe times the model, the image's content matters
// only in that it is not flat).
RgbImage probeImage(int width, int height) {
    RgbImage img;
    img.width = width;
    img.height = height;
    img.pixels.resize(size_t(width) * height * 3);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            uint8_t* p = &img.pixels[(size_t(y) * width + x) * 3];
            p[0] = uint8_t((x * 255) / std::max(1, width - 1));
            p[1] = uint8_t((y * 255) / std::max(1, height - 1));
            p[2] = ((x / 32 + y / 32) % 2) ? 220 : 40;
        }
    return img;
}

double rowCosine(const FloatArray& a, const FloatArray& b, int64_t row) {
    const size_t n = size_t(a.shape[1]);
    return cosine(a.data.data() + size_t(row) * n, b.data.data() + size_t(row) * n, n);
}

// Decoding steps timed per run (after two untimed ones), and compared with float32's logits.
constexpr int kProbeSteps = 12;
// Short runs before the timed ones, at most.
constexpr int kMaxWarmUps = 5;
// Timed runs per mode: at least two, more while they have taken less than the budget.
constexpr int kMaxProbeRuns = 5;
constexpr double kProbeBudgetMs = 1500;

double firstTokenOf(const Result& r) {
    return r.timings.preprocessMs + r.timings.visionMs + r.timings.textEncoderMs;
}

void checkCancel(const std::atomic<bool>* cancel) {
    if (cancel && cancel->load())
        throw EngineError("measuring the precisions was cancelled");
}

// Other programs' demand in cores, read while this process waits a moment.
double idleLoad() {
    const OtherProgramsLoad load;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return load.cores();
}

} // namespace

std::string precisionProbeCpuKey() {
    return cpuDescription() + "; " + runtimeSummary() + "; florence-studio " + kVersion;
}

std::string precisionProbePackageKey(const std::string& packageDir) {
    const std::string path = packageDir + "/manifest.json";
    QFile f(QString::fromStdString(path));
    if (!f.open(QIODevice::ReadOnly))
        throw PackageError("cannot read " + path + " to measure its precisions");
    const QByteArray digest = QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
    return readManifest(packageDir).name + " " + digest.toHex().left(16).toStdString();
}

namespace {

// Float32's run, the reference the other modes' logits are compared with.
struct Reference {
    std::vector<float> pixels;
    std::vector<int64_t> promptIds, tokens;
    FloatArray logits;
};

// Loads the package in trial.precision and times it into `trial`: the least of its runs, and
// other programs' demand just before and just after them. Fills `reference` in float32 when it is
// empty; in the other modes compares the logits with it when `compare` is set. Throws what loading
// or running throws.
void measureMode(const std::string& packageDir, int threads, const std::atomic<bool>* cancel,
                 PrecisionTrial& trial, Reference& reference, bool compare) {
    LoadOptions lo;
    lo.threads = threads;
    lo.precision = trial.precision;
    lo.cancel = cancel;
    Session session(Model::load(packageDir, lo));
    const Manifest& m = session.model().manifest();
    Request req;
    req.image = std::make_shared<const RgbImage>(probeImage(m.imageWidth, m.imageHeight));
    req.prompt = buildPrompt({"<CAPTION>", "", std::nullopt}, m.imageWidth, m.imageHeight);
    GenerationOptions o = session.model().defaultOptions();
    o.numBeams = 1;
    o.ignoreEos = true;
    o.noRepeatNgramSize = 0; // a fixed number of steps
    o.reuseFeatures = false; // the timed run runs the encoders again
    o.cancel = cancel;
    // Warm-up: the first runs of a scripted module in a process profile and optimize it (a tiny
    // model's first run took 1.5 s where later ones took 50 ms), so short runs until two in a
    // row agree.
    o.maxNewTokens = 2;
    double previous = std::numeric_limits<double>::infinity();
    for (int run = 0; run < kMaxWarmUps; ++run) {
        const double ms = firstTokenOf(session.generate(req, o));
        checkCancel(cancel);
        if (run > 0 && ms < previous * 1.25 && previous < ms * 1.25)
            break;
        previous = ms;
    }
    // Other programs only ever add time: the least of a few runs is this mode's own speed (at
    // least two timed runs, more while they are short).
    trial.firstTokenMs = std::numeric_limits<double>::infinity();
    trial.stepMs = std::numeric_limits<double>::infinity();
    o.maxNewTokens = kProbeSteps + 2;
    Result r;
    double spentMs = 0;
    const double loadBefore = idleLoad();
    for (int run = 0; run < kMaxProbeRuns && (run < 2 || spentMs < kProbeBudgetMs); ++run) {
        r = session.generate(req, o);
        checkCancel(cancel);
        trial.firstTokenMs = std::min(trial.firstTokenMs, firstTokenOf(r));
        trial.stepMs =
            std::min(trial.stepMs,
                     median(std::vector<double>(r.timings.stepMs.begin() +
                                                    std::min<size_t>(2, r.timings.stepMs.size()),
                                                r.timings.stepMs.end())));
        spentMs += r.timings.totalMs;
    }
    const double loadAfter = idleLoad();
    trial.otherCores = loadBefore < 0 || loadAfter < 0 ? -1 : std::max(loadBefore, loadAfter);
    if (trial.precision == Precision::Float32 && reference.tokens.empty()) {
        reference.pixels =
            preprocess(*req.image, m.imageWidth, m.imageHeight, m.imageMean, m.imageStd);
        reference.promptIds = r.promptIds;
        reference.tokens = r.generatedIds;
        reference.logits =
            session.decoderLogits(reference.pixels, reference.promptIds, reference.tokens, cancel);
        checkCancel(cancel); // the logits are empty when the cancel stopped their pass
    } else if (trial.precision != Precision::Float32 && compare) {
        const FloatArray got =
            session.decoderLogits(reference.pixels, reference.promptIds, reference.tokens, cancel);
        checkCancel(cancel);
        trial.logitsCosine = 1;
        for (int64_t row = 0; row < reference.logits.shape[0]; ++row)
            trial.logitsCosine =
                std::min(trial.logitsCosine, rowCosine(reference.logits, got, row));
    }
}

} // namespace

PrecisionProbe probePrecisions(const std::string& packageDir, int threads,
                               const std::atomic<bool>* cancel,
                               const std::function<void(const std::string&)>& progress) {
    setThreads(threads);
    PrecisionProbe probe;
    probe.cpu = precisionProbeCpuKey();
    probe.package = precisionProbePackageKey(packageDir);
    Reference reference;
    for (const Precision p : {Precision::Float32, Precision::BFloat16, Precision::Int8}) {
        checkCancel(cancel);
        if (progress)
            progress(std::string("measuring ") + precisionName(p));
        PrecisionTrial trial;
        trial.precision = p;
        try {
            measureMode(packageDir, threads, cancel, trial, reference, true);
        } catch (const Error& e) {
            checkCancel(cancel);
            if (p == Precision::Float32)
                throw;
            trial.error = e.what();
        } catch (const std::exception& e) {
            if (p == Precision::Float32)
                throw EngineError(std::string("measuring float32: ") + e.what());
            trial.error = e.what();
        }
        probe.trials.push_back(trial);
    }
    if (!measuredUnderDifferentLoads(probe))
        return probe;
    // A busy program started or stopped between the modes: once more in the reverse order, so
    // that each mode has had a run as quiet as the others', and the quicker figures count.
    probe.remeasured = true;
    for (auto t = probe.trials.rbegin(); t != probe.trials.rend(); ++t) {
        if (!t->error.empty())
            continue;
        checkCancel(cancel);
        if (progress)
            progress(std::string("measuring ") + precisionName(t->precision) +
                     " again, as other programs' load changed");
        PrecisionTrial again = *t;
        try {
            measureMode(packageDir, threads, cancel, again, reference, false);
        } catch (const Error&) {
            checkCancel(cancel);
            continue; // ran once already: its first figures stand
        } catch (const std::exception&) {
            continue;
        }
        // The load that goes with the quicker answer: what the figures kept were measured under.
        if (again.answerMs() < t->answerMs())
            t->otherCores = again.otherCores;
        t->firstTokenMs = std::min(t->firstTokenMs, again.firstTokenMs);
        t->stepMs = std::min(t->stepMs, again.stepMs);
    }
    return probe;
}

namespace {

// What the cache holds for this CPU and package: a steady probe (its modes measured under the
// same load), or one whose loads differed if it was stored from `unsteadySinceMs` on (by the
// process this one waited for; its reason says the pick may be off), else none.
std::optional<PrecisionChoice> cachedChoice(const std::string& cpu, const std::string& package,
                                            int64_t unsteadySinceMs) {
    const std::optional<PrecisionProbe> cached = cachedPrecisionProbe(cpu, package);
    if (!cached)
        return std::nullopt;
    const bool steady = !measuredUnderDifferentLoads(*cached);
    if (!steady && (unsteadySinceMs < 0 || cached->measuredAtMs < unsteadySinceMs))
        return std::nullopt;
    PrecisionChoice choice = choosePrecision(*cached);
    choice.kept = steady;
    return choice;
}

// The measuring lock (precisionProbeLockPath), waited for while `cancel` is unset; null when it
// cannot be made (no cache folder, a read-only one): this process then measures without it. Its
// holder dying frees it (QLockFile finds the holder gone). Measuring takes seconds to minutes
// (6.5 on a busy AVX2 machine at base size): after half an hour the lock counts as stale, so a
// holder QLockFile cannot see (another machine sharing the home folder, gone) is not waited for
// without end. A holder that lives but does not go on (stopped with Ctrl+Z, hung) keeps its lock
// however old: after kMaxWait this process measures beside it, and says so.
constexpr auto kMaxWait = std::chrono::minutes(10);

std::unique_ptr<QLockFile> lockMeasuring(const std::atomic<bool>* cancel,
                                         const std::function<void(const std::string&)>& progress) {
    const QString path = QString::fromStdString(precisionProbeLockPath());
    if (path.isEmpty() || !QDir().mkpath(QFileInfo(path).absolutePath()))
        return nullptr;
    auto lock = std::make_unique<QLockFile>(path);
    lock->setStaleLockTime(30 * 60 * 1000);
    const auto start = std::chrono::steady_clock::now();
    bool said = false;
    while (!lock->tryLock(200)) {
        if (lock->error() != QLockFile::LockFailedError)
            return nullptr;
        checkCancel(cancel);
        if (std::chrono::steady_clock::now() - start > kMaxWait) {
            if (progress)
                progress("measuring here too: the other window or command has not finished "
                         "in 10 minutes");
            return nullptr;
        }
        if (!said && progress)
            progress("waiting for another window or command that is measuring");
        said = true;
    }
    return lock;
}

} // namespace

PrecisionChoice automaticPrecision(const std::string& packageDir, int threads,
                                   const std::atomic<bool>* cancel,
                                   const std::function<void(const std::string&)>& progress) {
    setThreads(threads); // the runtime line in the key names the threads the model will use
    const std::string cpu = precisionProbeCpuKey();
    const std::string package = precisionProbePackageKey(packageDir);
    // Before the cache is read: a probe stored from then on was measured while this one looked.
    const int64_t asked = QDateTime::currentMSecsSinceEpoch();
    if (std::optional<PrecisionChoice> kept = cachedChoice(cpu, package, -1))
        return *kept;
    // One process measures at a time: another window or command measuring beside this one would
    // slow both and skew both's figures. What it stored may be this CPU and package's: taken
    // even when its loads differed, as measuring again now would meet the same desktop, and
    // the windows then agree.
    const std::unique_ptr<QLockFile> measuring = lockMeasuring(cancel, progress);
    if (std::optional<PrecisionChoice> stored = cachedChoice(cpu, package, asked))
        return *stored;
    PrecisionProbe probe = probePrecisions(packageDir, threads, cancel, progress);
    checkCancel(cancel); // set after the last check inside: nothing is kept
    PrecisionChoice choice = choosePrecision(probe);
    choice.probed = true;
    // Measured while other programs' load kept changing: stored for a process waiting now, not
    // kept (the next start measures again).
    const bool stored = storePrecisionProbe(probe);
    choice.kept = stored && !measuredUnderDifferentLoads(probe);
    return choice;
}

} // namespace florence
