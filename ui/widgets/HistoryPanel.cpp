#include "widgets/HistoryPanel.h"

#include "history/History.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QItemSelectionModel>
#include <QLabel>
#include <QListView>
#include <QPushButton>
#include <QScrollBar>
#include <QVBoxLayout>

#include <algorithm>

namespace florence::ui {

HistoryPanel::HistoryPanel(History* history, QWidget* parent)
    : QWidget(parent), m_history(history) {
    setObjectName(QStringLiteral("historyPanel"));
    m_note = new QLabel(this);
    m_note->setObjectName(QStringLiteral("historyNote"));
    m_note->setWordWrap(true);
    m_note->setTextFormat(Qt::PlainText);
    m_note->hide();
    m_undo = new QPushButton(tr("Undo"), this);
    m_undo->setObjectName(QStringLiteral("historyUndoButton"));
    m_undo->setToolTip(tr("Put back the runs Clear History removed"));
    m_undo->hide();
    connect(m_undo, &QPushButton::clicked, this, &HistoryPanel::undoClear);

    m_list = new QListView(this);
    m_list->setObjectName(QStringLiteral("historyList"));
    m_list->setModel(history);
    m_list->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_list->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_list->setIconSize(QSize(48, 48));
    m_list->setWordWrap(true);
    m_list->setTextElideMode(Qt::ElideRight);
    m_list->setUniformItemSizes(true);
    m_list->setToolTip(tr("Earlier runs: choose one to see its image, answer and latency "
                          "again without rerunning; Ctrl or Shift selects several to export"));
    // The current row is the one shown; the rest of a multiple selection is for exporting. A
    // click shows its entry even when it is already current (something else may be on screen
    // since), so clicks go by `pressed` and only the keys by the current row.
    connect(m_list, &QAbstractItemView::pressed, this,
            [this](const QModelIndex& index) { emit entryChosen(index.row()); });
    connect(m_list->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& current) {
                if (current.isValid() && QGuiApplication::mouseButtons() == Qt::NoButton)
                    emit entryChosen(current.row());
            });
    connect(m_list->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &HistoryPanel::updateButtons);

    m_export = new QPushButton(tr("Export…"), this);
    m_export->setObjectName(QStringLiteral("historyExportButton"));
    m_export->setToolTip(tr("Save the selected runs as JSON: each run's answer document "
                            "(Hugging Face, app and COCO forms, scores, timings) and its image "
                            "path, task text and time"));
    connect(m_export, &QPushButton::clicked, this, &HistoryPanel::exportSelected);
    m_clear = new QPushButton(tr("Clear History"), this);
    m_clear->setObjectName(QStringLiteral("historyClearButton"));
    m_clear->setToolTip(tr("Forget every run in the history (the images are not touched); "
                           "Undo brings them back"));
    connect(m_clear, &QPushButton::clicked, this, &HistoryPanel::clearHistory);
    // Rows come in at the top: this window's run (shown whole at the top of the list, as on
    // screen), or other windows' (the rows the user was looking at stay where they were, not
    // pushed down to a half-hidden one; at the top, the new rows show).
    connect(history, &QAbstractItemModel::rowsAboutToBeInserted, this, [this] {
        const QScrollBar* bar = m_list->verticalScrollBar();
        m_topBeforeInsert = bar->value() == bar->minimum()
                                ? QPersistentModelIndex()
                                : QPersistentModelIndex(m_list->indexAt(QPoint(0, 0)));
    });
    connect(history, &QAbstractItemModel::rowsInserted, this, [this] {
        if (!m_topBeforeInsert.isValid())
            m_list->scrollToTop();
        else
            m_list->scrollTo(m_topBeforeInsert, QAbstractItemView::PositionAtTop);
        m_topBeforeInsert = QPersistentModelIndex();
    });
    connect(history, &History::recorded, this, [this] {
        // The new run is on screen, not an earlier one: nothing stays chosen.
        m_list->selectionModel()->clear();
        m_list->scrollToTop();
        updateButtons();
    });
    connect(history, &QAbstractItemModel::rowsInserted, this, &HistoryPanel::updateButtons);
    connect(history, &QAbstractItemModel::modelReset, this, &HistoryPanel::updateButtons);
    connect(history, &QAbstractItemModel::rowsRemoved, this, &HistoryPanel::updateButtons);

    auto* buttons = new QHBoxLayout();
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->addWidget(m_export);
    buttons->addWidget(m_clear);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* noteRow = new QHBoxLayout();
    noteRow->setContentsMargins(0, 0, 0, 0);
    noteRow->addWidget(m_note, 1);
    noteRow->addWidget(m_undo, 0, Qt::AlignTop);
    layout->addLayout(noteRow);
    layout->addWidget(m_list, 1);
    layout->addLayout(buttons);
    setMinimumWidth(160);
    updateButtons();
}

void HistoryPanel::setNote(const QString& text) {
    showNote(text, false);
}

void HistoryPanel::showNote(const QString& text, bool undoable) {
    m_note->setText(text);
    m_note->setVisible(!text.isEmpty());
    if (!undoable)
        m_cleared.clear();
    m_undo->setVisible(undoable);
}

QString HistoryPanel::note() const {
    return m_note->text();
}

QList<int> HistoryPanel::selectedRows() const {
    QList<int> rows;
    for (const QModelIndex& i : m_list->selectionModel()->selectedRows())
        rows << i.row();
    std::sort(rows.begin(), rows.end());
    return rows;
}

void HistoryPanel::updateButtons() {
    m_export->setEnabled(!selectedRows().isEmpty());
    m_clear->setEnabled(m_history->count() > 0);
}

void HistoryPanel::chooseEntry(int row) {
    const QModelIndex index = m_history->index(row, 0);
    if (!index.isValid())
        return;
    m_list->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect);
}

bool HistoryPanel::exportSelected() {
    const QList<int> rows = selectedRows();
    if (rows.isEmpty()) {
        setNote(tr("Select the runs to export first."));
        return false;
    }
    // Taken now: while the dialog is open another window may record a run, which moves the rows.
    QList<QJsonObject> documents;
    for (int row : rows)
        documents << m_history->entry(row).document;
    const QString folder = m_exportFolder.isEmpty() ? QDir::homePath() : m_exportFolder;
    const QString suggested = QDir(folder).filePath(QStringLiteral("florence-history.json"));
    const QString path = m_chooser ? m_chooser(suggested)
                                   : QFileDialog::getSaveFileName(this, tr("Export History"),
                                                                  suggested, tr("JSON (*.json)"));
    if (path.isEmpty())
        return false;
    m_exportFolder = QFileInfo(path).absolutePath();
    try {
        History::exportDocuments(documents, path);
    } catch (const std::exception& e) {
        setNote(QString::fromStdString(e.what()));
        return false;
    }
    setNote(tr("Exported %n run(s) to %1", nullptr, static_cast<int>(rows.size()))
                .arg(QDir::toNativeSeparators(path)));
    return true;
}

void HistoryPanel::clearHistory() {
    const QList<QJsonObject> documents = m_history->documents();
    if (documents.isEmpty())
        return;
    QString error;
    if (!m_history->clear(&error)) {
        setNote(error);
        return;
    }
    showNote(documents.size() == 1 ? tr("Cleared 1 run from the history.")
                                   : tr("Cleared %1 runs from the history.").arg(documents.size()),
             true);
    m_cleared = documents;
}

bool HistoryPanel::undoClear() {
    if (m_cleared.isEmpty())
        return false;
    QString error;
    if (!m_history->restore(m_cleared, &error)) {
        showNote(error, true); // the runs are still held: Undo can be tried again
        return false;
    }
    setNote(QString());
    return true;
}

} // namespace florence::ui
