#include <florence/importer.h>

#include <florence/checkpoints.h>
#include <florence/files.h>
#include <florence/paths.h>

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QStringList>

namespace florence {

namespace {

// Only a folder the exporter announced and named as its own (".export-…") is removed.
void removeExportTemp(const QString& path) {
    if (path.isEmpty() || !QFileInfo(path).fileName().startsWith(".export-"))
        return;
    const QFileInfo info(path);
    if (info.isDir() && !info.isSymLink())
        QDir(path).removeRecursively();
}

} // namespace

void runImport(const ImportJobParams& job, const ImportProgress& progress,
               const std::atomic<bool>* cancel) {
    if (job.outDir.empty())
        throw ImportError("no output folder given for the imported model");
    if (job.hfDir.empty() == job.randomInit.empty())
        throw ImportError("give either a Hugging Face folder or a random-init size");
    // Before minutes of scripting and checking: the package is written beside --out, then
    // renamed to it.
    const std::string besideOut =
        QFileInfo(QString::fromStdString(job.outDir)).absolutePath().toStdString();
    if (const std::string why = whyNotWritableFolder(besideOut); !why.empty())
        throw ImportError("cannot write the package to " + job.outDir + ": " + why);
    // A hub name ("microsoft/Florence-2-base") is its snapshot in the Hugging Face cache.
    const std::string hfDir = job.hfDir.empty() ? std::string() : resolveCheckpoint(job.hfDir);
    if (!hfDir.empty() && !QFileInfo(QString::fromStdString(hfDir)).isDir())
        throw ImportError(hfDir + " is not a folder");
    const std::string script = exporterScript();
    if (script.empty())
        throw ImportError(
            "the exporter (tools/florence2_export.py) is not installed next to this program");
    const QString python = QString::fromStdString(pythonInterpreter());
    if (!QFileInfo(python).isExecutable())
        throw ImportError(
            python.toStdString() +
            " is missing; importing needs Python with torch (apt install python3-torch)");

    QStringList args{QString::fromStdString(script)};
    if (!hfDir.empty())
        args << "--hf" << QString::fromStdString(hfDir);
    else
        args << "--random-init" << QString::fromStdString(job.randomInit) << "--seed"
             << QString::number(job.seed);
    args << "--out" << QString::fromStdString(job.outDir);
    const std::string ops = opsLibrary();
    if (!ops.empty())
        args << "--ops-library" << QString::fromStdString(ops);

    QProcess proc;
    proc.setProcessChannelMode(QProcess::SeparateChannels);
    proc.start(python, args);
    if (!proc.waitForStarted(10000))
        throw ImportError("cannot start " + python.toStdString() + ": " +
                          proc.errorString().toStdString());
    QString lastError;
    QString tmpDir; // the exporter's temporary package folder, announced on stderr
    QByteArray pending;
    auto drain = [&] {
        pending += proc.readAllStandardError();
        int nl;
        while ((nl = pending.indexOf('\n')) >= 0) {
            const QString line = QString::fromUtf8(pending.left(nl)).trimmed();
            pending.remove(0, nl + 1);
            if (line.startsWith("progress ")) {
                const int space = line.indexOf(' ', 9);
                const int percent = line.mid(9, space - 9).toInt();
                if (progress)
                    progress(percent, line.mid(space + 1).toStdString());
            } else if (line.startsWith("tmpdir ")) {
                tmpDir = line.mid(7);
            } else if (!line.isEmpty()) {
                lastError = line;
            }
        }
    };
    while (!proc.waitForFinished(100)) {
        drain();
        if (cancel && cancel->load()) {
            // SIGTERM lets the exporter remove its temporary folder; if it does not end in
            // time it is killed, and the folder is removed here instead.
            proc.terminate();
            if (!proc.waitForFinished(5000))
                proc.kill();
            proc.waitForFinished(-1);
            drain();
            removeExportTemp(tmpDir);
            throw ImportError("import cancelled");
        }
        if (proc.state() == QProcess::NotRunning)
            break;
    }
    drain();
    if (proc.exitStatus() != QProcess::NormalExit || proc.exitCode() != 0) {
        QString msg = lastError;
        msg.remove(QRegularExpression("^florence2_export: error: "));
        throw ImportError(msg.isEmpty() ? "the exporter failed" : msg.toStdString());
    }
}

} // namespace florence
