#include "jobs/BenchPython.h"

#include <florence/error.h>
#include <florence/machine.h>
#include <florence/paths.h>
#include <florence/process.h>
#include <florence/stats.h>

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>

#include <algorithm>

namespace florence::detail {

namespace {

// What to do when the baseline cannot run: everything else in the bench needs no Python.
const char* kPythonNeeds =
    "the Python eager baseline needs python3 with torch and PIL (apt install "
    "python3-torch python3-pil); --no-python skips it";

// Why the baseline's Python failed, from the last line it printed.
std::string pythonFailure(const QString& stderrText) {
    const QString last = stderrText.trimmed().split('\n').last();
    static const QRegularExpression missing(QStringLiteral("No module named '([^'.]+)"));
    const QRegularExpressionMatch m = missing.match(last);
    if (m.hasMatch())
        return pythonInterpreter() + " has no module " + m.captured(1).toStdString() + ": " +
               kPythonNeeds;
    return last.isEmpty() ? std::string("python baseline failed to run") : last.toStdString();
}

// Waits an hour at most for the baseline; stops it and the job when `cancel` is set.
bool waitForBaseline(QProcess& proc, const std::atomic<bool>* cancel) {
    const auto start = Clock::now();
    while (!proc.waitForFinished(100)) {
        if (cancel && cancel->load()) {
            proc.kill();
            proc.waitForFinished(-1);
            throw EngineError("the benchmark was cancelled");
        }
        if (proc.state() == QProcess::NotRunning)
            break;
        if (msSince(start) > 3600 * 1000.0)
            return false;
    }
    return proc.exitStatus() == QProcess::NormalExit;
}

QJsonObject runPython(const std::string& package, const std::string& image,
                      const std::vector<int64_t>& ids, const std::string& lengths, int threads,
                      const QProcessEnvironment& env, const std::atomic<bool>* cancel,
                      std::string& error) {
    const std::string script = exporterScript();
    if (script.empty()) {
        error = "exporter tools not found";
        return {};
    }
    QStringList idList;
    for (int64_t id : ids)
        idList << QString::number(id);
    QStringList args{"-m", "florence2.bench_eager", "--package", QString::fromStdString(package)};
    args << "--image" << QString::fromStdString(image) << "--lengths"
         << QString::fromStdString(lengths) << "--threads" << QString::number(threads)
         << "--prompt-ids" << idList.join(",");
    if (!opsLibrary().empty()) // the package's modules call its operators
        args << "--ops-library" << QString::fromStdString(opsLibrary());
    QProcess proc;
    proc.setProcessEnvironment(env);
    proc.setWorkingDirectory(QFileInfo(QString::fromStdString(script)).absolutePath());
    proc.start(QString::fromStdString(pythonInterpreter()), args);
    if (!proc.waitForStarted(10000)) {
        error = "cannot start " + pythonInterpreter() + ": " + kPythonNeeds;
        return {};
    }
    if (!waitForBaseline(proc, cancel) || proc.exitCode() != 0) {
        error = pythonFailure(QString::fromUtf8(proc.readAllStandardError()));
        return {};
    }
    return QJsonDocument::fromJson(proc.readAllStandardOutput()).object();
}

// The environments the Python baseline runs in: the one this program was started with (its
// BLAS settings, which may be slow ones: a preset OPENBLAS_CORETYPE=Haswell runs OpenBLAS's
// AVX2 kernels on an AVX-512 CPU), and, on a CPU with AVX-512, the same with OpenBLAS's
// SkylakeX kernels, which run the Python vision encoder ~1.5x faster here. The faster one is the
// baseline the ratios use, so they are not flattered by a slow BLAS setting.
std::vector<std::pair<std::string, QProcessEnvironment>> pythonEnvironments() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    // What prepareProcess set itself (florence/process.h), the baseline runs without.
    for (const std::string& name : variablesSetByPrepareProcess())
        env.remove(QString::fromStdString(name));
    const QString preset = env.value("OPENBLAS_CORETYPE");
    std::vector<std::pair<std::string, QProcessEnvironment>> out;
    out.emplace_back(preset.isEmpty()
                         ? "environment (OpenBLAS's own choice of kernels)"
                         : "environment (OPENBLAS_CORETYPE=" + preset.toStdString() + ")",
                     env);
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl");
    if (avx512 && preset.compare("SkylakeX", Qt::CaseInsensitive) != 0) {
        QProcessEnvironment skx = env;
        skx.insert("OPENBLAS_CORETYPE", "SkylakeX");
        out.emplace_back("OPENBLAS_CORETYPE=SkylakeX", skx);
    }
    return out;
}

} // namespace

// The Python baseline, same threads, once per BLAS setting (pythonEnvironments).
void measurePython(const BenchParams& c, const std::vector<int64_t>& promptIds, BenchResult& report,
                   const std::function<void(const std::string&)>& step,
                   const std::atomic<bool>* cancel) {
    std::string lens;
    for (int len : c.lengths)
        lens += (lens.empty() ? "" : ",") + std::to_string(len);
    const int threads = c.threads > 0 ? c.threads : ::florence::threads();
    for (const auto& [blas, env] : pythonEnvironments()) {
        std::string err;
        const QJsonObject py =
            runPython(c.package, c.image, promptIds, lens, threads, env, cancel, err);
        step("python eager baseline, " + blas);
        if (py.isEmpty()) {
            report.pythonError = blas + ": " + err;
            continue;
        }
        const QJsonArray pySteps =
            py["cached"].toObject()[QString::number(c.maxLength())].toObject()["step_ms"].toArray();
        std::vector<double> steps;
        for (const auto& v : pySteps)
            steps.push_back(v.toDouble());
        PythonReport p;
        p.blas = blas;
        p.loadMs = py["load_ms"].toDouble();
        p.preprocessMs = py["preprocess_ms"].toDouble();
        p.visionMs = py["vision_ms"].toDouble();
        p.textEncoderMs = py["text_encoder_ms"].toDouble();
        p.medianStepMs = median(steps);
        report.pythonRuns.push_back(p);
    }
    if (report.pythonRuns.empty())
        return;
    // Faster: less time for a whole answer of the longest length.
    const auto total = [&](const PythonReport& p) {
        return p.firstTokenMs() + c.maxLength() * p.medianStepMs;
    };
    report.python = *std::min_element(
        report.pythonRuns.begin(), report.pythonRuns.end(),
        [&](const PythonReport& a, const PythonReport& b) { return total(a) < total(b); });
}

} // namespace florence::detail
