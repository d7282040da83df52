#include "HistoryDock.h"

#include "MainActions.h"
#include "widgets/HistoryPanel.h"

#include <QAction>
#include <QDockWidget>
#include <QKeySequence>
#include <QMainWindow>
#include <QMenu>

namespace florence::ui {

HistoryDock::HistoryDock(QMainWindow* window, MainActions* actions) : QObject(window) {
    m_history = new History(History::defaultPath(), kMaxHistoryEntries, this);
    m_panel = new HistoryPanel(m_history, window);
    connect(m_panel, &HistoryPanel::entryChosen, this, &HistoryDock::entryChosen);
    auto* dock = new QDockWidget(tr("History"), window);
    dock->setObjectName(QStringLiteral("historyDock"));
    dock->setWidget(m_panel);
    window->addDockWidget(Qt::LeftDockWidgetArea, dock);
    dock->hide();
    QAction* toggle = dock->toggleViewAction();
    toggle->setShortcut(QKeySequence(tr("Ctrl+H")));
    toggle->setToolTip(tr("Show or hide the runs of earlier sessions (Ctrl+H)"));
    window->addAction(toggle);
    actions->listShortcut(toggle);
    actions->view->addSeparator();
    actions->view->addAction(toggle);
}

bool HistoryDock::load(QString* message) {
    const bool loaded = m_history->load();
    m_history->follow(); // another window's runs show here too
    if (loaded)
        return true;
    m_panel->setNote(m_history->loadMessage());
    if (message)
        *message = m_history->loadMessage();
    return false;
}

void HistoryDock::record(const HistoryRecord& record) {
    QString error;
    if (!m_history->add(makeHistoryDocument(record), &error))
        m_panel->setNote(error);
}

} // namespace florence::ui
