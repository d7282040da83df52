#include <florence/folder_job.h>

#include <florence/answer_json.h>
#include <florence/describe_run.h>

#include <chrono>
#include <optional>

namespace florence {

FolderJob::FolderJob(FolderJobParams params) : m_params(std::move(params)), m_folder(m_params) {}

FolderJobResult FolderJob::run(Session* session, const FolderJobHooks& hooks) const {
    FolderJobResult result;
    result.skipped = m_folder.skippedCount();
    result.failures = m_folder.refused();
    if (!m_folder.pendingImages().empty()) {
        if (!session)
            throw Error("no model to answer the folder's images with");
        answerPending(*session, hooks, result);
    }
    result.cancelled = hooks.cancel && hooks.cancel->load();
    result.cocoPath = m_folder.cocoPath();
    try {
        m_folder.writeCoco();
    } catch (const std::exception& e) {
        result.cocoError = e.what();
    }
    return result;
}

void FolderJob::answerPending(Session& session, const FolderJobHooks& hooks,
                              FolderJobResult& result) const {
    const std::vector<std::string>& pending = m_folder.pendingImages();
    GenerationOptions options = m_params.settings.applyTo(session.model().defaultOptions());
    options.reuseFeatures = false; // every image is another one
    options.cancel = hooks.cancel;
    const ModelFacts model = modelFacts(session.model());
    const auto start = std::chrono::steady_clock::now();
    size_t done = 0;
    ImageRunHooks imageHooks;
    imageHooks.onImageStarted = hooks.onImageStarted;
    imageHooks.onImageDone = [&](const ImageOutcome& o) {
        std::optional<QJsonObject> document;
        std::string error = o.error;
        if (error.empty()) {
            document =
                answerJson(o.answer, o.result,
                           describeRun(model, options, o.path, o.prompt, o.orientationApplied));
            try {
                m_folder.writeResult(o.path, o.answer, *document);
                ++result.answered;
            } catch (const std::exception& e) { // a full disk: the message names the file
                error = e.what();
                ++result.unwritten;
            }
        }
        if (!error.empty())
            result.failures.emplace_back(o.path, error);
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        const FolderImageReport report{o, document ? &*document : nullptr, error,
                                       batchProgress(++done, pending.size(), elapsed.count())};
        if (hooks.onImageDone && !hooks.onImageDone(report)) {
            result.stopped = true;
            return false;
        }
        return true;
    };
    runImages(session, pending, m_params.task, options, m_params.batchSize, imageHooks,
              m_params.decode);
}

std::string FolderJob::previewCaption(Session& session) const {
    if (m_folder.pendingImages().empty())
        throw Error("no image to preview: every image is skipped");
    const std::string& image = m_folder.pendingImages().front();
    std::string content, error;
    ImageRunHooks hooks;
    hooks.onImageDone = [&](const ImageOutcome& o) {
        error = o.error;
        if (error.empty())
            content = m_folder.captionFileContent(o.path, o.answer);
        return true;
    };
    runImages(session, {image}, m_params.task,
              m_params.settings.applyTo(session.model().defaultOptions()), 1, hooks,
              m_params.decode);
    if (!error.empty())
        throw Error(error);
    return content;
}

} // namespace florence
