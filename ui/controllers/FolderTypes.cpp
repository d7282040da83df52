#include "controllers/FolderTypes.h"

namespace florence::ui {

void registerFolderTypes() {
    qRegisterMetaType<FolderRequest>();
    qRegisterMetaType<FolderProgress>();
    qRegisterMetaType<FolderOutcome>();
}

} // namespace florence::ui
