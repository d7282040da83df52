// The measurements of the benchmark job: load, the encoders, cached and uncached decoding,
// feature reuse, batching, peak memory, the read bandwidth, the Python baseline and the
// reduced-precision modes, under the same competition (busy threads) from the load on.
#include <florence/bench_job.h>

#include "jobs/BenchPython.h"
#include "jobs/BusyLoad.h"
#include <florence/engine.h>
#include <florence/error.h>
#include <florence/image.h>
#include <florence/machine.h>
#include <florence/paths.h>
#include <florence/stats.h>
#include <florence/tasks.h>

#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <memory>

namespace florence {

namespace {

// Counts the measurements for onProgress and stops the job between them when cancelled.
class BenchSteps {
public:
    BenchSteps(const BenchHooks& hooks, int total) : m_hooks(hooks), m_total(total) {}

    const std::atomic<bool>* cancel() const { return m_hooks.cancel; }
    void checkCancel() const {
        if (m_hooks.cancel && m_hooks.cancel->load())
            throw EngineError("the benchmark was cancelled");
    }
    // After each measurement: a measurement cut short by the cancel flag is never kept.
    void step(const std::string& what) {
        ++m_done;
        if (m_hooks.onProgress)
            m_hooks.onProgress(m_done, m_total, what);
        checkCancel();
    }

private:
    const BenchHooks& m_hooks;
    int m_total;
    int m_done = 0;
};

Result generateFixed(Session& session, const Request& req, const Model& model, int tokens,
                     bool cache, const std::atomic<bool>* cancel) {
    GenerationOptions o = model.defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = tokens;
    o.ignoreEos = true;
    o.useCache = cache;
    o.reuseFeatures = false;
    o.cancel = cancel;
    o.noRepeatNgramSize = 0; // a fixed token count: nothing may end or ban the run
    return session.generate(req, o);
}

// ------------------------------------------------------------------------------------------
// Measuring

// What the float32 runs leave for the later stages.
struct Float32Runs {
    std::vector<int64_t> promptIds;
    std::vector<int64_t> referenceIds; // the longest cached run's tokens
};

Float32Runs measureDecoding(Session& session, const Request& req, const BenchParams& c,
                            BenchSteps& progress, BenchResult& report) {
    const Model& model = session.model();
    Float32Runs runs;
    for (int len : c.lengths) {
        Result r = generateFixed(session, req, model, len, true, progress.cancel());
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
            Result u = generateFixed(session, req, model, len, false, progress.cancel());
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
ReuseReport measureReuse(Session& session, const Request& req, const std::atomic<bool>* cancel) {
    GenerationOptions o = session.model().defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 1;
    o.cancel = cancel;
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
    EncodeOptions ahead;
    ahead.prompt = req.prompt;
    ahead.cancel = cancel;
    session.encodeImage(*req.image, ahead);
    const Result aheadRun = session.generate(req, o);
    r.aheadMs = aheadRun.timings.firstTokenMs;
    r.promptReused = aheadRun.timings.promptReused;
    return r;
}

// Four different images with a fixed number of tokens, together and one by one.
BatchReport measureBatching(Session& session, BenchSteps& progress) {
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
    o.cancel = progress.cancel();
    // A batch's shapes are new to the session (oneDNN picks kernels and the allocator maps blocks
    // for them on their first run): a batch of two tokens first, else the batched run pays those
    // costs alone and read 0.46x one by one where it is 0.9-1.0x warm (AVX-512, base size).
    GenerationOptions warm = o;
    warm.maxNewTokens = 2;
    session.generateBatch(reqs, warm);
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

// The float32 decoder logits the reduced-precision modes are compared with.
struct LogitsReference {
    std::vector<float> pixels;
    std::vector<int64_t> promptIds, tokens;
    FloatArray logits;
};

LogitsReference logitsReference(Session& session, const Request& req, const Float32Runs& runs,
                                const std::atomic<bool>* cancel) {
    const Manifest m = session.model().manifest();
    LogitsReference ref;
    ref.pixels = preprocess(*req.image, m.imageWidth, m.imageHeight, m.imageMean, m.imageStd);
    ref.promptIds = runs.promptIds;
    ref.tokens.assign(runs.referenceIds.begin(),
                      runs.referenceIds.begin() + std::min<size_t>(runs.referenceIds.size(), 65));
    ref.logits = session.decoderLogits(ref.pixels, ref.promptIds, ref.tokens, cancel);
    return ref;
}

// Speed, and agreement of the decoder logits with float32 over the same tokens. Replaces the
// model in the session by the one of `precision`: one model in memory at a time.
ReducedReport measureReduced(std::unique_ptr<Session>& session, const Request& req,
                             const BenchParams& c, const LogitsReference& reference,
                             Precision precision, BenchSteps& progress) {
    const std::string name = precisionName(precision);
    session.reset();
    LoadOptions lo;
    lo.threads = c.threads;
    lo.precision = precision;
    lo.cancel = progress.cancel();
    session = std::make_unique<Session>(Model::load(c.package, lo));
    progress.step(name + " load");
    const Model& bm = session->model();
    generateFixed(*session, req, bm, 4, true, progress.cancel());
    const Result r = generateFixed(*session, req, bm, c.maxLength(), true, progress.cancel());
    // The first token is the median of three runs, the long one and two of a single token: one
    // run alone varied by up to 25% between benches on a shared machine (bfloat16, base size).
    std::vector<double> first{r.timings.preprocessMs + r.timings.visionMs +
                              r.timings.textEncoderMs};
    std::vector<double> vision{r.timings.visionMs}, text{r.timings.textEncoderMs};
    for (int i = 0; i < 2; ++i) {
        const Result s = generateFixed(*session, req, bm, 1, true, progress.cancel());
        first.push_back(s.timings.preprocessMs + s.timings.visionMs + s.timings.textEncoderMs);
        vision.push_back(s.timings.visionMs);
        text.push_back(s.timings.textEncoderMs);
    }
    progress.step(name + " decoding");
    const FloatArray got = session->decoderLogits(reference.pixels, reference.promptIds,
                                                  reference.tokens, progress.cancel());
    progress.step(name + " logits");
    const FloatArray& ref = reference.logits;
    const size_t vocab = size_t(ref.shape[1]);
    double minCos = 1, sumCos = 0;
    for (int64_t row = 0; row < ref.shape[0]; ++row) {
        const double cos =
            cosine(ref.data.data() + row * vocab, got.data.data() + row * vocab, vocab);
        minCos = std::min(minCos, cos);
        sumCos += cos;
    }
    ReducedReport b;
    b.stepBytes = bm.decodeStepBytes(bm.manifest().imageTokens + int(reference.promptIds.size()));
    b.firstTokenMs = median(first);
    b.visionMs = median(vision);
    b.textEncoderMs = median(text);
    b.medianStepMs = median(r.timings.stepMs);
    b.logitsCosineMin = minCos;
    b.logitsCosineMean = sumCos / ref.shape[0];
    b.int8Modules = bm.int8Modules();
    b.encoderPrecision = precisionName(bm.encoderPrecision());
    return b;
}

// The params as measured: the package and the image given, else the speed demo of the size
// installed with the app (its weights are generated at load: no Python, nothing to download or
// import) and the bundled pier.png.
BenchParams resolved(BenchParams c) {
    if (c.lengths.empty() || *std::min_element(c.lengths.begin(), c.lengths.end()) < 1)
        throw Error("the benchmark needs lengths of at least one token to generate");
    if (c.package.empty()) {
        for (const std::string& dir : speedDemoModelDirs())
            if (QFileInfo(QString::fromStdString(dir)).fileName().toStdString() ==
                "speed-demo-" + c.size)
                c.package = dir;
        if (c.package.empty())
            throw Error("the " + c.size + " speed-demo package is not installed (looked for " +
                        dataDir() + "/models/speed-demo-" + c.size +
                        "); reinstall the app, or measure another package (for example one "
                        "made by `florence-studio-cli import --random-init " +
                        c.size + " --out PKG`)");
    }
    c.package = QFileInfo(QString::fromStdString(c.package)).absoluteFilePath().toStdString();
    if (c.image.empty()) {
        c.image = samplesDir().empty() ? "" : samplesDir() + "/pier.png";
        if (c.image.empty() || !QFileInfo::exists(QString::fromStdString(c.image)))
            throw Error("no bundled sample image found to measure with; give an image");
    }
    // Batching runs four of the bundled samples; without them it is not measured, nor counted
    // in the progress's total.
    c.batching = c.batching && !samplesDir().empty();
    // Where LibTorch refuses bfloat16 products (oneDNN held below the CPU's bfloat16
    // instructions) the bfloat16 model cannot load: it is not measured, and the report says why.
    c.bf16 = c.bf16 && bfloat16ProductsRun();
    return c;
}

} // namespace

BenchResult runBenchJob(const BenchParams& params, const BenchHooks& hooks) {
    const BenchParams c = resolved(params);
    BenchSteps progress(hooks, c.progressSteps());
    BenchResult report;
    if (params.bf16 && !c.bf16)
        report.bf16Error = bfloat16ProductsProblem() + " here";
    // From the load to the last baseline, so every figure shares the same competition.
    const detail::BusyLoad busy(c.busy);
    report.busyThreads = busy.threads();
    const auto img = std::make_shared<const RgbImage>(loadImage(c.image));
    LoadOptions lo;
    lo.threads = c.threads;
    lo.cancel = hooks.cancel;
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
    generateFixed(*session, req, session->model(), 4, true, hooks.cancel);
    generateFixed(*session, req, session->model(), 4, false, hooks.cancel);
    progress.step("warm-up");

    const Float32Runs runs = measureDecoding(*session, req, c, progress, report);
    // Peak memory of single requests (the batch of four images below needs more).
    report.peakBytes = peakResidentBytes();
    report.reuse = measureReuse(*session, req, hooks.cancel);
    progress.step("feature reuse");
    if (c.batching)
        report.batching = measureBatching(*session, progress);
    report.peakWithBatchBytes = peakResidentBytes();
    // After the peak is taken: the measurement's own 1 GiB buffer must not count.
    report.bandwidth = measureReadBandwidth();
    progress.step("memory bandwidth");
    report.stepBytes = session->model().decodeStepBytes(m.imageTokens + int(runs.promptIds.size()));
    report.runtime = runtimeSummary();
    report.runtime += session->model().nativeStep() ? ", cached decoder steps from C++"
                                                    : ", cached decoder steps scripted";
    if (c.python)
        detail::measurePython(
            c, runs.promptIds, report, [&](const std::string& what) { progress.step(what); },
            hooks.cancel);
    if (c.bf16 || c.int8) {
        const LogitsReference reference = logitsReference(*session, req, runs, hooks.cancel);
        progress.checkCancel(); // the reference is empty when the cancel stopped its pass
        if (c.bf16)
            report.bf16 = measureReduced(session, req, c, reference, Precision::BFloat16, progress);
        if (c.int8)
            report.int8 = measureReduced(session, req, c, reference, Precision::Int8, progress);
        // Once more after them, keeping the higher: another program reading memory during one
        // measurement gives a floor the steps beat. The machine reads as fast as it ever did.
        report.bandwidth = std::max(report.bandwidth, measureReadBandwidth());
    }
    return report;
}

} // namespace florence
