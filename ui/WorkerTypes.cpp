#include "WorkerTypes.h"

namespace florence::ui {

void registerWorkerTypes() {
    qRegisterMetaType<RunRequest>();
    qRegisterMetaType<TokenUpdate>();
    qRegisterMetaType<RunOutcome>();
    qRegisterMetaType<CompareOutcome>();
    qRegisterMetaType<ModelInfo>();
}

QString describeModel(const ModelInfo& info) {
    const double p = static_cast<double>(info.parameterCount);
    QString size;
    if (p >= 1e9)
        size = QString::number(p / 1e9, 'f', 2) + QStringLiteral(" B");
    else if (p >= 1e6)
        size = QString::number(p / 1e6, 'f', 1) + QStringLiteral(" M");
    else
        size = QString::number(info.parameterCount);
    return QStringLiteral("%1 · %2 parameters · %3").arg(info.name, size, info.precision);
}

} // namespace florence::ui
