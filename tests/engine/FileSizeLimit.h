#pragma once
// A full disk in a test, without one: while a FileSizeLimit is alive, no file this process
// writes can grow past `bytes`; writes beyond fail with EFBIG, as they would with ENOSPC.
// SIGXFSZ is ignored so the write returns an error instead of ending the process.
//
//     {
//         const florence::test::FileSizeLimit limit(64);
//         ...   // save something larger than 64 bytes: it must fail and keep the old file
//     }

#include <csignal>
#include <sys/resource.h>

namespace florence::test {

class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        getrlimit(RLIMIT_FSIZE, &m_old);
        m_oldHandler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit limit = m_old;
        limit.rlim_cur = bytes;
        setrlimit(RLIMIT_FSIZE, &limit);
    }
    ~FileSizeLimit() {
        setrlimit(RLIMIT_FSIZE, &m_old);
        std::signal(SIGXFSZ, m_oldHandler);
    }
    FileSizeLimit(const FileSizeLimit&) = delete;
    FileSizeLimit& operator=(const FileSizeLimit&) = delete;

private:
    rlimit m_old{};
    void (*m_oldHandler)(int) = nullptr;
};

} // namespace florence::test
