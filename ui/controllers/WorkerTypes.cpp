#include "controllers/WorkerTypes.h"

namespace florence::ui {

void registerWorkerTypes() {
    qRegisterMetaType<RunRequest>();
    qRegisterMetaType<EncodeRequest>();
    qRegisterMetaType<EncodeOutcome>();
    qRegisterMetaType<TokenUpdate>();
    qRegisterMetaType<RunOutcome>();
    qRegisterMetaType<CompareOutcome>();
    qRegisterMetaType<ModelInfo>();
}

ModelFacts ModelInfo::facts() const {
    ModelFacts facts;
    facts.name = manifest.name;
    facts.precision = precisionMode;
    facts.encoderPrecision = encoderPrecision;
    facts.loadMs = loadMs;
    return facts;
}

CancelledBeforeStart cancelledBeforeStart(quint64 runId, RunKind kind, const QString& task) {
    CancelledBeforeStart c;
    c.run.runId = runId;
    c.run.task = task;
    c.run.result.cancelled = true;
    if (kind == RunKind::Compare) {
        CompareOutcome cmp;
        cmp.runId = runId;
        cmp.cached = c.run;
        cmp.uncached = c.run;
        cmp.uncached.pass = 1;
        cmp.measured.cancelled = true;
        c.compare = cmp;
    }
    return c;
}

} // namespace florence::ui
