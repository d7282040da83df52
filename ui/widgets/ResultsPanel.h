// The answer as text and as a table: the answer as a person reads it (large, selectable), one
// row per parsed item (label, kind, pixel coordinates, confidence score; a caption or an OCR
// answer is one text row), and behind the "Raw tokens" toggle the generated text with its
// special and location tokens. Selecting a row emits
// itemSelected so the image view can highlight the shape. Above the table, the score row
// (scoreControls()): scores on the image and the minimum score.
//
//   panel->setRawText(outcome.text);          // streamed: called again as the text grows
//   panel->setAnswer(florence::parseAnswer(task, text, w, h));
//   connect(panel, &ResultsPanel::itemSelected, view, &ImageView::highlightItem);
#pragma once

#include <florence/answer.h>

#include <QWidget>

#include <string>

class QPlainTextEdit;
class QTableWidget;
class QLabel;
class QHBoxLayout;
class QAction;
class QToolButton;
class QProgressBar;

namespace florence::ui {

class ScoreControls;

class ResultsPanel : public QWidget {
    Q_OBJECT

public:
    explicit ResultsPanel(QWidget* parent = nullptr);

    // Appends when `text` extends what is shown (the common streaming case), else replaces.
    void setRawText(const std::string& text);
    QString rawText() const;
    void setAnswer(const ParsedAnswer& answer);
    void clear();
    // Rows that are items of the answer (a text answer's single row is not an item).
    int itemCount() const;
    int rowCount() const;
    // The answer shown above the table, without model tokens.
    QString answerText() const;
    // Puts buttons for these actions in the panel's header row.
    void addHeaderActions(const QList<QAction*>& actions);
    void setSummary(const QString& text);
    ScoreControls* scoreControls() const { return m_scores; }
    // A run has started but its first token has not come: the answer shown is greyed and
    // called the previous one, and a busy bar says what the model is doing (`phase`, e.g.
    // "Reading the image…"). Called again, it only changes the phase. clear() or
    // endPending() ends it.
    void showPending(const QString& phase);
    // The run ended before its first token: the previous answer is the current one again.
    // `why` (the run's status, e.g. "Failed"): the previous answer's summary says it is kept from
    // before and why the last run gave none, so it cannot pass for that run's answer.
    void endPending(const QString& why = QString());
    bool isPending() const;
    QString pendingPhase() const;

public slots:
    void selectItem(int index);
    // Selected rows as tab-separated text, or the whole raw text when no row is selected.
    void copyToClipboard();

signals:
    void itemSelected(int index);

private:
    void onSelectionChanged();
    // An answer is on show (text or table rows), current or from the run before.
    bool hasAnswerShown() const;
    void showTextRow(const ParsedAnswer& answer, const QString& text);

    QLabel* m_summary = nullptr;
    QWidget* m_pending = nullptr; // the busy bar and its phase, while a run has no token yet
    QLabel* m_pendingPhase = nullptr;
    QWidget* m_answerViews = nullptr; // what showPending greys
    QString m_summaryBeforePending;
    QHBoxLayout* m_header = nullptr;
    QPlainTextEdit* m_answerText = nullptr;
    QPlainTextEdit* m_text = nullptr; // raw tokens
    QToolButton* m_rawToggle = nullptr;
    bool m_textRow = false; // the table's one row is a text answer, not an item
    QTableWidget* m_table = nullptr;
    ScoreControls* m_scores = nullptr;
    std::string m_shownText;
    ParsedAnswer m_answer;
};

} // namespace florence::ui
