#include "run/StartupImage.h"

#include <QFileInfo>

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

void reopenAtStartup(const QString& path, const std::function<bool(const QString&)>& open) {
    if (path.isEmpty() || !QFileInfo::exists(path))
        return;
    QSettings s;
    if (mayReopenAtStartup(s, path)) {
        beginStartupOpen(s, path);
        endStartupOpen(s, open(path));
    }
}

} // namespace florence::ui
