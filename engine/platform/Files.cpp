#include <florence/files.h>

#include <florence/error.h>

#include "platform/RegularFile.h"

#include <QDir>
#include <QFileInfo>
#include <QSaveFile>

#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace florence {

bool commitSaveFile(QSaveFile& file, QString* error) {
    // QFileDevice buffers small writes; a write that fails when the buffer is flushed inside
    // commit() is not remembered by QSaveFile, which then renames the cut file over the target.
    // Flushing first turns that failure into one we see. fsync catches the file systems that
    // report a full disk only when the data is written out.
    errno = 0;
    bool ok = file.isOpen() && file.error() == QFileDevice::NoError && file.flush();
    const int flushErrno = errno;
    // QFileDevice's message for a failed flush is "Unknown error"; errno says "No space left".
    QString why = !ok && flushErrno != 0 ? QString::fromLocal8Bit(std::strerror(flushErrno))
                                         : file.errorString();
    if (ok && file.handle() >= 0 && ::fsync(file.handle()) != 0 && errno != EINVAL &&
        errno != EROFS) {
        ok = false;
        why = QString::fromLocal8Bit(std::strerror(errno));
    }
    if (!ok) {
        file.cancelWriting();
        file.commit(); // discards the temporary file
        if (error)
            *error = why;
        return false;
    }
    if (!file.commit()) {
        if (error)
            *error = file.errorString();
        return false;
    }
    return true;
}

void writeFileAtomically(const std::string& path, const QByteArray& bytes) {
    if (const std::string why = whyNotARegularFile(path); !why.empty())
        throw Error(why + "; nothing was written to it");
    const QString qpath = QString::fromStdString(path);
    if (!QDir().mkpath(QFileInfo(qpath).path()))
        throw Error("cannot make the folder of " + path);
    // QSaveFile writes beside the target and renames on commit; a file never committed (a
    // failed write, a cancelled run) is removed, so readers see the old file or the new one.
    QSaveFile f(qpath);
    QString why;
    if (!f.open(QIODevice::WriteOnly))
        why = f.errorString();
    else if (f.write(bytes) != bytes.size())
        why = f.errorString();
    if (!why.isEmpty()) {
        f.cancelWriting();
        throw Error("cannot write " + path + ": " + why.toStdString());
    }
    if (!commitSaveFile(f, &why))
        throw Error("cannot write " + path + ": " + why.toStdString());
}

QByteArray readSmallFile(const std::string& path, int64_t maxBytes) {
    std::string error;
    QByteArray bytes = detail::readRegularFile(path, maxBytes, &error);
    if (!error.empty())
        throw Error(error);
    return bytes;
}

std::string whyNotAFileDestination(const std::string& path) {
    const QFileInfo info(QString::fromStdString(path));
    if (info.isDir())
        return path + ": is a folder, not a file";
    // What writeFileAtomically refuses when the run is over: a FIFO, a device (or a link to
    // one), a link loop.
    if (const std::string why = whyNotARegularFile(path); !why.empty())
        return why;
    if (!info.absoluteDir().exists())
        return path + ": the folder " + info.absolutePath().toStdString() + " does not exist";
    // The file is written beside its name and renamed over it: the folder must take new files.
    if (const std::string why = whyNotWritableFolder(info.absolutePath().toStdString());
        !why.empty())
        return "cannot write " + path + ": the folder " + why;
    return {};
}

std::string whyNotWritableFolder(const std::string& path) {
    QFileInfo at(QDir::cleanPath(QFileInfo(QString::fromStdString(path)).absoluteFilePath()));
    while (!at.exists() && !at.isSymLink() && !at.isRoot())
        at = QFileInfo(at.absolutePath()); // the folder it would be made in
    const std::string name = at.absoluteFilePath().toStdString();
    if (!at.isDir())
        return name + " is not a folder";
    errno = 0;
    if (::access(at.absoluteFilePath().toLocal8Bit().constData(), W_OK | X_OK) != 0)
        return name + ": " + std::strerror(errno != 0 ? errno : EACCES);
    return {};
}

std::string whyNotARegularFile(const std::string& path, int64_t maxBytes) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return errno == ENOENT || errno == ENOTDIR ? std::string()
                                                   : detail::whyNotOpened(path, errno);
    if (S_ISDIR(st.st_mode))
        return path + " is a folder, not a file";
    if (S_ISFIFO(st.st_mode))
        return path + " is a FIFO (named pipe), not a file";
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
        return path + " is a device, not a file";
    if (!S_ISREG(st.st_mode))
        return path + " is not a regular file";
    if (maxBytes >= 0 && st.st_size > maxBytes)
        return path + " is " + std::to_string(st.st_size) + " bytes, more than the " +
               std::to_string(maxBytes) + " this program reads";
    return {};
}

} // namespace florence
