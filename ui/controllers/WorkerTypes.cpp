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

} // namespace florence::ui
