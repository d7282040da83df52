#include "Bench.h"

#include "Args.h"
#include <florence/engine.h>
#include <florence/image.h>
#include <florence/importer.h>
#include <florence/paths.h>
#include <florence/runtime.h>
#include <florence/tasks.h>

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <numeric>
#include <sstream>

namespace florence::cli {

namespace {

const char* kBenchUsage = R"(usage: florence-studio-cli bench [OPTIONS]

Measures Florence-2 at a real size with random weights (generated on first use and kept in
~/.local/share/florence-studio/models/random-SIZE): load, preprocessing, vision and text encoder,
cached decoding (median/p95 step, tokens/s, first-32 vs last-32), uncached decoding, peak memory,
the memory-bandwidth floor of a cached step, the same weights run eagerly in Python, and the
bfloat16 mode with its logit agreement.

  --size base|large       model size (default base)
  --lengths 32,128,256    generated tokens per run (end token ignored)
  --threads N             intra-op threads (default: all cores)
  --image FILE            input image (default: the bundled pier.png)
  --model PKG             use this package instead of the random one
  --no-python             skip the Python eager baseline
  --no-uncached           skip uncached decoding (slow at large sizes)
  --no-bf16               skip the bfloat16 mode
  --no-batch              skip batching (4 sample images together vs one by one)
  --json                  print one JSON object instead of the table
)";

double median(std::vector<double> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double percentile(std::vector<double> v, double p) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const double idx = p * (v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(idx));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (idx - lo);
}

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

QJsonObject runPython(const std::string& package, const std::string& image,
                      const std::vector<int64_t>& ids, const std::string& lengths, int threads,
                      std::string& error) {
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
    proc.setWorkingDirectory(QFileInfo(QString::fromStdString(script)).absolutePath());
    proc.start(QString::fromStdString(pythonInterpreter()), args);
    if (!proc.waitForStarted(10000) || !proc.waitForFinished(3600 * 1000) || proc.exitCode() != 0) {
        error = QString::fromUtf8(proc.readAllStandardError())
                    .trimmed()
                    .split('\n')
                    .last()
                    .toStdString();
        if (error.empty())
            error = "python baseline failed to run";
        return {};
    }
    return QJsonDocument::fromJson(proc.readAllStandardOutput()).object();
}

} // namespace

int runBench(int argc, char** argv) {
    for (int i = 2; i < argc; ++i)
        if (std::string(argv[i]) == "--help") {
            std::cout << kBenchUsage;
            return 0;
        }
    Args a = parseArgs(argc, argv, 2, {"size", "lengths", "threads", "image", "model"},
                       {"no-python", "no-uncached", "no-bf16", "no-batch", "json"});
    if (!a.positional.empty())
        throw UsageError("unexpected argument '" + a.positional[0] + "'");
    const std::string size = a.get("size", "base");
    if (size != "base" && size != "large" && size != "tiny")
        throw UsageError("--size takes base or large, not '" + size + "'");
    const std::vector<int> lengths = parseLengths(a.get("lengths", "32,128,256"));
    const int threads = a.getInt("threads", 0);
    const bool json = a.has("json");
    std::string image = a.get("image");
    if (image.empty()) {
        image = samplesDir().empty() ? "" : samplesDir() + "/pier.png";
        if (image.empty() || !QFileInfo::exists(QString::fromStdString(image)))
            throw UsageError("no bundled sample image found; pass --image FILE");
    }

    std::string package = a.get("model");
    if (!package.empty())
        package = QFileInfo(QString::fromStdString(package)).absoluteFilePath().toStdString();
    if (package.empty()) {
        package = userModelsDir() + "/random-" + size;
        if (!QFileInfo::exists(QString::fromStdString(package + "/manifest.json"))) {
            std::cerr << "Generating a " << size << "-size package with random weights in "
                      << package << " (once)...\n";
            ImportJob job;
            job.randomInit = size;
            job.outDir = package;
            QDir().mkpath(QFileInfo(QString::fromStdString(package)).absolutePath());
            runImport(job, [](int p, const std::string& m) {
                std::cerr << "[" << p << "%] " << m << "\n";
            });
        }
    }

    const int maxLen = *std::max_element(lengths.begin(), lengths.end());
    const bool python = !a.has("no-python");
    const bool uncached = !a.has("no-uncached");
    const bool bf16 = !a.has("no-bf16");
    const bool batching = !a.has("no-batch");
    Progress progress(4 + int(lengths.size()) * (uncached ? 2 : 1) + (python ? 1 : 0) +
                      (bf16 ? 3 : 0) + (batching ? 2 : 0));

    QJsonObject out;
    const RgbImage img = loadImage(image);
    LoadOptions lo;
    lo.threads = threads;
    auto model = Model::load(package, lo);
    progress.step("load");
    const Manifest m = model->manifest(); // a copy: the float32 model goes away for bf16
    auto session = std::make_unique<Session>(model);
    Request req;
    req.image = img;
    req.prompt = buildPrompt({"<CAPTION>", "", std::nullopt}, img.width, img.height);

    // Warm-up: the first run of each module pays one-time costs (allocation, kernel selection).
    generateFixed(*session, req, *model, 4, true);
    generateFixed(*session, req, *model, 4, false);
    progress.step("warm-up");

    std::vector<double> prep, vision, text, ttft;
    QJsonObject cachedJson, uncachedJson, ratioJson;
    std::map<int, std::vector<double>> cachedSteps;
    std::map<int, double> cachedTotal, uncachedTotal;
    std::vector<int64_t> promptIds;
    std::vector<int64_t> referenceIds;
    for (int len : lengths) {
        Result r = generateFixed(*session, req, *model, len, true);
        progress.step("cached decoding, " + std::to_string(len) + " tokens");
        prep.push_back(r.timings.preprocessMs);
        vision.push_back(r.timings.visionMs);
        text.push_back(r.timings.textEncoderMs);
        ttft.push_back(r.timings.preprocessMs + r.timings.visionMs + r.timings.textEncoderMs);
        cachedSteps[len] = r.timings.stepMs;
        cachedTotal[len] = r.timings.decodeMs;
        promptIds = r.promptIds;
        if (len == maxLen)
            referenceIds = r.generatedIds;
        const auto& s = r.timings.stepMs;
        QJsonObject c;
        c["median_step_ms"] = median(s);
        c["p95_step_ms"] = percentile(s, 0.95);
        c["tokens_per_s"] = 1000.0 * s.size() / std::accumulate(s.begin(), s.end(), 0.0);
        c["first32_median_ms"] = median(slice(s, 0, 32));
        c["last32_median_ms"] = median(slice(s, s.size() >= 32 ? s.size() - 32 : 0, s.size()));
        c["decode_ms"] = r.timings.decodeMs;
        c["step_ms"] = toJson(s);
        cachedJson[QString::number(len)] = c;
        if (uncached) {
            Result u = generateFixed(*session, req, *model, len, false);
            progress.step("uncached decoding, " + std::to_string(len) + " tokens");
            uncachedTotal[len] = u.timings.decodeMs;
            QJsonObject uj;
            uj["decode_ms"] = u.timings.decodeMs;
            uj["median_step_ms"] = median(u.timings.stepMs);
            uj["same_tokens_as_cached"] = u.generatedIds == r.generatedIds;
            uncachedJson[QString::number(len)] = uj;
            ratioJson[QString::number(len)] = u.timings.decodeMs / r.timings.decodeMs;
        }
    }
    // Peak memory of single requests (the batch of four images below needs more).
    const int64_t peak = peakResidentBytes();

    // Feature reuse: a second task on the same image skips preprocessing and the vision encoder.
    QJsonObject reuseJson;
    {
        GenerationOptions o = model->defaultOptions();
        o.numBeams = 1;
        o.maxNewTokens = 1;
        Request second = req;
        second.prompt = buildPrompt({"<OD>", "", std::nullopt}, img.width, img.height);
        o.reuseFeatures = false;
        const Result cold = session->generate(second, o);
        o.reuseFeatures = true;
        session->generate(req, o); // remembers the features
        const Result warm = session->generate(second, o);
        reuseJson["first_token_ms_without_reuse"] =
            cold.timings.preprocessMs + cold.timings.visionMs + cold.timings.textEncoderMs;
        reuseJson["first_token_ms_with_reuse"] =
            warm.timings.preprocessMs + warm.timings.visionMs + warm.timings.textEncoderMs;
        reuseJson["reused"] = warm.timings.featuresReused;
        progress.step("feature reuse");
    }

    // Batching: four different images with a fixed number of tokens, together and one by one.
    QJsonObject batchJson;
    if (batching && !samplesDir().empty()) {
        std::vector<Request> reqs;
        for (const char* name : {"pier.png", "chelsea.png", "coffee.png", "rocket.jpg"}) {
            Request r;
            r.image = loadImage(samplesDir() + "/" + name);
            r.prompt = buildPrompt({"<CAPTION>", "", std::nullopt}, r.image.width, r.image.height);
            reqs.push_back(r);
        }
        GenerationOptions o = model->defaultOptions();
        o.numBeams = 1;
        o.maxNewTokens = 32;
        o.ignoreEos = true;
        o.noRepeatNgramSize = 0;
        o.reuseFeatures = false;
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<Result> alone;
        for (const Request& r : reqs)
            alone.push_back(session->generate(r, o));
        const double oneByOneMs =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        progress.step("batching: one by one");
        const auto t1 = std::chrono::steady_clock::now();
        const std::vector<Result> together = session->generateBatch(reqs, o);
        const double batchMs =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1)
                .count();
        progress.step("batching: together");
        bool same = true;
        for (size_t i = 0; i < reqs.size(); ++i)
            same = same && alone[i].generatedIds == together[i].generatedIds;
        batchJson["images"] = int(reqs.size());
        batchJson["tokens_each"] = o.maxNewTokens;
        batchJson["one_by_one_ms"] = oneByOneMs;
        batchJson["batched_ms"] = batchMs;
        batchJson["one_by_one_images_per_s"] = 1000.0 * reqs.size() / oneByOneMs;
        batchJson["batched_images_per_s"] = 1000.0 * reqs.size() / batchMs;
        batchJson["speedup"] = oneByOneMs / batchMs;
        batchJson["same_tokens"] = same;
    }

    const int64_t peakWithBatch = peakResidentBytes();
    // After the peak is taken: the measurement's own 1 GiB buffer must not count.
    const double bandwidth = measureReadBandwidth();
    progress.step("memory bandwidth");
    const int encoderTokens = m.imageTokens + int(promptIds.size());
    const int64_t stepBytes = model->decodeStepBytes(encoderTokens);
    const double floorMs = 1000.0 * double(stepBytes) / bandwidth;
    const std::vector<double>& longest = cachedSteps[maxLen];
    const double cachedMedian = median(longest);

    out["model"] = QString::fromStdString(m.name);
    out["package"] = QString::fromStdString(package);
    out["parameters"] = double(m.parameterCount);
    out["runtime"] = QString::fromStdString(runtimeSummary());
    out["load_ms"] = model->loadMs();
    out["preprocess_ms"] = median(prep);
    out["vision_ms"] = median(vision);
    out["text_encoder_ms"] = median(text);
    out["first_token_ms"] = median(ttft);
    out["cached"] = cachedJson;
    if (uncached) {
        out["uncached"] = uncachedJson;
        out["uncached_over_cached"] = ratioJson;
    }
    out["feature_reuse"] = reuseJson;
    if (!batchJson.isEmpty())
        out["batching"] = batchJson;
    out["peak_rss_bytes"] = double(peak);
    out["peak_rss_with_batch_bytes"] = double(peakWithBatch);
    out["read_bandwidth_gbps"] = bandwidth / 1e9;
    out["step_bytes"] = double(stepBytes);
    out["bandwidth_floor_ms"] = floorMs;
    out["step_over_floor"] = cachedMedian / floorMs;

    // The Python baseline, same threads, same BLAS (the environment is inherited).
    QJsonObject py;
    if (python) {
        std::string err;
        std::string lens;
        for (int len : lengths)
            lens += (lens.empty() ? "" : ",") + std::to_string(len);
        py = runPython(package, image, promptIds, lens,
                       threads > 0 ? threads : ::florence::threads(), err);
        progress.step("python eager baseline");
        if (py.isEmpty()) {
            out["python_error"] = QString::fromStdString(err);
        } else {
            const QJsonArray pySteps =
                py["cached"].toObject()[QString::number(maxLen)].toObject()["step_ms"].toArray();
            std::vector<double> ps;
            for (const auto& v : pySteps)
                ps.push_back(v.toDouble());
            const double pyTtft = py["preprocess_ms"].toDouble() + py["vision_ms"].toDouble() +
                                  py["text_encoder_ms"].toDouble();
            QJsonObject pj;
            pj["load_ms"] = py["load_ms"];
            pj["preprocess_ms"] = py["preprocess_ms"];
            pj["vision_ms"] = py["vision_ms"];
            pj["text_encoder_ms"] = py["text_encoder_ms"];
            pj["first_token_ms"] = pyTtft;
            pj["median_step_ms"] = median(ps);
            pj["step_ratio"] = cachedMedian / median(ps);
            pj["first_token_ratio"] = median(ttft) / pyTtft;
            out["python_eager"] = pj;
        }
    }

    // bfloat16: speed, and agreement of the decoder logits with float32 over the same tokens.
    if (bf16) {
        FloatArray ref = session->decoderLogits(
            preprocess(img, m.imageWidth, m.imageHeight, m.imageMean, m.imageStd), promptIds,
            std::vector<int64_t>(referenceIds.begin(),
                                 referenceIds.begin() + std::min<size_t>(referenceIds.size(), 65)));
        // One model in memory at a time: the float32 one goes before the bfloat16 one loads.
        session.reset();
        model.reset();
        session = std::make_unique<Session>(
            Model::load(package, LoadOptions{threads, Precision::BFloat16}));
        progress.step("bfloat16 load");
        const Model& bm = session->model();
        generateFixed(*session, req, bm, 4, true);
        Result r = generateFixed(*session, req, bm, maxLen, true);
        progress.step("bfloat16 decoding");
        FloatArray got = session->decoderLogits(
            preprocess(img, m.imageWidth, m.imageHeight, m.imageMean, m.imageStd), promptIds,
            std::vector<int64_t>(referenceIds.begin(),
                                 referenceIds.begin() + std::min<size_t>(referenceIds.size(), 65)));
        progress.step("bfloat16 logits");
        const size_t vocab = size_t(ref.shape[1]);
        double minCos = 1, sumCos = 0;
        for (int64_t row = 0; row < ref.shape[0]; ++row) {
            const double c = cosine(ref.data, got.data, row * vocab, vocab);
            minCos = std::min(minCos, c);
            sumCos += c;
        }
        QJsonObject bj;
        bj["first_token_ms"] =
            r.timings.preprocessMs + r.timings.visionMs + r.timings.textEncoderMs;
        bj["vision_ms"] = r.timings.visionMs;
        bj["text_encoder_ms"] = r.timings.textEncoderMs;
        bj["median_step_ms"] = median(r.timings.stepMs);
        bj["logits_cosine_min"] = minCos;
        bj["logits_cosine_mean"] = sumCos / ref.shape[0];
        if (out.contains("python_eager")) {
            const QJsonObject pj = out["python_eager"].toObject();
            bj["step_ratio_vs_python_fp32"] =
                median(r.timings.stepMs) / pj["median_step_ms"].toDouble();
            bj["first_token_ratio_vs_python_fp32"] =
                bj["first_token_ms"].toDouble() / pj["first_token_ms"].toDouble();
        }
        out["bfloat16"] = bj;
    }
    progress.done();

    if (json) {
        std::cout << QJsonDocument(out).toJson(QJsonDocument::Indented).toStdString();
        return 0;
    }
    auto line = [](const std::string& label, const std::string& value) {
        std::printf("  %-44s %s\n", label.c_str(), value.c_str());
    };
    auto ms = [](double v) {
        char b[64];
        std::snprintf(b, sizeof b, "%.1f ms", v);
        return std::string(b);
    };
    auto num = [](double v, const char* fmt) {
        char b[64];
        std::snprintf(b, sizeof b, fmt, v);
        return std::string(b);
    };
    std::printf("%s — %s\n%s\n\n", m.name.c_str(), package.c_str(), runtimeSummary().c_str());
    line("load", ms(out["load_ms"].toDouble()));
    line("preprocess / vision / text encoder",
         ms(median(prep)) + " / " + ms(median(vision)) + " / " + ms(median(text)));
    line("time to first token (without decoding)", ms(median(ttft)));
    for (int len : lengths) {
        const QJsonObject c = cachedJson[QString::number(len)].toObject();
        line("cached " + std::to_string(len) + " tokens: median / p95 step",
             ms(c["median_step_ms"].toDouble()) + " / " + ms(c["p95_step_ms"].toDouble()) + ", " +
                 num(c["tokens_per_s"].toDouble(), "%.1f tok/s"));
        if (len >= 64)
            line("  first-32 / last-32 step median", ms(c["first32_median_ms"].toDouble()) + " / " +
                                                         ms(c["last32_median_ms"].toDouble()));
        if (uncached)
            line("uncached " + std::to_string(len) + " tokens: total (cached total)",
                 ms(uncachedTotal[len]) + " (" + ms(cachedTotal[len]) + "), " +
                     num(ratioJson[QString::number(len)].toDouble(), "%.1fx slower"));
    }
    line("first token of a 2nd task, without / with reuse",
         ms(reuseJson["first_token_ms_without_reuse"].toDouble()) + " / " +
             ms(reuseJson["first_token_ms_with_reuse"].toDouble()));
    if (!batchJson.isEmpty())
        line("4 images x 32 tokens: one by one / batched",
             num(batchJson["one_by_one_images_per_s"].toDouble(), "%.2f img/s") + " / " +
                 num(batchJson["batched_images_per_s"].toDouble(), "%.2f img/s") + " (" +
                 num(batchJson["speedup"].toDouble(), "%.2fx") +
                 (batchJson["same_tokens"].toBool() ? ", same tokens)" : ", TOKENS DIFFER)"));
    line("peak resident memory: single requests / with the batch",
         num(peak / 1048576.0, "%.0f MiB") + " / " + num(peakWithBatch / 1048576.0, "%.0f MiB"));
    line("memory read bandwidth", num(bandwidth / 1e9, "%.1f GB/s"));
    line("bytes one cached step reads", num(stepBytes / 1048576.0, "%.0f MiB"));
    line("bandwidth floor per step / engine", ms(floorMs) + " / " + ms(cachedMedian) + " (" +
                                                  num(cachedMedian / floorMs, "%.2fx floor") + ")");
    if (out.contains("python_eager")) {
        const QJsonObject pj = out["python_eager"].toObject();
        line("python eager: first token / median step",
             ms(pj["first_token_ms"].toDouble()) + " / " + ms(pj["median_step_ms"].toDouble()));
        line("engine / python: step, first token",
             num(pj["step_ratio"].toDouble(), "%.2fx") + ", " +
                 num(pj["first_token_ratio"].toDouble(), "%.2fx"));
    } else if (out.contains("python_error")) {
        line("python eager baseline", "failed: " + out["python_error"].toString().toStdString());
    }
    if (out.contains("bfloat16")) {
        const QJsonObject bj = out["bfloat16"].toObject();
        line("bfloat16: first token / median step",
             ms(bj["first_token_ms"].toDouble()) + " / " + ms(bj["median_step_ms"].toDouble()));
        if (bj.contains("step_ratio_vs_python_fp32"))
            line("bfloat16 / python fp32: step, first token",
                 num(bj["step_ratio_vs_python_fp32"].toDouble(), "%.2fx") + ", " +
                     num(bj["first_token_ratio_vs_python_fp32"].toDouble(), "%.2fx"));
        line("bfloat16 logits cosine vs float32 (min/mean)",
             num(bj["logits_cosine_min"].toDouble(), "%.6f") + " / " +
                 num(bj["logits_cosine_mean"].toDouble(), "%.6f"));
    }
    return 0;
}

} // namespace florence::cli
