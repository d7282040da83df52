#include "Bench.h"

#include "Args.h"
#include "BusyLoad.h"
#include "Common.h"
#include <florence/engine.h>
#include <florence/image.h>
#include <florence/machine.h>
#include <florence/paths.h>
#include <florence/process.h>
#include <florence/stats.h>
#include <florence/tasks.h>

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QProcessEnvironment>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>

namespace florence::cli {

namespace {

const char* kBenchUsage = R"(usage: florence-studio-cli bench [OPTIONS]

Measures Florence-2 at a real size with random weights (the speed-demo package installed with
the app, whose weights are generated at load): load, preprocessing, vision and text encoder,
cached decoding (median/p95 step, tokens/s, first-32 vs last-32), uncached decoding, peak memory,
the memory-bandwidth floor of a cached step, the same weights run eagerly in Python (needs
python3 with torch and PIL: apt install python3-torch python3-pil), and the bfloat16 and int8
modes with their logit agreement. Every run generates exactly its length (the end token is ignored).

  --size base|large       model size (default base): models/speed-demo-SIZE
  --lengths 32,128,256    generated tokens per run (end token ignored)
  --threads N             intra-op threads (default: all cores)
  --image FILE            input image (default: the bundled pier.png)
  --model PKG             use this package instead of the speed demo
  --busy N                run N CPU-bound threads of its own during the measurement (the
                          load of other programs on a desktop; default 0)
  --no-python             skip the Python eager baseline (run twice when the CPU has AVX-512:
                          with the environment's OpenBLAS kernels and with SkylakeX's)
  --no-uncached           skip uncached decoding (slow at large sizes)
  --no-bf16               skip the bfloat16 mode
  --no-int8               skip the int8 mode
  --no-batch              skip batching (4 sample images together vs one by one)
  --json                  print one JSON object instead of the table
)";

std::vector<double> slice(const std::vector<double>& v, size_t from, size_t to) {
    from = std::min(from, v.size());
    to = std::min(to, v.size());
    return std::vector<double>(v.begin() + from, v.begin() + to);
}

// A progress bar on the terminal; silent when stderr is not one.
class Progress {
public:
    explicit Progress(int total) : m_total(total), m_tty(isatty(2)) {}
    void step(const std::string& what) {
        ++m_done;
        if (!m_tty)
            return;
        const int width = 30;
        const int filled = m_total ? width * m_done / m_total : width;
        std::string bar(filled, '#');
        bar.resize(width, ' ');
        std::fprintf(stderr, "\r[%s] %3d%% %-40.40s", bar.c_str(),
                     100 * m_done / std::max(1, m_total), what.c_str());
        std::fflush(stderr);
    }
    void done() {
        if (m_tty)
            std::fprintf(stderr, "\r%80s\r", "");
    }

private:
    int m_total;
    int m_done = 0;
    bool m_tty;
};

std::vector<int> parseLengths(const std::string& s) {
    std::vector<int> out;
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, ',')) {
        try {
            const int n = std::stoi(part);
            if (n < 1 || n > 1024)
                throw std::out_of_range(part);
            out.push_back(n);
        } catch (const std::exception&) {
            throw UsageError("--lengths takes numbers from 1 to 1024 separated by commas, not '" +
                             s + "'");
        }
    }
    if (out.empty())
        throw UsageError("--lengths needs at least one length");
    return out;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b, size_t begin, size_t n) {
    double dot = 0, na = 0, nb = 0;
    for (size_t i = begin; i < begin + n; ++i) {
        dot += double(a[i]) * b[i];
        na += double(a[i]) * a[i];
        nb += double(b[i]) * b[i];
    }
    return dot / std::sqrt(na * nb);
}

QJsonArray toJson(const std::vector<double>& v) {
    QJsonArray a;
    for (double x : v)
        a.append(x);
    return a;
}

Result generateFixed(Session& session, const Request& req, const Model& model, int tokens,
                     bool cache, bool reuse = false) {
    GenerationOptions o = model.defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = tokens;
    o.ignoreEos = true;
    o.useCache = cache;
    o.reuseFeatures = reuse;
    o.noRepeatNgramSize = 0; // a fixed token count: nothing may end or ban the run
    return session.generate(req, o);
}

// What to do when the baseline cannot run: everything else in the bench needs no Python.
const char* kPythonNeeds =
    "the Python eager baseline needs python3 with torch and PIL (apt install "
    "python3-torch python3-pil); --no-python skips it";

// Why the baseline's Python failed, from the last line it printed.
std::string pythonFailure(const QString& stderrText) {
    const QString last = stderrText.trimmed().split('\n').last();
    static const QRegularExpression missing(QStringLiteral("No module named '([^'.]+)"));
    const QRegularExpressionMatch m = missing.match(last);
    if (m.hasMatch())
        return pythonInterpreter() + " has no module " + m.captured(1).toStdString() + ": " +
               kPythonNeeds;
    return last.isEmpty() ? std::string("python baseline failed to run") : last.toStdString();
}

QJsonObject runPython(const std::string& package, const std::string& image,
                      const std::vector<int64_t>& ids, const std::string& lengths, int threads,
                      const QProcessEnvironment& env, std::string& error) {
    const std::string script = exporterScript();
    if (script.empty()) {
        error = "exporter tools not found";
        return {};
    }
    QStringList idList;
    for (int64_t id : ids)
        idList << QString::number(id);
    QStringList args{"-m", "florence2.bench_eager", "--package", QString::fromStdString(package)};
    args << "--image" << QString::fromStdString(image) << "--lengths"
         << QString::fromStdString(lengths) << "--threads" << QString::number(threads)
         << "--prompt-ids" << idList.join(",");
    if (!opsLibrary().empty()) // the package's modules call its operators
        args << "--ops-library" << QString::fromStdString(opsLibrary());
    QProcess proc;
    proc.setProcessEnvironment(env);
    proc.setWorkingDirectory(QFileInfo(QString::fromStdString(script)).absolutePath());
    proc.start(QString::fromStdString(pythonInterpreter()), args);
    if (!proc.waitForStarted(10000)) {
        error = "cannot start " + pythonInterpreter() + ": " + kPythonNeeds;
        return {};
    }
    if (!proc.waitForFinished(3600 * 1000) || proc.exitCode() != 0) {
        error = pythonFailure(QString::fromUtf8(proc.readAllStandardError()));
        return {};
    }
    return QJsonDocument::fromJson(proc.readAllStandardOutput()).object();
}

// ------------------------------------------------------------------------------------------
// What to measure

struct BenchConfig {
    std::string size;
    std::vector<int> lengths;
    int threads = 0;
    int busy = 0;
    std::string image;
    std::string package;
    bool python = true;
    bool uncached = true;
    bool bf16 = true;
    bool int8 = true;
    bool batching = true;
    bool json = false;

    int maxLength() const { return *std::max_element(lengths.begin(), lengths.end()); }
    int progressSteps() const {
        return 4 + int(lengths.size()) * (uncached ? 2 : 1) + (python ? 2 : 0) + (bf16 ? 3 : 0) +
               (int8 ? 3 : 0) + (batching ? 2 : 0);
    }
};

std::string defaultImage() {
    const std::string image = samplesDir().empty() ? "" : samplesDir() + "/pier.png";
    if (image.empty() || !QFileInfo::exists(QString::fromStdString(image)))
        throw UsageError("no bundled sample image found; pass --image FILE");
    return image;
}

// The package to measure: --model, or the speed demo of the size installed with the app (its
// weights are generated at load: no Python, nothing to download or import).
std::string benchPackage(const std::string& model, const std::string& size) {
    if (!model.empty())
        return QFileInfo(QString::fromStdString(model)).absoluteFilePath().toStdString();
    for (const std::string& dir : speedDemoModelDirs())
        if (QFileInfo(QString::fromStdString(dir)).fileName().toStdString() == "speed-demo-" + size)
            return dir;
    throw std::runtime_error("the " + size + " speed-demo package is not installed (looked for " +
                             dataDir() + "/models/speed-demo-" + size +
                             "); reinstall the app, or pass --model PKG (for example a package "
                             "made by `florence-studio-cli import --random-init " +
                             size + " --out PKG`)");
}

BenchConfig parseBenchArgs(int argc, char** argv) {
    Args a = parseArgs(argc, argv, 2, {"size", "lengths", "threads", "busy", "image", "model"},
                       {"no-python", "no-uncached", "no-bf16", "no-int8", "no-batch", "json"});
    if (!a.positional.empty())
        throw UsageError("unexpected argument '" + a.positional[0] + "'");
    BenchConfig c;
    c.size = a.get("size", "base");
    if (c.size != "base" && c.size != "large")
        throw UsageError("--size takes base or large, not '" + c.size + "'");
    c.lengths = parseLengths(a.get("lengths", "32,128,256"));
    c.threads = threadsOption(a);
    c.busy = a.getInt("busy", 0);
    if (c.busy < 0 || c.busy > 64)
        throw UsageError("--busy takes a number of threads from 0 to 64");
    c.json = a.has("json");
    c.image = a.get("image");
    if (c.image.empty())
        c.image = defaultImage();
    c.package = benchPackage(a.get("model"), c.size);
    c.python = !a.has("no-python");
    c.uncached = !a.has("no-uncached");
    c.bf16 = !a.has("no-bf16");
    c.int8 = !a.has("no-int8");
    c.batching = !a.has("no-batch");
    return c;
}

// ------------------------------------------------------------------------------------------
// What was measured: one report, printed as JSON or as a table.

struct LengthReport {
    int length = 0;
    std::vector<double> stepMs; // cached
    double decodeMs = 0;        // cached
    bool hasUncached = false;
    double uncachedDecodeMs = 0;
    double uncachedMedianStepMs = 0;
    bool uncachedSameTokens = false;
};

struct ReuseReport {
    double withoutMs = 0; // first token of a second task, features computed again
    double withMs = 0;    // the same with the features reused
    bool reused = false;
    // The first task again after Session::encodeImage ran the vision and text encoders ahead
    // (what the app does while an image is shown): from the start of generate() to its first
    // token, that is, the first decoding step alone.
    double aheadMs = 0;
    bool promptReused = false;
};

struct BatchReport {
    int images = 0;
    int tokensEach = 0;
    double oneByOneMs = 0;
    double batchedMs = 0;
    bool sameTokens = false;
};

struct PythonReport {
    std::string blas; // which OpenBLAS kernels: "environment (…)" or "OPENBLAS_CORETYPE=SkylakeX"
    double loadMs = 0, preprocessMs = 0, visionMs = 0, textEncoderMs = 0;
    double medianStepMs = 0;
    double firstTokenMs() const { return preprocessMs + visionMs + textEncoderMs; }
};

// A reduced-precision mode (bfloat16, int8) against float32.
struct ReducedReport {
    double firstTokenMs = 0, visionMs = 0, textEncoderMs = 0, medianStepMs = 0;
    double logitsCosineMin = 1, logitsCosineMean = 1;
    int64_t stepBytes = 0; // what one cached step reads in this mode
    std::vector<std::string> int8Modules; // Model::int8Modules()
    std::string encoderPrecision;         // precisionName(Model::encoderPrecision())
};

struct BenchReport {
    std::string model, package, runtime;
    double parameters = 0;
    double loadMs = 0;
    std::vector<double> preprocessMs, visionMs, textEncoderMs, firstTokenMs; // one per length
    std::vector<LengthReport> lengths;
    ReuseReport reuse;
    std::optional<BatchReport> batching;
    int64_t peakBytes = 0, peakWithBatchBytes = 0;
    double bandwidth = 0; // bytes per second
    int64_t stepBytes = 0;
    int busyThreads = 0;
    std::vector<PythonReport> pythonRuns; // each BLAS setting measured
    std::optional<PythonReport> python;   // the faster of them: what the ratios compare with
    std::string pythonError;
    std::optional<ReducedReport> bf16, int8;

    // Median step of the longest cached run (the last one of that length).
    double cachedMedianMs() const {
        const LengthReport* longest = &lengths.front();
        for (const LengthReport& l : lengths)
            if (l.length >= longest->length)
                longest = &l;
        return median(longest->stepMs);
    }
    double floorMs() const { return 1000.0 * double(stepBytes) / bandwidth; }
};

// ------------------------------------------------------------------------------------------
// Measuring

// What the float32 runs leave for the later stages.
struct Float32Runs {
    std::vector<int64_t> promptIds;
    std::vector<int64_t> referenceIds; // the longest cached run's tokens
};

Float32Runs measureDecoding(Session& session, const Request& req, const BenchConfig& c,
                            Progress& progress, BenchReport& report) {
    const Model& model = session.model();
    Float32Runs runs;
    for (int len : c.lengths) {
        Result r = generateFixed(session, req, model, len, true);
        progress.step("cached decoding, " + std::to_string(len) + " tokens");
        report.preprocessMs.push_back(r.timings.preprocessMs);
        report.visionMs.push_back(r.timings.visionMs);
        report.textEncoderMs.push_back(r.timings.textEncoderMs);
        report.firstTokenMs.push_back(r.timings.preprocessMs + r.timings.visionMs +
                                      r.timings.textEncoderMs);
        runs.promptIds = r.promptIds;
        if (len == c.maxLength())
            runs.referenceIds = r.generatedIds;
        LengthReport l;
        l.length = len;
        l.stepMs = r.timings.stepMs;
        l.decodeMs = r.timings.decodeMs;
        if (c.uncached) {
            Result u = generateFixed(session, req, model, len, false);
            progress.step("uncached decoding, " + std::to_string(len) + " tokens");
            l.hasUncached = true;
            l.uncachedDecodeMs = u.timings.decodeMs;
            l.uncachedMedianStepMs = median(u.timings.stepMs);
            l.uncachedSameTokens = u.generatedIds == r.generatedIds;
        }
        report.lengths.push_back(std::move(l));
    }
    return runs;
}

// A second task on the same image skips preprocessing and the vision encoder; a task whose
// prompt was encoded ahead with the image (Session::encodeImage) skips the text encoder too.
ReuseReport measureReuse(Session& session, const Request& req) {
    GenerationOptions o = session.model().defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 1;
    Request second = req;
    second.prompt = buildPrompt({"<OD>", "", std::nullopt}, req.image->width, req.image->height);
    o.reuseFeatures = false;
    const Result cold = session.generate(second, o);
    o.reuseFeatures = true;
    session.generate(req, o); // remembers the features
    const Result warm = session.generate(second, o);
    ReuseReport r;
    r.withoutMs = cold.timings.preprocessMs + cold.timings.visionMs + cold.timings.textEncoderMs;
    r.withMs = warm.timings.preprocessMs + warm.timings.visionMs + warm.timings.textEncoderMs;
    r.reused = warm.timings.featuresReused;
    session.encodeImage(*req.image, nullptr, req.prompt);
    const Result ahead = session.generate(req, o);
    r.aheadMs = ahead.timings.firstTokenMs;
    r.promptReused = ahead.timings.promptReused;
    return r;
}

// Four different images with a fixed number of tokens, together and one by one.
BatchReport measureBatching(Session& session, Progress& progress) {
    std::vector<Request> reqs;
    for (const char* name : {"pier.png", "chelsea.png", "coffee.png", "rocket.jpg"}) {
        Request r;
        r.image = std::make_shared<const RgbImage>(loadImage(samplesDir() + "/" + name));
        r.prompt = buildPrompt({"<CAPTION>", "", std::nullopt}, r.image->width, r.image->height);
        reqs.push_back(r);
    }
    GenerationOptions o = session.model().defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 32;
    o.ignoreEos = true;
    o.noRepeatNgramSize = 0;
    o.reuseFeatures = false;
    BatchReport b;
    const auto t0 = Clock::now();
    std::vector<Result> alone;
    for (const Request& r : reqs)
        alone.push_back(session.generate(r, o));
    b.oneByOneMs = msSince(t0);
    progress.step("batching: one by one");
    const auto t1 = Clock::now();
    const std::vector<Result> together = session.generateBatch(reqs, o);
    b.batchedMs = msSince(t1);
    progress.step("batching: together");
    b.sameTokens = true;
    for (size_t i = 0; i < reqs.size(); ++i)
        b.sameTokens = b.sameTokens && alone[i].generatedIds == together[i].generatedIds;
    b.images = int(reqs.size());
    b.tokensEach = o.maxNewTokens;
    return b;
}

// The environments the Python baseline runs in: the one this program was started with (its
// BLAS settings, which may be slow ones: a preset OPENBLAS_CORETYPE=Haswell runs OpenBLAS's
// AVX2 kernels on an AVX-512 CPU), and, on a CPU with AVX-512, the same with OpenBLAS's
// SkylakeX kernels, which run the Python vision encoder ~1.5x faster here. The faster one is the
// baseline the ratios use, so they are not flattered by a slow BLAS setting.
std::vector<std::pair<std::string, QProcessEnvironment>> pythonEnvironments() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    // What prepareProcess set itself (florence/process.h), the baseline runs without.
    if (env.contains("FLORENCE_STUDIO_BLAS_REEXEC")) {
        env.remove("FLORENCE_STUDIO_BLAS_REEXEC");
        env.remove("OPENBLAS_CORETYPE");
    }
    if (env.contains("FLORENCE_STUDIO_OMP_PASSIVE")) {
        env.remove("FLORENCE_STUDIO_OMP_PASSIVE");
        env.remove("OMP_WAIT_POLICY");
    }
    env.remove("FLORENCE_STUDIO_REEXEC");
    const QString preset = env.value("OPENBLAS_CORETYPE");
    std::vector<std::pair<std::string, QProcessEnvironment>> out;
    out.emplace_back(preset.isEmpty()
                         ? "environment (OpenBLAS's own choice of kernels)"
                         : "environment (OPENBLAS_CORETYPE=" + preset.toStdString() + ")",
                     env);
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl");
    if (avx512 && preset.compare("SkylakeX", Qt::CaseInsensitive) != 0) {
        QProcessEnvironment skx = env;
        skx.insert("OPENBLAS_CORETYPE", "SkylakeX");
        out.emplace_back("OPENBLAS_CORETYPE=SkylakeX", skx);
    }
    return out;
}

// The Python baseline, same threads, once per BLAS setting (pythonEnvironments).
void measurePython(const BenchConfig& c, const std::vector<int64_t>& promptIds, BenchReport& report,
                   Progress& progress) {
    std::string lens;
    for (int len : c.lengths)
        lens += (lens.empty() ? "" : ",") + std::to_string(len);
    const int threads = c.threads > 0 ? c.threads : ::florence::threads();
    for (const auto& [blas, env] : pythonEnvironments()) {
        std::string err;
        const QJsonObject py = runPython(c.package, c.image, promptIds, lens, threads, env, err);
        progress.step("python eager baseline, " + blas);
        if (py.isEmpty()) {
            report.pythonError = blas + ": " + err;
            continue;
        }
        const QJsonArray pySteps =
            py["cached"].toObject()[QString::number(c.maxLength())].toObject()["step_ms"].toArray();
        std::vector<double> steps;
        for (const auto& v : pySteps)
            steps.push_back(v.toDouble());
        PythonReport p;
        p.blas = blas;
        p.loadMs = py["load_ms"].toDouble();
        p.preprocessMs = py["preprocess_ms"].toDouble();
        p.visionMs = py["vision_ms"].toDouble();
        p.textEncoderMs = py["text_encoder_ms"].toDouble();
        p.medianStepMs = median(steps);
        report.pythonRuns.push_back(p);
    }
    if (report.pythonRuns.empty())
        return;
    // Faster: less time for a whole answer of the longest length.
    const auto total = [&](const PythonReport& p) {
        return p.firstTokenMs() + c.maxLength() * p.medianStepMs;
    };
    report.python = *std::min_element(
        report.pythonRuns.begin(), report.pythonRuns.end(),
        [&](const PythonReport& a, const PythonReport& b) { return total(a) < total(b); });
}

// The float32 decoder logits the reduced-precision modes are compared with.
struct LogitsReference {
    std::vector<float> pixels;
    std::vector<int64_t> promptIds, tokens;
    FloatArray logits;
};

LogitsReference logitsReference(Session& session, const Request& req, const Float32Runs& runs) {
    const Manifest m = session.model().manifest();
    LogitsReference ref;
    ref.pixels = preprocess(*req.image, m.imageWidth, m.imageHeight, m.imageMean, m.imageStd);
    ref.promptIds = runs.promptIds;
    ref.tokens.assign(runs.referenceIds.begin(),
                      runs.referenceIds.begin() + std::min<size_t>(runs.referenceIds.size(), 65));
    ref.logits = session.decoderLogits(ref.pixels, ref.promptIds, ref.tokens);
    return ref;
}

// Speed, and agreement of the decoder logits with float32 over the same tokens. Replaces the
// model in the session by the one of `precision`: one model in memory at a time.
ReducedReport measureReduced(std::unique_ptr<Session>& session, const Request& req,
                             const BenchConfig& c, const LogitsReference& reference,
                             Precision precision, Progress& progress) {
    const std::string name = precisionName(precision);
    session.reset();
    session =
        std::make_unique<Session>(Model::load(c.package, LoadOptions{c.threads, precision}));
    progress.step(name + " load");
    const Model& bm = session->model();
    generateFixed(*session, req, bm, 4, true);
    const Result r = generateFixed(*session, req, bm, c.maxLength(), true);
    progress.step(name + " decoding");
    const FloatArray got =
        session->decoderLogits(reference.pixels, reference.promptIds, reference.tokens);
    progress.step(name + " logits");
    const FloatArray& ref = reference.logits;
    const size_t vocab = size_t(ref.shape[1]);
    double minCos = 1, sumCos = 0;
    for (int64_t row = 0; row < ref.shape[0]; ++row) {
        const double cos = cosine(ref.data, got.data, row * vocab, vocab);
        minCos = std::min(minCos, cos);
        sumCos += cos;
    }
    ReducedReport b;
    b.stepBytes = bm.decodeStepBytes(bm.manifest().imageTokens + int(reference.promptIds.size()));
    b.firstTokenMs = r.timings.preprocessMs + r.timings.visionMs + r.timings.textEncoderMs;
    b.visionMs = r.timings.visionMs;
    b.textEncoderMs = r.timings.textEncoderMs;
    b.medianStepMs = median(r.timings.stepMs);
    b.logitsCosineMin = minCos;
    b.logitsCosineMean = sumCos / ref.shape[0];
    b.int8Modules = bm.int8Modules();
    b.encoderPrecision = precisionName(bm.encoderPrecision());
    return b;
}

BenchReport measure(const BenchConfig& c) {
    Progress progress(c.progressSteps());
    BenchReport report;
    // From the load to the last baseline, so every figure shares the same competition.
    const BusyLoad busy(c.busy);
    report.busyThreads = busy.threads();
    const auto img = std::make_shared<const RgbImage>(loadImage(c.image));
    LoadOptions lo;
    lo.threads = c.threads;
    auto session = std::make_unique<Session>(Model::load(c.package, lo));
    progress.step("load");
    const Manifest m = session->model().manifest(); // a copy: the float32 model goes for bf16
    report.model = m.name;
    report.package = c.package;
    report.parameters = double(m.parameterCount);
    report.loadMs = session->model().loadMs();
    Request req;
    req.image = img;
    req.prompt = buildPrompt({"<CAPTION>", "", std::nullopt}, img->width, img->height);

    // Warm-up: the first run of each module pays one-time costs (allocation, kernel selection).
    generateFixed(*session, req, session->model(), 4, true);
    generateFixed(*session, req, session->model(), 4, false);
    progress.step("warm-up");

    const Float32Runs runs = measureDecoding(*session, req, c, progress, report);
    // Peak memory of single requests (the batch of four images below needs more).
    report.peakBytes = peakResidentBytes();
    report.reuse = measureReuse(*session, req);
    progress.step("feature reuse");
    if (c.batching && !samplesDir().empty())
        report.batching = measureBatching(*session, progress);
    report.peakWithBatchBytes = peakResidentBytes();
    // After the peak is taken: the measurement's own 1 GiB buffer must not count.
    report.bandwidth = measureReadBandwidth();
    progress.step("memory bandwidth");
    report.stepBytes = session->model().decodeStepBytes(m.imageTokens + int(runs.promptIds.size()));
    report.runtime = runtimeSummary();
    if (c.python)
        measurePython(c, runs.promptIds, report, progress);
    if (c.bf16 || c.int8) {
        const LogitsReference reference = logitsReference(*session, req, runs);
        if (c.bf16)
            report.bf16 =
                measureReduced(session, req, c, reference, Precision::BFloat16, progress);
        if (c.int8)
            report.int8 = measureReduced(session, req, c, reference, Precision::Int8, progress);
    }
    progress.done();
    return report;
}

// ------------------------------------------------------------------------------------------
// Reporting

QJsonObject lengthsJson(const BenchReport& r, QJsonObject& uncached, QJsonObject& ratio) {
    QJsonObject cached;
    for (const LengthReport& l : r.lengths) {
        const std::vector<double>& s = l.stepMs;
        const StepStats st = summarizeSteps(s);
        QJsonObject c;
        c["median_step_ms"] = st.medianMs;
        c["p95_step_ms"] = st.p95Ms;
        c["tokens_per_s"] = st.tokensPerSecond;
        c["first32_median_ms"] = median(slice(s, 0, 32));
        c["last32_median_ms"] = median(slice(s, s.size() >= 32 ? s.size() - 32 : 0, s.size()));
        c["decode_ms"] = l.decodeMs;
        c["step_ms"] = toJson(s);
        cached[QString::number(l.length)] = c;
        if (l.hasUncached) {
            uncached[QString::number(l.length)] =
                QJsonObject{{"decode_ms", l.uncachedDecodeMs},
                            {"median_step_ms", l.uncachedMedianStepMs},
                            {"same_tokens_as_cached", l.uncachedSameTokens}};
            ratio[QString::number(l.length)] = l.uncachedDecodeMs / l.decodeMs;
        }
    }
    return cached;
}

QJsonObject comparisonsJson(const BenchReport& r, QJsonObject out) {
    if (r.python) {
        const PythonReport& p = *r.python;
        QJsonArray runs;
        for (const PythonReport& run : r.pythonRuns)
            runs.append(QJsonObject{{"blas", QString::fromStdString(run.blas)},
                                    {"first_token_ms", run.firstTokenMs()},
                                    {"vision_ms", run.visionMs},
                                    {"median_step_ms", run.medianStepMs}});
        out["python_eager_runs"] = runs;
        out["python_eager"] =
            QJsonObject{{"blas", QString::fromStdString(p.blas)},
                        {"load_ms", p.loadMs},
                        {"preprocess_ms", p.preprocessMs},
                        {"vision_ms", p.visionMs},
                        {"text_encoder_ms", p.textEncoderMs},
                        {"first_token_ms", p.firstTokenMs()},
                        {"median_step_ms", p.medianStepMs},
                        {"step_ratio", r.cachedMedianMs() / p.medianStepMs},
                        {"first_token_ratio", median(r.firstTokenMs) / p.firstTokenMs()}};
    } else if (!r.pythonError.empty()) {
        out["python_error"] = QString::fromStdString(r.pythonError);
    }
    for (const auto& [key, mode] : {std::pair{"bfloat16", &r.bf16}, std::pair{"int8", &r.int8}}) {
        if (!*mode)
            continue;
        const ReducedReport& b = **mode;
        const double floorMs = 1000.0 * double(b.stepBytes) / r.bandwidth;
        QJsonObject bj{{"first_token_ms", b.firstTokenMs},
                       {"vision_ms", b.visionMs},
                       {"text_encoder_ms", b.textEncoderMs},
                       {"median_step_ms", b.medianStepMs},
                       {"logits_cosine_min", b.logitsCosineMin},
                       {"logits_cosine_mean", b.logitsCosineMean},
                       {"step_bytes", double(b.stepBytes)},
                       {"bandwidth_floor_ms", floorMs},
                       {"step_over_floor", b.medianStepMs / floorMs},
                       {"encoder_precision", QString::fromStdString(b.encoderPrecision)}};
        if (mode == &r.int8) {
            QJsonArray modules;
            for (const std::string& m : b.int8Modules)
                modules.append(QString::fromStdString(m));
            bj["int8_modules"] = modules;
        }
        if (r.python) {
            bj["step_ratio_vs_python_fp32"] = b.medianStepMs / r.python->medianStepMs;
            bj["first_token_ratio_vs_python_fp32"] = b.firstTokenMs / r.python->firstTokenMs();
        }
        out[key] = bj;
    }
    return out;
}

QJsonObject toJson(const BenchReport& r) {
    QJsonObject out;
    out["model"] = QString::fromStdString(r.model);
    out["package"] = QString::fromStdString(r.package);
    out["parameters"] = r.parameters;
    out["runtime"] = QString::fromStdString(r.runtime);
    out["busy_threads"] = r.busyThreads;
    out["load_ms"] = r.loadMs;
    out["preprocess_ms"] = median(r.preprocessMs);
    out["vision_ms"] = median(r.visionMs);
    out["text_encoder_ms"] = median(r.textEncoderMs);
    out["first_token_ms"] = median(r.firstTokenMs);
    QJsonObject uncached, ratio;
    out["cached"] = lengthsJson(r, uncached, ratio);
    if (!uncached.isEmpty()) {
        out["uncached"] = uncached;
        out["uncached_over_cached"] = ratio;
    }
    out["feature_reuse"] = QJsonObject{{"first_token_ms_without_reuse", r.reuse.withoutMs},
                                       {"first_token_ms_with_reuse", r.reuse.withMs},
                                       {"reused", r.reuse.reused},
                                       {"first_token_ms_encoded_ahead", r.reuse.aheadMs},
                                       {"prompt_reused", r.reuse.promptReused}};
    if (r.batching) {
        const BatchReport& b = *r.batching;
        out["batching"] = QJsonObject{{"images", b.images},
                                      {"tokens_each", b.tokensEach},
                                      {"one_by_one_ms", b.oneByOneMs},
                                      {"batched_ms", b.batchedMs},
                                      {"one_by_one_images_per_s", 1000.0 * b.images / b.oneByOneMs},
                                      {"batched_images_per_s", 1000.0 * b.images / b.batchedMs},
                                      {"speedup", b.oneByOneMs / b.batchedMs},
                                      {"same_tokens", b.sameTokens}};
    }
    out["peak_rss_bytes"] = double(r.peakBytes);
    out["peak_rss_with_batch_bytes"] = double(r.peakWithBatchBytes);
    out["read_bandwidth_gbps"] = r.bandwidth / 1e9;
    out["step_bytes"] = double(r.stepBytes);
    out["bandwidth_floor_ms"] = r.floorMs();
    out["step_over_floor"] = r.cachedMedianMs() / r.floorMs();
    return comparisonsJson(r, out);
}

std::string num(double v, const char* fmt) {
    char b[64];
    std::snprintf(b, sizeof b, fmt, v);
    return b;
}

void line(const std::string& label, const std::string& value) {
    std::printf("  %-44s %s\n", label.c_str(), value.c_str());
}

void printDecodingTable(const BenchReport& r) {
    line("load", formatMs(r.loadMs));
    line("preprocess / vision / text encoder", formatMs(median(r.preprocessMs)) + " / " +
                                                   formatMs(median(r.visionMs)) + " / " +
                                                   formatMs(median(r.textEncoderMs)));
    line("time to first token (without decoding)", formatMs(median(r.firstTokenMs)));
    for (const LengthReport& l : r.lengths) {
        const StepStats s = summarizeSteps(l.stepMs);
        line("cached " + std::to_string(l.length) + " tokens: median / p95 step",
             formatMs(s.medianMs) + " / " + formatMs(s.p95Ms) + ", " +
                 num(s.tokensPerSecond, "%.1f tok/s"));
        if (l.length >= 64) {
            const std::vector<double>& st = l.stepMs;
            line("  first-32 / last-32 step median",
                 formatMs(median(slice(st, 0, 32))) + " / " +
                     formatMs(median(slice(st, st.size() >= 32 ? st.size() - 32 : 0, st.size()))));
        }
        if (l.hasUncached)
            line("uncached " + std::to_string(l.length) + " tokens: total (cached total)",
                 formatMs(l.uncachedDecodeMs) + " (" + formatMs(l.decodeMs) + "), " +
                     num(l.uncachedDecodeMs / l.decodeMs, "%.1fx slower"));
    }
}

void printMachineTable(const BenchReport& r) {
    line("first token of a 2nd task, without / with reuse",
         formatMs(r.reuse.withoutMs) + " / " + formatMs(r.reuse.withMs));
    line("first token, image and prompt encoded ahead",
         r.reuse.promptReused ? formatMs(r.reuse.aheadMs) + " (the first decoding step)"
                              : formatMs(r.reuse.aheadMs) + " (the prompt was encoded again)");
    if (r.batching) {
        const BatchReport& b = *r.batching;
        line("4 images x 32 tokens: one by one / batched",
             num(1000.0 * b.images / b.oneByOneMs, "%.2f img/s") + " / " +
                 num(1000.0 * b.images / b.batchedMs, "%.2f img/s") + " (" +
                 num(b.oneByOneMs / b.batchedMs, "%.2fx") +
                 (b.sameTokens ? ", same tokens)" : ", TOKENS DIFFER)"));
    }
    line("peak resident memory: single requests / with the batch",
         num(r.peakBytes / 1048576.0, "%.0f MiB") + " / " +
             num(r.peakWithBatchBytes / 1048576.0, "%.0f MiB"));
    line("memory read bandwidth", num(r.bandwidth / 1e9, "%.1f GB/s"));
    line("bytes one cached step reads", num(r.stepBytes / 1048576.0, "%.0f MiB"));
    line("bandwidth floor per step / engine",
         formatMs(r.floorMs()) + " / " + formatMs(r.cachedMedianMs()) + " (" +
             num(r.cachedMedianMs() / r.floorMs(), "%.2fx floor") + ")");
}

void printComparisonTable(const BenchReport& r) {
    if (r.python) {
        const PythonReport& p = *r.python;
        for (const PythonReport& run : r.pythonRuns)
            line("python eager, " + run.blas,
                 formatMs(run.firstTokenMs()) + " first token / " + formatMs(run.medianStepMs) +
                     " step" + (run.blas == p.blas ? " (the faster: ratios below)" : ""));
        line("engine / python: step, first token",
             num(r.cachedMedianMs() / p.medianStepMs, "%.2fx") + ", " +
                 num(median(r.firstTokenMs) / p.firstTokenMs(), "%.2fx"));
    } else if (!r.pythonError.empty()) {
        line("python eager baseline", "not run: " + r.pythonError);
    }
    for (const auto& [name, mode] : {std::pair{"bfloat16", &r.bf16}, std::pair{"int8", &r.int8}}) {
        if (!*mode)
            continue;
        const ReducedReport& b = **mode;
        const std::string n = name;
        const double floorMs = 1000.0 * double(b.stepBytes) / r.bandwidth;
        line(n + ": first token / median step",
             formatMs(b.firstTokenMs) + " / " + formatMs(b.medianStepMs));
        line(n + ": bandwidth floor per step",
             formatMs(floorMs) + " (" + num(b.stepBytes / 1048576.0, "%.0f MiB") + ", " +
                 num(b.medianStepMs / floorMs, "%.2fx floor") + ")");
        if (r.python)
            line(n + " / python fp32: step, first token",
                 num(b.medianStepMs / r.python->medianStepMs, "%.2fx") + ", " +
                     num(b.firstTokenMs / r.python->firstTokenMs(), "%.2fx"));
        line(n + " logits cosine vs float32 (min/mean)",
             num(b.logitsCosineMin, "%.6f") + " / " + num(b.logitsCosineMean, "%.6f"));
        if (b.encoderPrecision != n)
            line(n + ": encoders run in",
                 b.encoderPrecision + " (this CPU's bfloat16 products sum in bfloat16)");
        if (mode == &r.int8) {
            std::string modules;
            for (const std::string& m : b.int8Modules)
                modules += (modules.empty() ? "" : ", ") + m;
            line(n + ": modules with int8 products", modules.empty() ? "none" : modules);
        }
    }
}

void printTable(const BenchReport& r) {
    std::printf("%s — %s\n%s%s\n\n", r.model.c_str(), r.package.c_str(), r.runtime.c_str(),
                r.busyThreads ? (", " + std::to_string(r.busyThreads) +
                                 " busy background thread(s) of bench's own")
                                    .c_str()
                              : "");
    printDecodingTable(r);
    printMachineTable(r);
    printComparisonTable(r);
}

} // namespace

int runBench(int argc, char** argv) {
    for (int i = 2; i < argc; ++i)
        if (std::string(argv[i]) == "--help") {
            std::cout << kBenchUsage;
            return 0;
        }
    const BenchConfig config = parseBenchArgs(argc, argv);
    const BenchReport report = measure(config);
    if (config.json)
        std::cout << QJsonDocument(toJson(report)).toJson(QJsonDocument::Indented).toStdString();
    else
        printTable(report);
    return 0;
}

} // namespace florence::cli
