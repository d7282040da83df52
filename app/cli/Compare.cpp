#include "Compare.h"

#include "Common.h"

#include <florence/answer.h>
#include <florence/compare_job.h>
#include <florence/stats.h>
#include <florence/tasks.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonValue>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

namespace florence::cli {

namespace {

bool onProcessorTime(const CompareFigures& f) {
    return f.basis == CompareFigures::Basis::ProcessorTime;
}

// The spreads of one kind of pass.
QJsonObject passJson(const Spread& wall, const Spread& cpu, const Spread& decode) {
    return QJsonObject{{"median_ms", wall.medianMs},
                       {"min_ms", wall.minMs},
                       {"max_ms", wall.maxMs},
                       {"spread", wall.relative()},
                       {"processor_median_ms", cpu.medianMs},
                       {"processor_spread", cpu.relative()},
                       {"decode_median_ms", decode.medianMs}};
}

// Where the answers part (florence::answersPart), null when they do not.
QJsonValue splitJson(const CompareResult& r) {
    const std::optional<AnswerSplit> split = answersPart(r);
    if (!split)
        return QJsonValue();
    const auto probability = [](double p) { return p < 0 ? QJsonValue() : QJsonValue(p); };
    return QJsonObject{{"token", split->token + 1},
                       {"cached_probability", probability(split->cachedProbability)},
                       {"uncached_probability", probability(split->uncachedProbability)},
                       {"beams", r.numBeams},
                       {"cached_score", split->cachedScore},
                       {"uncached_score", split->uncachedScore},
                       {"near_tie", split->nearTie()}};
}

// "no (from token 12: 41% with the cache, 40% without, a near tie)"
std::string differenceText(const CompareResult& r) {
    const std::optional<AnswerSplit> split = answersPart(r);
    if (!split)
        return "no (in a repeat of one pass)";
    std::string s = "no (from token " + std::to_string(split->token + 1);
    if (split->cachedProbability < 0 || split->uncachedProbability < 0)
        return s + ": one answer ends there)";
    s += ": " + formatPercent(split->cachedProbability) + " with the cache, " +
         formatPercent(split->uncachedProbability) + " without";
    if (!split->greedy) {
        char scores[96];
        std::snprintf(scores, sizeof scores, "; beam scores %.3f and %.3f", split->cachedScore,
                      split->uncachedScore);
        return s + scores + (split->nearTie() ? ", nearly tied)" : ")");
    }
    return s + (split->nearTie() ? ", a near tie)" : ", more than a near tie apart)");
}

QJsonObject compareJson(const std::string& image, const TaskRequest& task, int tokens,
                        const CompareResult& r, const CompareFigures& f) {
    const bool verdict = f.enoughRuns && f.conclusive;
    return QJsonObject{
        {"image", QString::fromStdString(image)},
        {"task", QString::fromStdString(task.task)},
        {"tokens", tokens},
        {"repeats", r.repeats},
        {"cached", passJson(f.cached, f.cachedCpu, f.cachedDecode)},
        {"uncached", passJson(f.uncached, f.uncachedCpu, f.uncachedDecode)},
        {"conclusive", verdict},
        // What the speedup rests on: null when the repeats disagree on both clocks.
        {"basis",
         verdict ? QJsonValue(onProcessorTime(f) ? "processor_time" : "wall_clock") : QJsonValue()},
        {"speedup", verdict ? QJsonValue(f.speedup) : QJsonValue()},
        {"decode_speedup", f.decodeSpeedup},
        {"identical", r.identical},
        {"first_difference", splitJson(r)},
        {"cancelled", r.cancelled},
        {"answer", QString::fromStdString(readableText(r.cached.first.text))}};
}

// "with the cache: 256 tokens in 3.10 s (median of 3), without: 31.00 s; 10.0x faster; same
// answer: yes", on the basis the verdict rests on.
std::string compareLine(int tokens, const CompareResult& r, const CompareFigures& f) {
    if (!f.enoughRuns)
        return "not enough runs to compare";
    const bool cpu = onProcessorTime(f);
    const Spread& with = cpu ? f.cachedCpu : f.cached;
    const Spread& without = cpu ? f.uncachedCpu : f.uncached;
    // Both in the unit of the larger, so that they compare at a glance.
    const bool seconds = std::max(with.medianMs, without.medianMs) >= 10'000;
    const auto time = [seconds](double ms) {
        char text[32];
        std::snprintf(text, sizeof text, seconds ? "%.2f s" : "%.1f ms", seconds ? ms / 1000 : ms);
        return std::string(text);
    };
    std::string s = "with the cache: " + std::to_string(tokens) + " tokens in " +
                    time(with.medianMs) + " (median of " + std::to_string(with.count) +
                    (cpu ? ", processor time: the wall clock varied" : "") +
                    "), without: " + time(without.medianMs) + "; ";
    if (f.conclusive) {
        char speedup[32];
        std::snprintf(speedup, sizeof speedup, "%.1fx faster", f.speedup);
        s += speedup;
    } else {
        s += "no verdict: the repeats disagree too much (the machine was busy), run again";
    }
    return s + "; same answer: " + (r.identical ? "yes" : differenceText(r));
}

} // namespace

int runCompare(int argc, char** argv) {
    Args a = parseArgs(argc, argv, 2,
                       {"image", "task", "text", "prompt", "region", "model", "beams",
                        "max-new-tokens", "threads", "precision", "repeats"},
                       {"json", "quiet", "ignore-eos", "no-exif-rotate", "no-warmup"});
    // The image as `run` takes it (--image) or on its own.
    if (a.has("image") && a.positional.empty())
        a.positional.push_back(a.get("image"));
    if (a.positional.size() != 1)
        throw UsageError("compare takes one image: compare IMAGE or compare --image IMAGE");
    const int repeats = a.getInt("repeats", 3);
    if (repeats < 1)
        throw UsageError("--repeats must be at least 1");
    const std::string image = a.positional[0];
    TaskRequest task = taskRequest(a); // before loading anything
    checkRunNumbers(a);                // wrong numbers, before the image is decoded
    if (a.has("region"))
        task.region = regionOption(a);
    CompareParams params;
    params.request.image = std::make_shared<const RgbImage>(loadImage(image, decodeOptions(a)));
    params.request.prompt =
        buildPrompt(task, params.request.image->width, params.request.image->height);
    noteClippedRegion(task, image, params.request.image->width, params.request.image->height);
    const std::shared_ptr<const Model> model = loadModel(a);
    params.options = runOptions(a, *model);
    params.repeats = repeats;
    params.warmup = !a.has("no-warmup");
    params.cancel = &g_cancel;
    CompareHooks hooks;
    if (!a.has("quiet"))
        // Which pass ended: the warm-up, then the two kinds by turns; a count that does not move
        // is the figures settling before the repeats asked for.
        hooks.onProgress = [warm = params.warmup, last = 0](int done, int total) mutable {
            const int measured = done - (warm ? 1 : 0);
            const char* what = done == last        ? "the figures settled, no more repeats"
                               : measured <= 0     ? "warm-up done"
                               : measured % 2 == 1 ? "done with the cache"
                                                   : "done without the cache";
            last = done;
            std::cerr << "[" << done << "/" << total << "] passes: " << what << "\n";
        };
    Session session(model);
    installCancelHandler();
    const CompareResult r = CompareJob(params).run(session, hooks);
    const CompareFigures f = compareFigures(r);
    const int tokens = r.cached.first.generatedIds.empty()
                           ? 0
                           : static_cast<int>(r.cached.first.generatedIds.size()) - 1;
    if (a.has("json"))
        std::cout << QJsonDocument(compareJson(image, task, tokens, r, f))
                         .toJson(QJsonDocument::Indented)
                         .toStdString();
    else if (r.cancelled)
        // Not a result: a repeat or more of each pass is missing.
        std::cerr << "florence-studio-cli: interrupted after " << r.repeats << " of " << repeats
                  << " repeats of each pass: no comparison\n";
    else
        std::cout << compareLine(tokens, r, f) << "\n"
                  << "answer: " << readableText(r.cached.first.text) << "\n";
    return r.cancelled ? 130 : 0;
}

} // namespace florence::cli
