// For harnesses of functions that read a path: the input as an anonymous in-memory regular
// file, named by /proc/self/fd/N.
//
//   florence::fuzz::MemoryFile file(data, size);
//   florence::SafetensorsFile::open(file.path());
#pragma once

#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace florence::fuzz {

class MemoryFile {
public:
    MemoryFile(const uint8_t* data, size_t size) : m_fd(::memfd_create("fuzz", MFD_CLOEXEC)) {
        size_t done = 0;
        while (m_fd >= 0 && done < size) {
            const ssize_t n = ::write(m_fd, data + done, size - done);
            if (n <= 0)
                break;
            done += size_t(n);
        }
    }
    ~MemoryFile() {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;
    std::string path() const { return "/proc/self/fd/" + std::to_string(m_fd); }

private:
    int m_fd;
};

} // namespace florence::fuzz
