#include "package/CancellableFile.h"

#include "platform/RegularFile.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <unistd.h>
#include <utility>

namespace florence::detail {

namespace {
// A slice takes a few milliseconds to read from a page cache or a disk, so a cancel is seen
// well within the second the window allows for closing.
constexpr size_t kSlice = 4u << 20;
} // namespace

CancellableFile::CancellableFile(const std::string& path, const std::atomic<bool>* cancel,
                                 std::function<void(size_t bytes)> onRead)
    : m_cancel(cancel), m_onRead(std::move(onRead)) {
    std::string error;
    int64_t size = 0;
    m_fd = openRegularFile(path, &size, &error);
    if (m_fd < 0)
        throw std::runtime_error(error);
    m_size = static_cast<size_t>(size);
}

CancellableFile::~CancellableFile() {
    if (m_fd >= 0)
        ::close(m_fd);
}

size_t CancellableFile::read(uint64_t pos, void* buf, size_t n, const char*) const {
    if (pos >= m_size)
        return 0;
    n = std::min<uint64_t>(n, m_size - pos);
    size_t done = 0;
    while (done < n) {
        if (m_cancel && m_cancel->load(std::memory_order_relaxed))
            break;
        const size_t step = std::min(n - done, kSlice);
        const ssize_t got =
            ::pread(m_fd, static_cast<char*>(buf) + done, step, static_cast<off_t>(pos + done));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        done += static_cast<size_t>(got);
        if (m_onRead) {
            // The archive's directory is read more than once: count up to the size only.
            m_read = std::min(m_size, m_read + static_cast<size_t>(got));
            m_onRead(m_read);
        }
    }
    return done;
}

} // namespace florence::detail
