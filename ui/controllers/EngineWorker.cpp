#include "controllers/EngineWorker.h"

#include <florence/answer.h>
#include <florence/auto_precision.h>
#include <florence/compare_job.h>
#include <florence/engine.h>
#include <florence/folder_job.h>
#include <florence/stats.h>

#include <ctime>
#include <pthread.h>

namespace florence::ui {

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) {
    // Made on the GUI thread: its clock lets a comparison leave out the time spent drawing.
    clockid_t clock{};
    if (pthread_getcpuclockid(pthread_self(), &clock) == 0)
        m_guiClock = clock;
}

EngineWorker::~EngineWorker() = default;

void EngineWorker::loadModel(const QString& packageDir, Precision precision, bool automatic) {
    emit modelLoading(packageDir);
    bool released = false;
    QString error;
    try {
        LoadOptions options;
        options.precision = precision;
        std::optional<PrecisionChoice> choice;
        if (automatic) {
            // Measured once per CPU and package (each precision loaded in turn beside the
            // model in use), then read from the user's cache folder.
            choice = automaticPrecision(packageDir.toStdString(), 0, &m_stopLoading,
                                        [this](const std::string& stage) {
                                            emit precisionMeasuring(QString::fromStdString(stage));
                                        });
            options.precision = choice->precision;
        }
        options.cancel = &m_stopLoading;
        options.onProgress = [this, packageDir](LoadStage stage, double fraction) {
            emit modelLoadProgress(packageDir, static_cast<int>(stage), fraction);
        };
        // Peak memory is one model, not two. A package that its checks refuse (damaged, not
        // ours) never gets here, and the model in use keeps working.
        options.beforeModules = [this, &released] {
            m_session.reset();
            m_model.reset();
            released = true;
            emit modelReleased();
        };
        install(Model::load(packageDir.toStdString(), options), packageDir,
                choice ? &*choice : nullptr);
        return;
    } catch (const std::exception& e) {
        error = QString::fromStdString(e.what());
    } catch (...) {
        error = tr("unknown error while loading the model");
    }
    if (released) {
        emit modelUnloaded();
        error += tr(" (the model in use had been released to make room; none is loaded now)");
    }
    emit modelFailed(packageDir, error);
}

void EngineWorker::install(std::shared_ptr<const Model> model, const QString& packageDir,
                           const PrecisionChoice* choice) {
    m_model = std::move(model);
    m_session = std::make_unique<Session>(m_model);
    const Manifest& m = m_model->manifest();
    ModelInfo info;
    info.dir = QString::fromStdString(m.dir.empty() ? packageDir.toStdString() : m.dir);
    info.manifest = m;
    // The precision the weights run in, not the manifest's (which is how they are stored).
    info.precisionMode = m_model->loadOptions().precision;
    info.encoderPrecision = m_model->encoderPrecision();
    info.precisionNote = QString::fromStdString(m_model->precisionNote());
    if (choice) {
        info.automatic = true;
        info.automaticReason = QString::fromStdString(choice->reason);
        info.precisionOptions = choice->options;
    }
    info.loadMs = m_model->loadMs();
    info.defaults = m_model->defaultOptions();
    emit modelLoaded(info);
}

RunOutcome EngineWorker::outcomeOf(const RunRequest& request, const GenerationOptions& options,
                                   int pass, Result result) const {
    RunOutcome out;
    out.runId = request.runId;
    out.pass = pass;
    out.task = request.task;
    out.useCache = options.useCache;
    out.numBeams = options.numBeams;
    out.imageWidth = request.image->width;
    out.imageHeight = request.image->height;
    out.result = std::move(result);
    // Scores need the tokens and the tokenizer, which only this thread has.
    if (!out.result.generatedIds.empty())
        out.scored = parseResult(m_model->tokenizer(), request.task.toStdString(), out.result,
                                 out.imageWidth, out.imageHeight);
    return out;
}

RunOutcome EngineWorker::runPass(const RunRequest& request) {
    Request req;
    req.image = request.image; // the window's pixels, shared
    req.prompt = request.prompt;
    const auto start = Clock::now();
    GenerationOptions hooked = request.options;
    hooked.cancel = request.cancel.get();
    hooked.onToken = [&](const TokenEvent& e) {
        TokenUpdate u;
        u.runId = request.runId;
        u.event = e; // what this step added, not the text so far
        u.elapsedMs = msSince(start);
        emit tokenReady(u);
        return true;
    };
    return outcomeOf(request, request.options, 0, m_session->generate(req, hooked));
}

CompareOutcome EngineWorker::compare(const RunRequest& request) {
    // The comparison is the engine's CompareJob; this only turns its hooks into the signals
    // the window listens to.
    CompareParams params;
    params.request.image = request.image;
    params.request.prompt = request.prompt;
    params.options = request.options;
    params.repeats = request.compareRepeats;
    params.warmup = request.compareWarmup;
    params.cancel = request.cancel.get();
    CompareOutcome cmp;
    cmp.runId = request.runId;
    cmp.cached.runId = cmp.uncached.runId = request.runId;
    cmp.uncached.pass = 1;
    const quint64 runId = request.runId;
    CompareHooks hooks;
    hooks.onToken = [&](ComparePass pass, const TokenEvent& e, double elapsedMs) {
        TokenUpdate u;
        u.runId = runId;
        u.pass = static_cast<int>(pass);
        u.event = e;
        u.elapsedMs = elapsedMs;
        emit tokenReady(u);
    };
    hooks.onRepeatTokens = [&](ComparePass pass, int tokens) {
        emit compareTokens(runId, static_cast<int>(pass), tokens);
    };
    hooks.onPassFinished = [&](ComparePass pass, const Result& result) {
        GenerationOptions options = request.options;
        options.useCache = pass == ComparePass::Cached;
        RunOutcome& kept = pass == ComparePass::Cached ? cmp.cached : cmp.uncached;
        kept = outcomeOf(request, options, static_cast<int>(pass), result);
        emit runFinished(kept);
    };
    hooks.onProgress = [&](int done, int total) { emit compareProgress(runId, done, total); };
    // The GUI thread draws the streamed tokens of the first repeat only, so it is left out.
    hooks.processorMs = [this] {
        return cpuClockMs(CLOCK_PROCESS_CPUTIME_ID) - (m_guiClock ? cpuClockMs(*m_guiClock) : 0.0);
    };
    cmp.measured = CompareJob(std::move(params)).run(*m_session, hooks);
    if (cmp.measured.cancelled)
        cmp.uncached.result.cancelled = cmp.cached.result.cancelled = true;
    return cmp;
}

void EngineWorker::run(const RunRequest& request) {
    // A run cancelled while still queued (the user pressed Cancel, or started another run) is
    // reported as cancelled without touching the model.
    if (request.cancel && request.cancel->load()) {
        const CancelledBeforeStart c =
            cancelledBeforeStart(request.runId, request.kind, request.task);
        emit runFinished(c.run);
        if (c.compare)
            emit compareFinished(*c.compare);
        return;
    }
    if (!m_session) {
        emit runFailed(request.runId, tr("No model is loaded: open a model package first."));
        return;
    }
    if (!request.image || request.image->empty()) {
        emit runFailed(request.runId, tr("No image: open an image first."));
        return;
    }
    emit runStarted(request.runId);
    // Everything is caught here, at the thread boundary: an exception escaping a slot would end
    // the program, and the user should see the engine's own message instead.
    try {
        if (request.kind == RunKind::Single) {
            emit runFinished(runPass(request));
            return;
        }
        emit compareFinished(compare(request));
    } catch (const std::exception& e) {
        emit runFailed(request.runId, QString::fromStdString(e.what()));
    } catch (...) {
        emit runFailed(request.runId, tr("unknown error in the engine"));
    }
}

void EngineWorker::encodeImage(const EncodeRequest& request) {
    EncodeOutcome out;
    out.imageId = request.imageId;
    // No model yet: the window asks again once one is loaded.
    if (!m_session || !request.image || (request.cancel && request.cancel->load())) {
        out.encoding.cancelled = true;
        emit imageEncoded(out);
        return;
    }
    try {
        EncodeOptions options;
        options.prompt = request.prompt;
        options.cancel = request.cancel.get();
        options.skipPrompt = request.skipPrompt.get();
        out.encoding = m_session->encodeImage(*request.image, options);
    } catch (const std::exception& e) {
        out.error = QString::fromStdString(e.what());
    } catch (...) {
        out.error = tr("unknown error in the vision encoder");
    }
    emit imageEncoded(out);
}

// ------------------------------------------------------------------------------------------
// Folder runs: the job itself (<florence/folder_job.h>) is the one the CLI's `batch` runs; this
// only turns its reports into signals.

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
