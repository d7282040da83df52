// An import as one job: the exporter run on a thread of its own, with progress, Cancel and a
// result, which File › Import… and the CLI's `import` only observe (as qBittorrent's
// TorrentCreator). The job owns its thread: destroying it cancels the exporter and waits.
//
//   florence::ImportJobParams params;
//   params.hfDir = "/home/me/Florence-2-base";
//   params.outDir = florence::userModelsDir() + "/Florence-2-base";
//   auto* job = new florence::ImportJob(params, dialog);          // owned by the dialog
//   connect(job, &florence::ImportJob::progressed, dialog, &Dialog::showProgress);
//   connect(job, &florence::ImportJob::finished, dialog, &Dialog::onImported);
//   job->start();                                                 // job->cancel() stops it
//
//   // Or, blocking, in the calling thread (the CLI):
//   const florence::ImportJobResult r = florence::ImportJob(params).run(&ctrlC, printProgress);
#pragma once

#include <florence/importer.h>

#include <QMetaType>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <string>

class QThread;

namespace florence {

struct ImportJobResult {
    bool ok = false;
    bool cancelled = false; // stopped by cancel(); the half-written package was removed
    std::string error;      // the exporter's own message when it failed
    std::string packageDir; // the package written (params' outDir) when ok
};

class ImportJob : public QObject {
    Q_OBJECT

public:
    explicit ImportJob(ImportJobParams params, QObject* parent = nullptr);
    ~ImportJob() override; // cancels a running import and waits for its thread

    const ImportJobParams& params() const { return m_params; }
    // From start() until finished() is emitted.
    bool isRunning() const { return m_running; }

    // Runs the exporter on the job's own thread; progressed() and finished() arrive on the
    // thread this object lives in. Does nothing while running.
    void start();
    // Stops the exporter (it removes what it wrote); finished() reports cancelled.
    void cancel();

    // The same import, blocking, in the calling thread; `cancel` (e.g. set by Ctrl+C) stops it.
    ImportJobResult run(const std::atomic<bool>* cancel = nullptr,
                        const ImportProgress& progress = {}) const;

signals:
    void progressed(int percent, const QString& message);
    void finished(const florence::ImportJobResult& result);

private:
    ImportJobParams m_params;
    std::atomic<bool> m_cancel{false};
    bool m_running = false;
    std::unique_ptr<QThread> m_thread; // last: stopped before the flag it reads goes
};

} // namespace florence

Q_DECLARE_METATYPE(florence::ImportJobResult)
