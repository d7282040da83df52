#include "images/StartupReopen.h"

namespace florence::ui {

namespace {
const QString kKey = QStringLiteral("files/openingImage");
} // namespace

bool mayReopenAtStartup(const QSettings& settings, const QString& path) {
    return settings.value(kKey).toString() != path;
}

void beginStartupOpen(QSettings& settings, const QString& path) {
    settings.setValue(kKey, path);
    settings.sync();
}

void endStartupOpen(QSettings& settings, bool opened) {
    if (opened)
        settings.remove(kKey);
    settings.sync();
}

} // namespace florence::ui
