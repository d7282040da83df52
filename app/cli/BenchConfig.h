// What `florence-studio-cli bench` measures, from its arguments, and the progress bar it shows
// while measuring.
//
//   const BenchConfig c = parseBenchArgs(argc, argv); // exits with a message on a bad argument
//   Progress progress(c.progressSteps());
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace florence::cli {

struct BenchConfig {
    std::string size;
    std::vector<int> lengths;
    int threads = 0;
    int busy = 0;
    std::string image;
    std::string package;
    bool python = true;
    bool uncached = true;
    bool bf16 = true;
    bool int8 = true;
    bool batching = true;
    bool json = false;

    int maxLength() const { return *std::max_element(lengths.begin(), lengths.end()); }
    int progressSteps() const {
        return 4 + int(lengths.size()) * (uncached ? 2 : 1) + (python ? 2 : 0) + (bf16 ? 3 : 0) +
               (int8 ? 3 : 0) + (batching ? 2 : 0);
    }
};

// The text of `bench --help`.
const char* benchUsage();

BenchConfig parseBenchArgs(int argc, char** argv);

// A progress bar on the terminal; silent when stderr is not one.
class Progress {
public:
    explicit Progress(int total) : m_total(total), m_tty(isatty(2)) {}
    void step(const std::string& what) {
        ++m_done;
        if (!m_tty)
            return;
        const int width = 30;
        const int filled = m_total ? width * m_done / m_total : width;
        std::string bar(filled, '#');
        bar.resize(width, ' ');
        std::fprintf(stderr, "\r[%s] %3d%% %-40.40s", bar.c_str(),
                     100 * m_done / std::max(1, m_total), what.c_str());
        std::fflush(stderr);
    }
    void done() {
        if (m_tty)
            std::fprintf(stderr, "\r%80s\r", "");
    }

private:
    int m_total;
    int m_done = 0;
    bool m_tty;
};

} // namespace florence::cli
