#include "presentation/CompareMarks.h"

#include <florence/compare_job.h>
#include <florence/stats.h>

#include <QObject>
#include <QStringList>

#include <algorithm>

namespace florence::ui {

namespace {

// The median over repeats of the decoding time of the first `tokens` tokens; repeats that
// ended sooner do not count.
double medianPrefixMs(const std::vector<std::vector<double>>& repeats, int tokens) {
    std::vector<double> sums;
    for (const std::vector<double>& steps : repeats)
        if (static_cast<int>(steps.size()) >= tokens)
            sums.push_back(cumulativeMs(steps)[static_cast<size_t>(tokens) - 1]);
    return spreadOf(sums).medianMs;
}

int shortestRun(const std::vector<std::vector<double>>& repeats) {
    int n = repeats.empty() ? 0 : static_cast<int>(repeats.front().size());
    for (const std::vector<double>& steps : repeats)
        n = std::min(n, static_cast<int>(steps.size()));
    return n;
}

SpeedupMark markAt(const CompareOutcome& o, int tokens, bool end) {
    SpeedupMark m;
    m.tokens = tokens;
    m.end = end;
    m.cachedMs = medianPrefixMs(o.measured.cached.stepMs, tokens);
    m.uncachedMs = medianPrefixMs(o.measured.uncached.stepMs, tokens);
    m.speedup = m.cachedMs > 0 ? m.uncachedMs / m.cachedMs : 0;
    return m;
}

QString speedupText(const std::vector<SpeedupMark>& marks) {
    QStringList parts;
    for (const SpeedupMark& m : marks) {
        const QString at = !parts.isEmpty() ? QString::number(m.tokens)
                           : m.tokens == 1  ? QObject::tr("1 token")
                                            : QObject::tr("%1 tokens").arg(m.tokens);
        parts << (m.end ? QObject::tr("%1 (end): %2×") : QObject::tr("%1: %2×"))
                     .arg(at)
                     .arg(m.speedup, 0, 'f', m.speedup < 10 ? 2 : 1);
    }
    return parts.join(QStringLiteral(" · "));
}

} // namespace

std::vector<double> cumulativeMs(const std::vector<double>& stepMs) {
    std::vector<double> sums(stepMs.size());
    double sum = 0;
    for (size_t i = 0; i < stepMs.size(); ++i)
        sums[i] = sum += stepMs[i];
    return sums;
}

CompareMarks compareMarks(const CompareOutcome& o) {
    CompareMarks c;
    const int tokens =
        std::min(shortestRun(o.measured.cached.stepMs), shortestRun(o.measured.uncached.stepMs));
    if (tokens <= 0)
        return c;
    for (const int mark : kSpeedupMarks)
        if (mark < tokens)
            c.marks.push_back(markAt(o, mark, false));
    c.marks.push_back(markAt(o, tokens, true));
    c.speedupText = speedupText(c.marks);
    c.cachedFirstTokenMs = spreadOf(o.measured.cached.firstTokenMs).medianMs;
    c.uncachedFirstTokenMs = spreadOf(o.measured.uncached.firstTokenMs).medianMs;
    c.firstTokenText = QObject::tr("cache on %1, cache off %2")
                           .arg(QString::fromStdString(formatMs(c.cachedFirstTokenMs)),
                                QString::fromStdString(formatMs(c.uncachedFirstTokenMs)));
    return c;
}

} // namespace florence::ui
