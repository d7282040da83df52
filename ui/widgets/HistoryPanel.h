// The History panel: the runs the app remembers (history/History), newest first, each with its
// image's thumbnail, task, time and the first words of its answer. Choosing one emits
// entryChosen so the window shows it again without rerunning; Export Selected writes the
// selected runs as JSON; Clear History empties it, and Undo beside the note that says so puts
// the runs back. A note above the list says when the history file could not be read or saved.
//
//   auto* panel = new HistoryPanel(history, parent);
//   connect(panel, &HistoryPanel::entryChosen, window, &MainWindow::showHistoryEntry);
//   panel->setFileChooser([](const QString& suggested) { return suggested; });   // tests
#pragma once

#include <QJsonObject>
#include <QList>
#include <QPersistentModelIndex>
#include <QWidget>

#include <functional>

class QLabel;
class QListView;
class QPushButton;

namespace florence::ui {

class History;

class HistoryPanel : public QWidget {
    Q_OBJECT

public:
    // Returns the path to export to, or "" when the user cancelled. Replaces the save dialog.
    using FileChooser = std::function<QString(const QString& suggested)>;

    explicit HistoryPanel(History* history, QWidget* parent = nullptr);

    void setFileChooser(FileChooser chooser) { m_chooser = std::move(chooser); }
    // Shown above the list until the next successful change (empty: hidden).
    void setNote(const QString& text);
    QString note() const;
    // Selected rows, in list order (newest first).
    QList<int> selectedRows() const;
    QListView* list() const { return m_list; }

public slots:
    // Selects `row` alone, as a click does (entryChosen follows).
    void chooseEntry(int row);
    // Asks where (through the chooser or a dialog) and writes the selected runs.
    bool exportSelected();
    void clearHistory();
    // Puts back the runs the last Clear History removed.
    bool undoClear();

signals:
    void entryChosen(int row);

private:
    void updateButtons();
    void showNote(const QString& text, bool undoable);

    History* m_history;
    QLabel* m_note = nullptr;
    QPushButton* m_undo = nullptr;
    QList<QJsonObject> m_cleared; // what Undo puts back
    QListView* m_list = nullptr;
    // The row at the list's top while rows are inserted (invalid: the list was at its top).
    QPersistentModelIndex m_topBeforeInsert;

    QPushButton* m_export = nullptr;
    QPushButton* m_clear = nullptr;
    FileChooser m_chooser;
    QString m_exportFolder;
};

} // namespace florence::ui
