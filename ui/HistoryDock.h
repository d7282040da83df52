// The History panel as a dock of the main window: the runs kept across restarts
// (history/History.h) listed by widgets/HistoryPanel, toggled by View › History (Ctrl+H) and hidden
// until asked for (beside the other panels it would make the window too wide for a 1024-pixel
// screen; the window's saved state remembers it).
//
//   auto* dock = new HistoryDock(window, actions);
//   connect(dock, &HistoryDock::entryChosen, window, &MainWindow::showHistoryEntry);
//   QString why;
//   if (!dock->load(&why)) showMessage(why, true);
//   dock->record(runRecord);
#pragma once

#include "history/History.h"

#include <QObject>

class QMainWindow;

namespace florence::ui {

class HistoryPanel;
class MainActions;

class HistoryDock : public QObject {
    Q_OBJECT

public:
    // Adds the dock to `window` and its toggle to `actions`' View menu and shortcut list.
    HistoryDock(QMainWindow* window, MainActions* actions);

    History* history() const { return m_history; }
    HistoryPanel* panel() const { return m_panel; }

    // Reads the history file; false, with the panel's note and `message` set, when it could not.
    bool load(QString* message);
    // Keeps a finished run; a failure to save becomes the panel's note.
    void record(const HistoryRecord& record);

signals:
    // An entry was chosen (0 = newest).
    void entryChosen(int row);

private:
    History* m_history = nullptr;
    HistoryPanel* m_panel = nullptr;
};

} // namespace florence::ui
