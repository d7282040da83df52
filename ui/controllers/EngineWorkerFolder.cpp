// EngineWorker's folder runs, in a file of their own: the single-image runs in
// EngineWorker.cpp do not need any of it. The job itself (<florence/folder_job.h>) is the one
// the CLI's `batch` runs; this only turns its reports into signals.
#include "controllers/EngineWorker.h"

#include <florence/engine.h>
#include <florence/folder_job.h>

namespace florence::ui {

namespace {

constexpr int kThumbnailSize = 160;

QImage thumbnail(const RgbImage& image) {
    const QImage view(image.pixels.data(), image.width, image.height, image.width * 3,
                      QImage::Format_RGB888);
    return view.scaled(kThumbnailSize, kThumbnailSize, Qt::KeepAspectRatio,
                       Qt::SmoothTransformation);
}

QString qstr(const std::string& s) {
    return QString::fromStdString(s);
}

} // namespace

void EngineWorker::processFolder(const FolderRequest& request) {
    FolderOutcome out;
    FolderJobHooks hooks;
    hooks.cancel = request.cancel.get();
    try {
        if (!m_session)
            throw Error(tr("No model is loaded: open a model package first.").toStdString());
        const FolderJob job(request.job);
        FolderProgress progress;
        progress.total = job.folder().pendingImages().size();
        progress.skipped = job.folder().skippedCount();
        emit folderProgress(progress);
        hooks.onImageStarted = [&](size_t, const std::string& path, const RgbImage& image) {
            emit folderImageStarted(qstr(path), thumbnail(image));
        };
        hooks.onImageDone = [&](const FolderImageReport& report) {
            progress.path = qstr(report.outcome.path);
            progress.error = qstr(report.error);
            progress.done = report.progress.done;
            progress.elapsedSeconds = report.progress.elapsedSeconds;
            emit folderProgress(progress);
            return true;
        };
        const FolderJobResult result = job.run(m_session.get(), hooks);
        out.answered = result.answered;
        out.skipped = result.skipped;
        for (const auto& [path, why] : result.failures)
            out.failures.emplace_back(qstr(path), qstr(why));
        out.error = qstr(result.cocoError);
        if (result.cocoError.empty())
            out.cocoPath = qstr(result.cocoPath);
    } catch (const std::exception& e) {
        out.error = qstr(e.what());
    } catch (...) {
        out.error = tr("unknown error in the engine");
    }
    out.cancelled = hooks.cancel && hooks.cancel->load();
    emit folderFinished(out);
}

} // namespace florence::ui
