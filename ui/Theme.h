// Light, dark or the desktop's own look, switchable at run time (View › Theme) and from the
// command line (--dark).
//
//   florence::ui::applyTheme(florence::ui::Theme::Dark);
//   florence::ui::applyTheme(florence::ui::themeFromName(prefs.theme));
#pragma once

#include <QIcon>
#include <QString>

namespace florence::ui {

enum class Theme { System, Light, Dark };

QString themeName(Theme theme); // "system", "light", "dark"
Theme themeFromName(const QString& name);

// Sets the application's style and palette. System restores what the application started with.
void applyTheme(Theme theme);

// The Run action's icon: a green triangle that reads on light and dark toolbars alike (the
// style's media-play icon is dark on dark).
QIcon runIcon();

} // namespace florence::ui
