#include "Common.h"

#include <florence/answer_json.h>
#include <florence/auto_precision.h>
#include <florence/describe_run.h>
#include <florence/machine.h>
#include <florence/package.h>
#include <florence/paths.h>
#include <florence/process.h>
#include <florence/tasks.h>

#include <QJsonDocument>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <sstream>

namespace florence::cli {

std::atomic<bool> g_cancel{false};

namespace {

// The first Ctrl+C asks the work to stop where it next looks; a second one, when that takes
// too long (a step that does not look), ends the program as Ctrl+C does by default.
void onSignal(int) {
    if (g_cancel.exchange(true)) {
        std::signal(SIGINT, SIG_DFL);
        std::raise(SIGINT);
    }
}

} // namespace

void installCancelHandler() {
    std::signal(SIGINT, onSignal);
}

std::string modelDir(const Args& a) {
    if (a.has("model"))
        return a.get("model");
    std::string d = florence::bundledModelDir();
    if (d.empty())
        throw UsageError("no bundled model found next to this program; pass --model PKG");
    return d;
}

namespace {

// --threads as given: 0 when absent; UsageError when zero or negative.
int threadsAsked(const Args& a) {
    if (!a.has("threads"))
        return 0;
    const int n = a.getInt("threads", 0);
    if (n < 1)
        throw UsageError("--threads must be at least 1 (leave it out to use every core)");
    return n;
}

} // namespace

void checkRunNumbers(const Args& a) {
    const florence::GenerationSettings settings = generationSettings(a);
    threadsAsked(a);
    // The package's limit is in its manifest: known without loading the model.
    if (settings.maxNewTokens) {
        const int most = florence::readManifest(modelDir(a)).maxPositions;
        if (most > 0 && *settings.maxNewTokens > most)
            throw UsageError("--max-new-tokens " + std::to_string(*settings.maxNewTokens) +
                             " is more than this model's decoder holds (" + std::to_string(most) +
                             ")");
    }
}

florence::Box regionOption(const Args& a) {
    const std::string s = a.get("region");
    try {
        return florence::parseRegion(s);
    } catch (const florence::TaskError&) {
        throw UsageError("--region takes four numbers X1,Y1,X2,Y2 in pixels, not '" + s + "'");
    }
}

void noteClippedRegion(const florence::TaskRequest& task, const std::string& name, int width,
                       int height) {
    std::cerr << clippedRegionNote(task, name, width, height);
}

std::string clippedRegionNote(const florence::TaskRequest& task, const std::string& name, int width,
                              int height) {
    if (!task.region)
        return {};
    const florence::Box& r = *task.region;
    const florence::Box in = florence::regionInImage(r, width, height);
    const auto inside = [](double v, int size) { return v >= 0 && v <= size; };
    if ((inside(r.x1, width) && inside(r.x2, width) && inside(r.y1, height) &&
         inside(r.y2, height)) ||
        !(in.x2 > in.x1) || !(in.y2 > in.y1)) // all inside, or nothing (buildPrompt refuses)
        return {};
    const auto num = [](double v) {
        std::ostringstream s;
        s << v;
        return s.str();
    };
    return "note: --region reaches past " + name + " (" + std::to_string(width) + "x" +
           std::to_string(height) + "): asking about the part inside it, " + num(in.x1) + "," +
           num(in.y1) + "," + num(in.x2) + "," + num(in.y2) + "\n";
}

int threadsOption(const Args& a) {
    const int n = threadsAsked(a);
    if (n == 0)
        return 0;
    const int cores = florence::usableCores();
    if (n > cores) {
        std::cerr << "note: --threads " << n << " is more than the " << cores
                  << " cores this program may use; using " << cores << "\n";
        return cores;
    }
    return n;
}

namespace {

// The task's input against the flags, before anything loads, in the flags' words (the engine
// checks the request again, in words for the app's fields).
void checkTaskFlags(const florence::TaskInfo& task, const Args& a) {
    const std::string text = a.get("text");
    const bool hasText =
        std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c) == 0; });
    const bool hasRegion = a.has("region");
    switch (task.input) {
    case florence::TaskInput::None:
        if (hasText || hasRegion)
            throw UsageError(task.token + " takes no " + (hasText ? "--text" : "--region") +
                             ": leave it out, or pick a task that takes one (tasks lists them)");
        return;
    case florence::TaskInput::Text:
        if (hasRegion)
            throw UsageError(task.token + " takes a " + task.inputLabel +
                             " with --text, not --region");
        if (!hasText)
            throw UsageError(task.token + " needs a " + task.inputLabel +
                             ": pass it with --text \"...\"");
        return;
    case florence::TaskInput::Region:
        if (!hasText && !hasRegion)
            throw UsageError(task.token +
                             " needs a region: pass --region X1,Y1,X2,Y2 in pixels (or --text "
                             "with four <loc_N> tokens)");
        return;
    }
}

} // namespace

const florence::TaskInfo& taskOption(const std::string& token) {
    try {
        return florence::taskInfo(token);
    } catch (const florence::TaskError& e) {
        throw UsageError(std::string("--task: ") + e.what()); // lists the known ones
    }
}

florence::TaskRequest taskRequest(const Args& a) {
    florence::addPackageTasks(florence::readManifest(modelDir(a)).tasks);
    if (!a.has("prompt")) {
        const std::string task = a.get("task", "<CAPTION>");
        checkTaskFlags(taskOption(task), a);
        return {task, a.get("text"), std::nullopt};
    }
    if (a.has("task") || a.has("text") || a.has("region"))
        throw UsageError("--prompt is the whole prompt: it takes no --task, --text or --region");
    if (a.get("prompt").empty())
        throw UsageError("--prompt needs the text to send");
    return {florence::kCustomPromptTask, a.get("prompt"), std::nullopt};
}

florence::GenerationSettings generationSettings(const Args& a) {
    florence::GenerationSettings settings;
    // Wrong values are wrong arguments: refused before the model loads, exit 2 (the engine
    // would refuse them too, but only after loading, as an error).
    if (a.has("beams")) {
        settings.beams = a.getInt("beams", 0);
        if (*settings.beams < 1 || *settings.beams > 16)
            throw UsageError("--beams must be between 1 and 16, not " + a.get("beams"));
    }
    if (a.has("max-new-tokens")) {
        settings.maxNewTokens = a.getInt("max-new-tokens", 0);
        if (*settings.maxNewTokens < 1)
            throw UsageError("--max-new-tokens must be at least 1, not " + a.get("max-new-tokens"));
    }
    if (a.has("no-cache"))
        settings.useCache = false;
    if (a.has("ignore-eos"))
        settings.ignoreEos = true;
    // Unset: $FLORENCE_PRECISION, else Automatic.
    const std::string precision = a.get("precision");
    try {
        settings.precision = a.has("precision") ? florence::parsePrecisionSetting(precision)
                                                : florence::defaultPrecisionSetting();
    } catch (const florence::EngineError&) {
        if (!a.has("precision"))
            throw;
        throw UsageError("--precision takes auto, " + florence::precisionNames() + ", not '" +
                         precision + "'");
    }
    return settings;
}

static std::shared_ptr<const florence::Model> loadModelUnlessCancelled(const Args& a);

std::shared_ptr<const florence::Model> loadModel(const Args& a) {
    // Ctrl+C from here on is seen: measuring the precisions of a large model on its first run
    // takes minutes, and it must stop there too, not only once decoding has begun.
    installCancelHandler();
    try {
        return loadModelUnlessCancelled(a);
    } catch (const florence::EngineError&) {
        if (!g_cancel.load())
            throw;
        throw Interrupted("interrupted while loading the model or measuring its precisions; "
                          "nothing was kept");
    }
}

static std::shared_ptr<const florence::Model> loadModelUnlessCancelled(const Args& a) {
    florence::LoadOptions lo;
    lo.threads = threadsOption(a);
    lo.cancel = &g_cancel;
    const std::string dir = modelDir(a);
    bool quiet = false, measuredBefore = false;
    if (const std::optional<florence::Precision> fixed = generationSettings(a).precision) {
        lo.precision = *fixed;
    } else {
        // Measured once per CPU and package (a few seconds, each precision loaded in turn),
        // then read from the user's cache folder.
        // --quiet: what was measured before goes unsaid; a measurement now (seconds to minutes)
        // is still said as it goes, and so is a precision that does not hold.
        quiet = a.has("quiet");
        const florence::PrecisionChoice choice =
            florence::automaticPrecision(dir, lo.threads, &g_cancel, [&](const std::string& stage) {
                std::cerr << "automatic precision, once for this CPU and model: " << stage << "\n";
            });
        lo.precision = choice.precision;
        measuredBefore = !choice.probed;
        if (!quiet || choice.probed) {
            std::cerr << "note: " << choice.reason << " ("
                      << (choice.probed ? "measured now" : "measured before");
            if (choice.kept)
                std::cerr << "; kept in " << florence::precisionProbeCachePath();
            std::cerr << ")\n";
        }
    }
    std::shared_ptr<const florence::Model> model = florence::Model::load(dir, lo);
    // How the precision Automatic picked runs here (int8's encoders in float32 but for their
    // large products), said with the pick and, under --quiet, left unsaid with it. A precision
    // the user fixed is always followed by what of it does not hold.
    if (!model->precisionNote().empty() && !(quiet && measuredBefore))
        std::cerr << "note: " << model->precisionNote() << "\n";
    return model;
}

florence::GenerationOptions runOptions(const Args& a, const florence::Model& model) {
    return generationSettings(a).applyTo(model.defaultOptions());
}

QJsonObject resultJson(const std::string& imageFile, const std::string& prompt,
                       const florence::Result& r, const florence::ParsedAnswer& answer,
                       const florence::GenerationOptions& opts, const florence::Model& model,
                       std::optional<bool> orientationApplied) {
    return florence::answerJson(answer, r,
                                florence::describeRun(florence::modelFacts(model), opts, imageFile,
                                                      prompt, orientationApplied));
}

florence::DecodeOptions decodeOptions(const Args& a) {
    florence::DecodeOptions d;
    d.exifRotate = !a.has("no-exif-rotate");
    return d;
}

QJsonObject failureJson(const florence::ImageOutcome& outcome) {
    return QJsonObject{{"image", QJsonObject{{"file", QString::fromStdString(outcome.path)}}},
                       {"error", QString::fromStdString(outcome.error)}};
}

void flushStdout() {
    // Said once: the stream stays failed, and a second flush (the one every command ends with)
    // would add "(a write failed)" without the reason the first gave.
    static bool reported = false;
    if (reported)
        return;
    errno = 0;
    std::cout.flush();
    if (std::cout.good())
        return;
    const int err = errno;
    reported = true;
    throw florence::Error("cannot write to standard output (" +
                          std::string(err != 0 ? std::strerror(err) : "a write failed") + ")");
}

std::string jsonLine(const QJsonObject& o) {
    return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString() + "\n";
}

} // namespace florence::cli
