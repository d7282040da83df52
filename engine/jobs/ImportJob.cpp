#include <florence/import_job.h>

#include <QThread>

namespace florence {

ImportJob::ImportJob(ImportJobParams params, QObject* parent)
    : QObject(parent), m_params(std::move(params)) {
    qRegisterMetaType<ImportJobResult>();
}

ImportJob::~ImportJob() {
    // The exporter is a child process: the flag makes runImport stop it and return, so this
    // does not wait for a whole export.
    m_cancel.store(true);
    if (m_thread)
        m_thread->wait();
}

void ImportJob::start() {
    if (m_running)
        return;
    m_running = true;
    m_cancel.store(false);
    // The thread only runs the exporter; its reports come back as queued calls on this object,
    // which Qt drops once the object is gone.
    m_thread.reset(QThread::create([this] {
        const ImportJobResult result = run(&m_cancel, [this](int percent,
                                                             const std::string& message) {
            const QString m = QString::fromStdString(message);
            QMetaObject::invokeMethod(
                this, [this, percent, m] { emit progressed(percent, m); }, Qt::QueuedConnection);
        });
        QMetaObject::invokeMethod(
            this,
            [this, result] {
                m_thread->wait(); // the function has returned: this only joins
                m_running = false;
                emit finished(result);
            },
            Qt::QueuedConnection);
    }));
    m_thread->setObjectName(QStringLiteral("import"));
    m_thread->start();
}

void ImportJob::cancel() {
    m_cancel.store(true);
}

ImportJobResult ImportJob::run(const std::atomic<bool>* cancel,
                               const ImportProgress& progress) const {
    ImportJobResult result;
    try {
        runImport(m_params, progress, cancel);
        result.ok = true;
        result.packageDir = m_params.outDir;
    } catch (const std::exception& e) {
        result.error = e.what();
        result.cancelled = cancel && cancel->load();
    }
    return result;
}

} // namespace florence
