// The window's actions with their texts, shortcuts and tooltips, and the menus and tool bar
// that show them. The window connects them to what they do.
//
//   MainActions a(window);                 // window owns the actions
//   a.addMenus(window->menuBar());
//   connect(a.run, &QAction::triggered, window, &MainWindow::startRun);
//   QString help = a.shortcutsText();      // Help › Keyboard Shortcuts
#pragma once

#include "Theme.h"

#include <QList>
#include <QString>

class QAction;
class QActionGroup;
class QMainWindow;
class QMenu;
class QMenuBar;
class QWidget;

namespace florence::ui {

struct MainActions {
    explicit MainActions(QWidget* owner);

    void addMenus(QMenuBar* bar);
    // The window's one tool bar ("mainToolBar"), fixed in place.
    void addToolBar(QMainWindow* window);
    // View › Theme: the theme whose action is checked, and checking the action of `theme`.
    Theme checkedTheme() const;
    void checkTheme(Theme theme);
    // Every action that has a shortcut, as "Ctrl+R\tRun" lines (plain text).
    QString shortcutsText() const;
    // The same as a two-column table (keys, action) for the Keyboard Shortcuts box, so the
    // actions line up whatever the font.
    QString shortcutsHtml() const;
    // Lists an action the window made (a panel's toggle) in shortcutsText() too.
    void listShortcut(QAction* action) { m_all << action; }

    QAction* open = nullptr;
    QAction* paste = nullptr;
    QAction* openModel = nullptr;
    QAction* import = nullptr;
    QAction* processFolder = nullptr;
    QAction* exportJson = nullptr;
    QAction* savePng = nullptr;
    QAction* copyText = nullptr;
    QAction* quit = nullptr;
    QAction* run = nullptr;
    QAction* cancel = nullptr;
    QAction* compare = nullptr;
    QAction* clearRegion = nullptr;
    QAction* zoomIn = nullptr;
    QAction* zoomOut = nullptr;
    QAction* fit = nullptr;
    QAction* exifRotate = nullptr; // checkable: photos turned upright by their EXIF orientation
    QAction* themeSystem = nullptr;
    QAction* themeLight = nullptr;
    QAction* themeDark = nullptr;
    QActionGroup* theme = nullptr;
    QAction* shortcuts = nullptr;
    QAction* about = nullptr;
    QMenu* recent = nullptr; // filled by the window
    QMenu* view = nullptr;   // the window adds its panels' toggles

private:
    QList<QAction*> m_all;
};

} // namespace florence::ui
