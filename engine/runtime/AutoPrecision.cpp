// The rule half of <florence/auto_precision.h>: the choice of a precision from the measurements
// (no LibTorch call, so its test needs no model) and the cache file of measurements.
#include <florence/auto_precision.h>
#include <florence/generation_settings.h>

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <QStandardPaths>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <utility>

namespace florence {

namespace {

std::string fixed(double v, int decimals) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// "0.61x float32's time" / "2.3x slower than float32 here" / "as fast as float32".
std::string costNote(double cost) {
    if (cost > 1.0 / kAutomaticMaxCost)
        return fixed(cost, cost < 10 ? 1 : 0) + "x slower than float32 on this CPU";
    if (cost > kAutomaticMaxCost)
        return "as fast as float32 on this CPU";
    return fixed(cost, 2) + "x float32's time on this CPU";
}

const PrecisionTrial* findTrial(const PrecisionProbe& probe, Precision p) {
    for (const PrecisionTrial& t : probe.trials)
        if (t.precision == p)
            return &t;
    return nullptr;
}

// The least and the most of the loads the modes that ran were measured under; {0, 0} when none
// was read.
std::pair<double, double> loadRange(const PrecisionProbe& probe) {
    double lo = 0, hi = 0;
    bool any = false;
    for (const PrecisionTrial& t : probe.trials) {
        if (!t.error.empty() || t.otherCores < 0)
            continue;
        lo = any ? std::min(lo, t.otherCores) : t.otherCores;
        hi = any ? std::max(hi, t.otherCores) : t.otherCores;
        any = true;
    }
    return {lo, hi};
}

} // namespace

bool measuredUnderDifferentLoads(const PrecisionProbe& probe) {
    const auto [lo, hi] = loadRange(probe);
    return hi - lo > kMaxLoadDifferenceCores;
}

PrecisionChoice choosePrecision(const PrecisionProbe& probe) {
    const PrecisionTrial* reference = findTrial(probe, Precision::Float32);
    if (!reference || !reference->error.empty() || reference->answerMs() <= 0)
        throw EngineError("automatic precision: no float32 measurement to compare with");
    const double base = reference->answerMs();
    PrecisionChoice choice;
    choice.options.push_back({Precision::Float32, 1.0, true, "the reference"});
    const PrecisionTrial* best = nullptr;
    double bestCost = kAutomaticMaxCost;
    std::string rejected; // why the faster modes were not taken
    for (const Precision p : {Precision::BFloat16, Precision::Int8}) {
        const PrecisionTrial* t = findTrial(probe, p);
        if (!t)
            continue;
        PrecisionOption o;
        o.precision = p;
        o.cost = t->error.empty() ? t->answerMs() / base : 0;
        o.accurate = t->error.empty() && t->logitsCosine >= kMinLogitsCosine;
        if (!t->error.empty())
            o.note = "cannot run here: " + t->error;
        else if (!o.accurate)
            o.note = costNote(o.cost) + ", but its answers differ from float32's (logits cosine " +
                     fixed(t->logitsCosine, 4) + ")";
        else
            o.note = costNote(o.cost);
        choice.options.push_back(o);
        if (o.accurate && o.cost <= bestCost) {
            best = t;
            bestCost = o.cost;
        } else if (!o.accurate && t->error.empty() && o.cost <= kAutomaticMaxCost) {
            rejected += std::string(rejected.empty() ? "" : "; ") + precisionName(p) +
                        " would be faster but changes the answers (logits cosine " +
                        fixed(t->logitsCosine, 4) + ")";
        }
    }
    const std::string answer = "an answer of " + std::to_string(kAutomaticAnswerTokens) + " tokens";
    if (best) {
        choice.precision = best->precision;
        choice.reason = std::string("Automatic precision: ") + precisionName(best->precision) +
                        ", " + answer + " takes " + fixed(bestCost, 2) +
                        "x float32's time on this CPU, logits cosine " +
                        fixed(best->logitsCosine, 4) + " against float32";
    } else {
        choice.precision = Precision::Float32;
        choice.reason = "Automatic precision: float32, no other precision is faster on this CPU";
        std::string costs;
        for (const PrecisionOption& o : choice.options)
            if (o.precision != Precision::Float32 && o.accurate)
                costs += std::string(costs.empty() ? " (" : ", ") + precisionName(o.precision) +
                         " " + fixed(o.cost, 2) + "x";
        if (!costs.empty())
            choice.reason += costs + " float32's time for " + answer + ")";
    }
    if (!rejected.empty())
        choice.reason += "; " + rejected;
    if (measuredUnderDifferentLoads(probe)) {
        const auto [lo, hi] = loadRange(probe);
        choice.reason += "; other programs' load changed while the precisions were measured (" +
                         fixed(lo, 1) + " to " + fixed(hi, 1) + " cores busy" +
                         (probe.remeasured ? ", measured twice" : "") +
                         "), so the pick may be off: it is measured again next time";
    }
    return choice;
}

std::string precisionProbeCachePath() {
    const QString base = QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation);
    if (base.isEmpty())
        return {};
    return (base + QStringLiteral("/florence-studio/precision-probes.json")).toStdString();
}

std::string precisionProbeLockPath() {
    const std::string cache = precisionProbeCachePath();
    return cache.empty() ? cache : cache + ".lock";
}

namespace {

std::mutex g_cacheMutex; // one read-modify-write of the file at a time in this process

QJsonArray readProbes() {
    QFile f(QString::fromStdString(precisionProbeCachePath()));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    const QJsonDocument doc = QJsonDocument::fromJson(f.read(1 << 20));
    return doc.object().value(QStringLiteral("probes")).toArray();
}

QJsonObject toJson(const PrecisionProbe& probe) {
    QJsonArray trials;
    for (const PrecisionTrial& t : probe.trials)
        trials.append(QJsonObject{{"precision", precisionName(t.precision)},
                                  {"first_token_ms", t.firstTokenMs},
                                  {"step_ms", t.stepMs},
                                  {"logits_cosine", t.logitsCosine},
                                  {"error", QString::fromStdString(t.error)},
                                  {"other_cores", t.otherCores}});
    return QJsonObject{{"cpu", QString::fromStdString(probe.cpu)},
                       {"package", QString::fromStdString(probe.package)},
                       {"remeasured", probe.remeasured},
                       {"measured_at_ms", double(QDateTime::currentMSecsSinceEpoch())},
                       {"trials", trials}};
}

} // namespace

std::optional<PrecisionProbe> cachedPrecisionProbe(const std::string& cpu,
                                                   const std::string& package) {
    std::lock_guard<std::mutex> lock(g_cacheMutex);
    for (const QJsonValue& v : readProbes()) {
        const QJsonObject o = v.toObject();
        if (o.value("cpu").toString().toStdString() != cpu ||
            o.value("package").toString().toStdString() != package)
            continue;
        PrecisionProbe probe{cpu,
                             package,
                             {},
                             o.value("remeasured").toBool(),
                             int64_t(o.value("measured_at_ms").toDouble())};
        for (const QJsonValue& tv : o.value("trials").toArray()) {
            const QJsonObject t = tv.toObject();
            PrecisionTrial trial;
            const std::optional<Precision> p =
                parsePrecision(t.value("precision").toString().toStdString());
            if (!p)
                return std::nullopt; // written by something else: measure again
            trial.precision = *p;
            trial.firstTokenMs = t.value("first_token_ms").toDouble();
            trial.stepMs = t.value("step_ms").toDouble();
            trial.logitsCosine = t.value("logits_cosine").toDouble();
            trial.error = t.value("error").toString().toStdString();
            trial.otherCores = t.value("other_cores").toDouble(-1); // -1: written before it was
            probe.trials.push_back(trial);
        }
        return probe;
    }
    return std::nullopt;
}

bool storePrecisionProbe(const PrecisionProbe& probe) {
    const QString path = QString::fromStdString(precisionProbeCachePath());
    if (path.isEmpty() || !QDir().mkpath(QFileInfo(path).absolutePath()))
        return false;
    std::lock_guard<std::mutex> lock(g_cacheMutex);
    QJsonArray kept;
    for (const QJsonValue& v : readProbes()) {
        const QJsonObject o = v.toObject();
        if (o.value("cpu").toString().toStdString() != probe.cpu ||
            o.value("package").toString().toStdString() != probe.package)
            kept.append(o);
    }
    kept.append(toJson(probe));
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return false;
    f.write(QJsonDocument(QJsonObject{{"probes", kept}}).toJson());
    return f.commit();
}

} // namespace florence
