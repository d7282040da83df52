#include "platform/RegularFile.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace florence::detail {

namespace {

const char* kindOf(mode_t mode) {
    if (S_ISDIR(mode))
        return "is a folder, not a file";
    if (S_ISFIFO(mode))
        return "is a FIFO (named pipe), not a file";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "is a device, not a file";
    if (S_ISSOCK(mode))
        return "is a socket, not a file";
    return "is not a regular file";
}

} // namespace

std::string whyNotOpened(const std::string& path, int err) {
    switch (err) {
    case ENOENT: {
        // A link whose target is gone says "does not exist" of a name the user can see. Its
        // target is relative to the link's folder; a target that is itself a link leads on.
        char stored[4096];
        const ssize_t n = ::readlink(path.c_str(), stored, sizeof stored - 1);
        if (n > 0) {
            const QString target = QString::fromLocal8Bit(stored, qsizetype(n));
            const QString link = QString::fromLocal8Bit(path.c_str());
            const std::string resolved =
                QDir::cleanPath(QFileInfo(link).dir().filePath(target)).toLocal8Bit().toStdString();
            struct stat st {};
            if (::lstat(resolved.c_str(), &st) == 0)
                return path + " is a symbolic link that leads, through " + resolved +
                       ", to a file that does not exist";
            return path + " is a symbolic link to " + resolved + ", which does not exist";
        }
        return path + ": the file does not exist";
    }
    case ELOOP:
        // The exporter's words for the same (engine/exporter/florence2/files.py).
        return path + " is a link that leads back to itself (a link loop), or through too many "
                      "links";
    case EACCES:
    case EPERM:
        return path + ": permission denied (the file, or a folder on the way to it, is closed to "
                      "you)";
    case ENAMETOOLONG:
        return path + ": the name is too long for this system";
    case ENOTDIR:
        return path + ": a part of the path before the file's name is not a folder";
    default:
        return path + ": cannot be read (" + std::strerror(err) + ")";
    }
}

namespace {

// Closes the descriptor on every path out.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0)
            ::close(fd);
    }
};

} // namespace

int openRegularFile(const std::string& path, int64_t* size, std::string* error) {
    // What is there is looked at before it is opened: opening some devices does something (a
    // watchdog arms), and a folder run passes whatever is named like an image. The check on the
    // open descriptor below stays, for a file swapped in between.
    struct stat before {};
    if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode) &&
        !S_ISDIR(before.st_mode)) {
        *error = path + " " + kindOf(before.st_mode);
        return -1;
    }
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        *error = whyNotOpened(path, errno);
        return -1;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *error = path + " " + (S_ISREG(st.st_mode) ? "cannot be examined" : kindOf(st.st_mode));
        ::close(fd);
        return -1;
    }
    // Regular files never block; clearing the flag keeps reads ordinary.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0)
        ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *size = static_cast<int64_t>(st.st_size);
    return fd;
}

QByteArray readRegularFile(const std::string& path, int64_t maxBytes, std::string* error) {
    int64_t size = 0;
    Fd f{openRegularFile(path, &size, error)};
    if (f.fd < 0)
        return {};
    if (size > maxBytes) {
        *error = path + " is " + std::to_string(size) + " bytes, more than the " +
                 std::to_string(maxBytes) + " this program reads";
        return {};
    }
    QByteArray bytes;
    bytes.resize(static_cast<qsizetype>(size));
    int64_t done = 0;
    while (done < size) {
        const ssize_t n = ::read(f.fd, bytes.data() + done, static_cast<size_t>(size - done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *error = path + ": cannot be read (" + std::strerror(errno) + ")";
            return {};
        }
        if (n == 0)
            break; // shrank while reading
        done += n;
    }
    bytes.resize(static_cast<qsizetype>(done));
    return bytes;
}

std::string sha256RegularFile(const std::string& path, int64_t size,
                              const std::atomic<bool>* cancel, std::string* error,
                              const std::function<void(int64_t bytes)>& onBytes) {
    int64_t actual = 0;
    Fd f{openRegularFile(path, &actual, error)};
    if (f.fd < 0)
        return {};
    if (actual < size) {
        *error = path + " has " + std::to_string(actual) + " bytes, fewer than the " +
                 std::to_string(size) + " expected";
        return {};
    }
    QCryptographicHash hash(QCryptographicHash::Sha256);
    std::vector<char> buffer(1 << 20);
    int64_t left = size;
    while (left > 0) {
        if (cancel && cancel->load(std::memory_order_relaxed)) {
            *error = "cancelled";
            return {};
        }
        const size_t want = static_cast<size_t>(std::min<int64_t>(left, buffer.size()));
        const ssize_t n = ::read(f.fd, buffer.data(), want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            *error = path + ": cannot be read to its end (" +
                     (n < 0 ? std::string(std::strerror(errno)) : std::string("file shrank")) + ")";
            return {};
        }
        hash.addData(QByteArrayView(buffer.data(), n));
        left -= n;
        if (onBytes)
            onBytes(size - left);
    }
    return hash.result().toHex().toStdString();
}

} // namespace florence::detail
