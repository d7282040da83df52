#include "platform/RegularFile.h"

#include <QCryptographicHash>

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
        *error = errno == ENOENT ? path + ": the file does not exist"
                                 : path + ": cannot be read (" + std::strerror(errno) + ")";
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
