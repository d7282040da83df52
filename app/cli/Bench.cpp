#include "Bench.h"

#include "BenchArgs.h"
#include "BenchReport.h"
#include "Common.h"

#include <QJsonDocument>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

namespace florence::cli {

namespace {

// A progress bar on the terminal, redrawn at each of the job's measurements; silent when
// stderr is not one.
class ProgressBar {
public:
    ProgressBar() : m_tty(isatty(2)) {}
    void show(int done, int total, const std::string& what) {
        if (!m_tty)
            return;
        const int width = 30;
        const int filled = total ? width * done / total : width;
        std::string bar(filled, '#');
        bar.resize(width, ' ');
        std::fprintf(stderr, "\r[%s] %3d%% %-40.40s", bar.c_str(), 100 * done / std::max(1, total),
                     what.c_str());
        std::fflush(stderr);
    }
    void clear() {
        if (m_tty)
            std::fprintf(stderr, "\r%80s\r", "");
    }

private:
    bool m_tty;
};

} // namespace

int runBench(int argc, char** argv) {
    for (int i = 2; i < argc; ++i)
        if (std::string(argv[i]) == "--help") {
            std::cout << benchUsage();
            return 0;
        }
    const BenchArgs args = parseBenchArgs(argc, argv);
    installCancelHandler();
    ProgressBar bar;
    florence::BenchHooks hooks;
    hooks.cancel = &g_cancel; // Ctrl+C stops at the next measurement
    hooks.onProgress = [&](int done, int total, const std::string& what) {
        bar.show(done, total, what);
    };
    florence::BenchResult result;
    try {
        result = florence::runBenchJob(args.params, hooks);
    } catch (...) {
        bar.clear(); // the message goes on a line of its own
        throw;
    }
    bar.clear();
    if (args.json)
        std::cout << QJsonDocument(toJson(result)).toJson(QJsonDocument::Indented).toStdString();
    else
        printTable(result);
    return 0;
}

} // namespace florence::cli
