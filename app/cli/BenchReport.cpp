#include "BenchReport.h"

#include <florence/machine.h>
#include <florence/stats.h>

#include <QJsonArray>

#include <algorithm>
#include <cstdio>

namespace florence::cli {

namespace {

std::vector<double> slice(const std::vector<double>& v, size_t from, size_t to) {
    from = std::min(from, v.size());
    to = std::min(to, v.size());
    return std::vector<double>(v.begin() + from, v.begin() + to);
}

QJsonArray toJson(const std::vector<double>& v) {
    QJsonArray a;
    for (double x : v)
        a.append(x);
    return a;
}

QJsonObject lengthsJson(const BenchResult& r, QJsonObject& uncached, QJsonObject& ratio) {
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

QJsonObject comparisonsJson(const BenchResult& r, QJsonObject out) {
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
    if (!r.bf16Error.empty())
        out["bfloat16_error"] = QString::fromStdString(r.bf16Error);
    for (const auto& [key, mode] : {std::pair{"bfloat16", &r.bf16}, std::pair{"int8", &r.int8}}) {
        if (!*mode)
            continue;
        const ReducedReport& b = **mode;
        const double floorMs = r.floorMs(b);
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

} // namespace

QJsonObject toJson(const BenchResult& r) {
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

namespace {

std::string num(double v, const char* fmt) {
    char b[64];
    std::snprintf(b, sizeof b, fmt, v);
    return b;
}

// A step cannot read its bytes faster than memory delivers them: one that seems to was measured
// against a bandwidth another program held down (with bfloat16 or int8 measured, the bench
// measures it twice and keeps the higher), or its bytes stayed in a cache.
std::string underFloorNote(double stepMs, double floorMs) {
    return stepMs < 0.95 * floorMs
               ? " - under the floor: the bandwidth measured low (another program reading "
                 "memory?) or the weights fit a cache"
               : std::string();
}

void line(const std::string& label, const std::string& value) {
    std::printf("  %-48s %s\n", label.c_str(), value.c_str());
}

void printDecodingTable(const BenchResult& r) {
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

void printMachineTable(const BenchResult& r) {
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
    if (r.batching)
        line("peak memory: single requests / with the batch",
             num(r.peakBytes / 1048576.0, "%.0f MiB") + " / " +
                 num(r.peakWithBatchBytes / 1048576.0, "%.0f MiB"));
    else
        line("peak resident memory", num(r.peakBytes / 1048576.0, "%.0f MiB"));
    line("memory read bandwidth", num(r.bandwidth / 1e9, "%.1f GB/s"));
    line("bytes one cached step reads", num(r.stepBytes / 1048576.0, "%.0f MiB"));
    line("bandwidth floor per step / engine",
         formatMs(r.floorMs()) + " / " + formatMs(r.cachedMedianMs()) + " (" +
             num(r.cachedMedianMs() / r.floorMs(), "%.2fx floor") + ")" +
             underFloorNote(r.cachedMedianMs(), r.floorMs()));
}

void printComparisonTable(const BenchResult& r) {
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
    if (!r.bf16Error.empty())
        line("bfloat16", "not measured: " + r.bf16Error);
    for (const auto& [name, mode] : {std::pair{"bfloat16", &r.bf16}, std::pair{"int8", &r.int8}}) {
        if (!*mode)
            continue;
        const ReducedReport& b = **mode;
        const std::string n = name;
        const double floorMs = r.floorMs(b);
        line(n + ": first token / median step",
             formatMs(b.firstTokenMs) + " / " + formatMs(b.medianStepMs));
        line(n + ": bandwidth floor per step", formatMs(floorMs) + " (" +
                                                   num(b.stepBytes / 1048576.0, "%.0f MiB") + ", " +
                                                   num(b.medianStepMs / floorMs, "%.2fx floor") +
                                                   ")" + underFloorNote(b.medianStepMs, floorMs));
        if (r.python)
            line(n + " / python fp32: step, first token",
                 num(b.medianStepMs / r.python->medianStepMs, "%.2fx") + ", " +
                     num(b.firstTokenMs / r.python->firstTokenMs(), "%.2fx"));
        line(n + " logits cosine vs float32 (min/mean)",
             num(b.logitsCosineMin, "%.6f") + " / " + num(b.logitsCosineMean, "%.6f"));
        if (b.encoderPrecision != n)
            line(n + ": encoders run in",
                 b.encoderPrecision + " (" + florence::bfloat16ProductsProblem() + " here)");
        if (mode == &r.int8) {
            std::string modules;
            for (const std::string& m : b.int8Modules)
                modules += (modules.empty() ? "" : ", ") + m;
            line(n + ": modules with int8 products", modules.empty() ? "none" : modules);
        }
    }
}

} // namespace

void printTable(const BenchResult& r) {
    std::printf("%s — %s\n%s%s\n\n", r.model.c_str(), r.package.c_str(), r.runtime.c_str(),
                r.busyThreads ? (", " + std::to_string(r.busyThreads) +
                                 " busy background thread(s) of bench's own")
                                    .c_str()
                              : "");
    printDecodingTable(r);
    printMachineTable(r);
    printComparisonTable(r);
}

} // namespace florence::cli
