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

} // namespace florence::ui
