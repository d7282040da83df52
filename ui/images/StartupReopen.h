// The image reopened at start-up is skipped when opening it the last time did not finish (the
// app froze or crashed on it) or failed: a hostile image then costs one start, not every start.
//
//   QSettings s;
//   if (florence::ui::mayReopenAtStartup(s, lastImage)) {
//       florence::ui::beginStartupOpen(s, lastImage);
//       florence::ui::endStartupOpen(s, opened); // when the decode ends (ImageOpener)
//   }
#pragma once

#include <QSettings>
#include <QString>


namespace florence::ui {

// False when `path` is the image a previous start began to open and did not finish, or failed.
bool mayReopenAtStartup(const QSettings& settings, const QString& path);
// Records `path` as being opened, on disk at once (a freeze or crash leaves it there).
void beginStartupOpen(QSettings& settings, const QString& path);
// Clears the record when the image opened; keeps it when it failed.
void endStartupOpen(QSettings& settings, bool opened);

} // namespace florence::ui
