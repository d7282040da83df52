#include "Bench.h"

#include "BenchConfig.h"
#include "BenchMeasure.h"
#include "BenchReport.h"

#include <QJsonDocument>

#include <iostream>

namespace florence::cli {

int runBench(int argc, char** argv) {
    for (int i = 2; i < argc; ++i)
        if (std::string(argv[i]) == "--help") {
            std::cout << benchUsage();
            return 0;
        }
    const BenchConfig config = parseBenchArgs(argc, argv);
    const BenchReport report = measure(config);
    if (config.json)
        std::cout << QJsonDocument(toJson(report)).toJson(QJsonDocument::Indented).toStdString();
    else
        printTable(report);
    return 0;
}

} // namespace florence::cli
