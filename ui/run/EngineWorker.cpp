#include "run/EngineWorker.h"

#include <florence/engine.h>

#include <QElapsedTimer>

namespace florence::ui {

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) {}

EngineWorker::~EngineWorker() = default;

void EngineWorker::loadModel(const QString& packageDir, Precision precision) {
    emit modelLoading(packageDir);
    try {
        LoadOptions options;
        options.precision = precision;
        options.cancel = &m_stopLoading;
        // The old model stays in memory until the new one has loaded: a package that fails
        // to load (damaged, refused) must leave the model in use working.
        auto model = Model::load(packageDir.toStdString(), options);
        // Drop the old session first so two models are never resident longer than needed.
        m_session.reset();
        m_model = std::move(model);
        m_session = std::make_unique<Session>(m_model);
        const Manifest& m = m_model->manifest();
        ModelInfo info;
        info.dir = QString::fromStdString(m.dir.empty() ? packageDir.toStdString() : m.dir);
        info.name = QString::fromStdString(m.name);
        info.source = QString::fromStdString(m.source);
        // The precision the weights run in, not the manifest's (which is how they are stored).
        info.precisionMode = m_model->loadOptions().precision;
        info.precision = QString::fromLatin1(precisionName(info.precisionMode));
        info.parameterCount = m.parameterCount;
        info.maxPositions = m.maxPositions;
        info.loadMs = m_model->loadMs();
        info.defaults = m_model->defaultOptions();
        emit modelLoaded(info);
    } catch (const std::exception& e) {
        emit modelFailed(packageDir, QString::fromStdString(e.what()));
    } catch (...) {
        emit modelFailed(packageDir, tr("unknown error while loading the model"));
    }
}

RunOutcome EngineWorker::runPass(const RunRequest& request, const GenerationOptions& options,
                                 int pass) {
    Request req;
    req.image = *request.image;
    req.prompt = request.prompt;
    QElapsedTimer clock;
    clock.start();
    const quint64 runId = request.runId;
    Result r = m_session->generate(
        req, options,
        [&](const TokenEvent& e) {
            TokenUpdate u;
            u.runId = runId;
            u.pass = pass;
            u.step = e.step;
            u.textDelta = e.textDelta;
            u.rewound = e.rewound;
            u.text = e.text;
            u.stepMs = e.stepMs;
            u.elapsedMs = static_cast<double>(clock.nsecsElapsed()) / 1e6;
            u.preprocessMs = e.preprocessMs;
            u.visionMs = e.visionMs;
            u.textEncoderMs = e.textEncoderMs;
            emit tokenReady(u);
            return true;
        },
        request.cancel.get());
    RunOutcome out;
    out.runId = runId;
    out.pass = pass;
    out.task = request.task;
    out.text = r.text;
    out.generatedIds = r.generatedIds;
    out.cancelled = r.cancelled;
    out.useCache = options.useCache;
    out.numBeams = options.numBeams;
    out.generatedTokens = r.generatedIds.empty() ? 0 : static_cast<int>(r.generatedIds.size()) - 1;
    out.imageWidth = request.image->width;
    out.imageHeight = request.image->height;
    out.timings = r.timings;
    return out;
}

void EngineWorker::run(const RunRequest& request) {
    // A run cancelled while still queued (the user pressed Cancel, or started another run) is
    // reported as cancelled without touching the model.
    if (request.cancel && request.cancel->load()) {
        RunOutcome out;
        out.runId = request.runId;
        out.task = request.task;
        out.cancelled = true;
        emit runFinished(out);
        if (request.kind == RunKind::Compare) {
            // The window ends a comparison on compareFinished only.
            CompareOutcome cmp;
            cmp.runId = request.runId;
            cmp.cached = out;
            cmp.uncached = out;
            cmp.uncached.pass = 1;
            cmp.cancelled = true;
            emit compareFinished(cmp);
        }
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
            emit runFinished(runPass(request, request.options, 0));
            return;
        }
        // Comparison: the features are recomputed in both passes so the two totals measure the
        // same work and differ only by the cache.
        GenerationOptions cached = request.options;
        cached.useCache = true;
        cached.reuseFeatures = false;
        GenerationOptions uncached = cached;
        uncached.useCache = false;
        CompareOutcome cmp;
        cmp.runId = request.runId;
        cmp.cached = runPass(request, cached, 0);
        emit runFinished(cmp.cached);
        if (!cmp.cached.cancelled) {
            cmp.uncached = runPass(request, uncached, 1);
            emit runFinished(cmp.uncached);
        } else {
            cmp.uncached.runId = request.runId;
            cmp.uncached.pass = 1;
            cmp.uncached.cancelled = true;
        }
        cmp.cancelled = cmp.cached.cancelled || cmp.uncached.cancelled;
        cmp.identical = !cmp.cancelled && cmp.cached.generatedIds == cmp.uncached.generatedIds;
        emit compareFinished(cmp);
    } catch (const std::exception& e) {
        emit runFailed(request.runId, QString::fromStdString(e.what()));
    } catch (...) {
        emit runFailed(request.runId, tr("unknown error in the engine"));
    }
}

} // namespace florence::ui
