// EngineWorker's folder runs, in a file of their own: the single-image runs in
// EngineWorker.cpp do not need any of it.
#include "controllers/EngineWorker.h"

#include <florence/answer_json.h>
#include <florence/batch.h>
#include <florence/engine.h>
#include <florence/machine.h>

#include <QElapsedTimer>

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
    const std::atomic<bool>* cancel = request.cancel.get();
    try {
        if (!m_session)
            throw Error(tr("No model is loaded: open a model package first.").toStdString());
        const FolderBatch folder(request.job);
        out.skipped = folder.skippedCount();
        for (const auto& [path, why] : folder.refused())
            out.failures.emplace_back(qstr(path), qstr(why));
        const std::vector<std::string>& pending = folder.pendingImages();
        FolderProgress progress;
        progress.total = pending.size();
        progress.skipped = out.skipped;
        emit folderProgress(progress);

        GenerationOptions options = request.options;
        options.reuseFeatures = false; // every image is another one
        AnswerContext context;
        context.model = m_model->manifest().name;
        context.options = &options;
        context.precision = precisionName(m_model->loadOptions().precision);
        context.encoderPrecision = precisionName(m_model->encoderPrecision());
        context.runtime = runtimeSummary();
        QElapsedTimer clock;
        clock.start();
        runImages(
            *m_session, pending, request.job.task, options, 1,
            [&](const ImageOutcome& o) {
                progress.path = qstr(o.path);
                progress.error = qstr(o.error);
                if (o.error.empty()) {
                    context.imageFile = o.path;
                    context.prompt = o.prompt;
                    try {
                        folder.writeResult(o.path, o.answer,
                                           answerJson(o.answer, o.result, context));
                        ++out.answered;
                    } catch (const std::exception& e) {
                        progress.error = qstr(e.what());
                    }
                }
                if (!progress.error.isEmpty())
                    out.failures.emplace_back(progress.path, progress.error);
                ++progress.done;
                progress.elapsedSeconds = static_cast<double>(clock.elapsed()) / 1000.0;
                emit folderProgress(progress);
                return true;
            },
            cancel,
            [&](size_t, const std::string& path, const RgbImage& image) {
                emit folderImageStarted(qstr(path), thumbnail(image));
            });
        folder.writeCoco();
        out.cocoPath = qstr(folder.cocoPath());
    } catch (const std::exception& e) {
        out.error = qstr(e.what());
    } catch (...) {
        out.error = tr("unknown error in the engine");
    }
    out.cancelled = cancel && cancel->load();
    emit folderFinished(out);
}

} // namespace florence::ui
