#include "Common.h"

#include <florence/answer_json.h>
#include <florence/describe_run.h>
#include <florence/machine.h>
#include <florence/package.h>
#include <florence/paths.h>
#include <florence/process.h>
#include <florence/tasks.h>

#include <QJsonDocument>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>

namespace florence::cli {

std::atomic<bool> g_cancel{false};

namespace {

void onSignal(int) {
    g_cancel.store(true);
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

int threadsOption(const Args& a) {
    if (!a.has("threads"))
        return 0;
    const int n = a.getInt("threads", 0);
    if (n < 1)
        throw UsageError("--threads must be at least 1 (leave it out to use every core)");
    const int cores = florence::usableCores();
    if (n > cores) {
        std::cerr << "note: --threads " << n << " is more than the " << cores
                  << " cores this program may use; using " << cores << "\n";
        return cores;
    }
    return n;
}

florence::TaskRequest taskRequest(const Args& a) {
    florence::addPackageTasks(florence::readManifest(modelDir(a)).tasks);
    if (!a.has("prompt")) {
        const std::string task = a.get("task", "<CAPTION>");
        florence::taskInfo(task); // unknown task: TaskError listing the known ones
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
    if (a.has("beams"))
        settings.beams = a.getInt("beams", 0);
    if (a.has("max-new-tokens"))
        settings.maxNewTokens = a.getInt("max-new-tokens", 0);
    if (a.has("no-cache"))
        settings.useCache = false;
    if (a.has("ignore-eos"))
        settings.ignoreEos = true;
    if (a.has("precision")) {
        settings.precision = florence::parsePrecision(a.get("precision"));
        if (!settings.precision)
            throw UsageError("--precision takes " + florence::precisionNames() + ", not '" +
                             a.get("precision") + "'");
    }
    return settings;
}

std::shared_ptr<const florence::Model> loadModel(const Args& a) {
    florence::LoadOptions lo;
    lo.threads = threadsOption(a);
    lo.precision = generationSettings(a).loadPrecision();
    std::shared_ptr<const florence::Model> model = florence::Model::load(modelDir(a), lo);
    if (!model->precisionNote().empty())
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
    errno = 0;
    std::cout.flush();
    if (std::cout.good())
        return;
    const int err = errno;
    throw florence::Error("cannot write to standard output (" +
                          std::string(err != 0 ? std::strerror(err) : "a write failed") + ")");
}

std::string jsonLine(const QJsonObject& o) {
    return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString() + "\n";
}

} // namespace florence::cli
