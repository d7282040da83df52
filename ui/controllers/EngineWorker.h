// The one object that touches the engine. It lives on the window's engine thread; requests come
// in as queued slot calls and everything comes out as signals carrying plain values, so the GUI
// thread never waits for the model.
//
//   auto worker = std::make_unique<EngineWorker>();
//   worker->moveToThread(thread.get());
//   connect(worker.get(), &EngineWorker::tokenReady, window, &MainWindow::onToken);
//   QMetaObject::invokeMethod(worker.get(), [w = worker.get(), r] { w->run(r); },
//                             Qt::QueuedConnection);
//
// Runs never overlap: slots execute one after another on the engine thread, and the window
// cancels the running request (through its atomic flag) before queueing the next one.
#pragma once

#include "controllers/FolderTypes.h"
#include "controllers/WorkerTypes.h"

#include <QObject>

#include <atomic>
#include <ctime>
#include <memory>
#include <optional>

namespace florence {
class Model;
class Session;
} // namespace florence

namespace florence::ui {

class EngineWorker : public QObject {
    Q_OBJECT

public:
    explicit EngineWorker(QObject* parent = nullptr);
    ~EngineWorker() override;

    // Callable from any thread (the window, while closing): a model load in progress stops at
    // its next file or megabyte hashed, and no later load starts.
    void stopLoading() { m_stopLoading.store(true); }

public slots:
    // Loads a package and replaces the current model. The current model is released once the
    // package has passed its checks, before its modules are read, so two models are never in
    // memory at once: a package refused by the checks leaves the current model in use; one that
    // fails later (or a cancelled load) leaves none, and modelUnloaded() says so.
    // Reloading the same package with another precision takes the same path. With
    // `automatic` the precision is the one automaticPrecision() picks for this CPU and package
    // (measured once, before the current model is released; precisionMeasuring() says so).
    void loadModel(const QString& packageDir,
                   florence::Precision precision = florence::Precision::Float32,
                   bool automatic = false);
    // Runs a single request or a cached/uncached comparison.
    void run(const florence::ui::RunRequest& request);
    // Answers a task on a folder of images, one at a time, writing each image's sidecars as it
    // completes (the job the CLI's `batch` runs, <florence/folder_job.h>); a broken image is
    // reported and the run goes on.
    void processFolder(const florence::ui::FolderRequest& request);
    // Runs the vision encoder on an image ahead of Run; the session keeps the features, so a
    // run on that image (queued behind this, so it waits for it) reuses them.
    void encodeImage(const florence::ui::EncodeRequest& request);

signals:
    void modelLoading(const QString& packageDir);
    // How far the load of packageDir is: `stage` a florence::LoadStage, `fraction` of the whole
    // load (0..1, 1 once it is loaded), at most about once per percent.
    void modelLoadProgress(const QString& packageDir, int stage, double fraction);
    // Automatic precision is measuring one mode ("measuring int8") before the load.
    void precisionMeasuring(const QString& stage);
    void modelLoaded(const florence::ui::ModelInfo& info);
    // The previous model was released to make room for the one being loaded.
    void modelReleased();
    // Sent before modelFailed when the failed load had released the previous model.
    void modelUnloaded();
    void modelFailed(const QString& packageDir, const QString& message);
    void runStarted(quint64 runId);
    void tokenReady(const florence::ui::TokenUpdate& update);
    void runFinished(const florence::ui::RunOutcome& outcome);
    // Only for RunKind::Compare: passes done of all (warm-up included).
    void compareProgress(quint64 runId, int done, int total);
    // Only for RunKind::Compare: tokens so far of a repeat that does not stream its tokens
    // (pass 0 cached, 1 uncached), at most about ten times a second.
    void compareTokens(quint64 runId, int pass, int tokens);
    // Only for RunKind::Compare, after the two runFinished signals.
    void compareFinished(const florence::ui::CompareOutcome& outcome);
    void runFailed(quint64 runId, const QString& message);
    // processFolder: the image about to be answered, as a small picture.
    void folderImageStarted(const QString& path, const QImage& thumbnail);
    void folderProgress(const florence::ui::FolderProgress& progress);
    void folderFinished(const florence::ui::FolderOutcome& outcome);
    void imageEncoded(const florence::ui::EncodeOutcome& outcome);

private:
    std::optional<clockid_t> m_guiClock; // the GUI thread's processor-time clock

    void install(std::shared_ptr<const Model> model, const QString& packageDir,
                 const PrecisionChoice* choice = nullptr);
    // A finished pass of `request` run with `options`, its answer parsed.
    RunOutcome outcomeOf(const RunRequest& request, const GenerationOptions& options, int pass,
                         Result result) const;
    // A single run, every token reported (tokenReady).
    RunOutcome runPass(const RunRequest& request);
    // The same request with and without the cache (florence::CompareJob), observed.
    CompareOutcome compare(const RunRequest& request);

    std::atomic<bool> m_stopLoading{false};
    std::shared_ptr<const Model> m_model;
    std::unique_ptr<Session> m_session;
};

} // namespace florence::ui
