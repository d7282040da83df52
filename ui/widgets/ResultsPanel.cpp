#include "widgets/ResultsPanel.h"

#include "presentation/AnswerDisplay.h"
#include "presentation/Scores.h"
#include "widgets/ScoreControls.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QScrollBar>
#include <QSplitter>
#include <QTableWidget>
#include <QTextCursor>
#include <QToolButton>
#include <QVBoxLayout>

namespace florence::ui {

namespace {

QString kindName(AnswerItem::Kind k) {
    switch (k) {
    case AnswerItem::Kind::Box:
        return QObject::tr("box");
    case AnswerItem::Kind::Quad:
        return QObject::tr("quad");
    case AnswerItem::Kind::Polygon:
        return QObject::tr("polygon");
    }
    return {};
}

QString num(double v) {
    return QString::number(v, 'f', 1);
}

QString coordinates(const AnswerItem& it) {
    if (it.kind == AnswerItem::Kind::Box)
        return QStringLiteral("%1, %2, %3, %4")
            .arg(num(it.box.x1), num(it.box.y1), num(it.box.x2), num(it.box.y2));
    if (it.kind == AnswerItem::Kind::Quad) {
        // Whole pixels: four corners at one decimal do not fit the column beside the text.
        QStringList pts;
        for (size_t i = 0; i + 1 < it.quad.size(); i += 2)
            pts << QStringLiteral("(%1, %2)").arg(qRound(it.quad[i])).arg(qRound(it.quad[i + 1]));
        return pts.join(QLatin1Char(' '));
    }
    int points = 0;
    double x1 = 1e18, y1 = 1e18, x2 = -1e18, y2 = -1e18;
    for (const auto& poly : it.polygons) {
        for (size_t i = 0; i + 1 < poly.size(); i += 2) {
            ++points;
            x1 = std::min(x1, poly[i]);
            x2 = std::max(x2, poly[i]);
            y1 = std::min(y1, poly[i + 1]);
            y2 = std::max(y2, poly[i + 1]);
        }
    }
    if (points == 0)
        return QObject::tr("(no points yet)");
    return QObject::tr("%n polygon(s), %1 points, bounds %2, %3, %4, %5", nullptr,
                       static_cast<int>(it.polygons.size()))
        .arg(points)
        .arg(num(x1), num(y1), num(x2), num(y2));
}

bool sameItem(const AnswerItem& a, const AnswerItem& b) {
    // The score too: the streamed rows have none until the finished run brings them.
    return a.kind == b.kind && a.label == b.label && a.bins == b.bins && a.score == b.score;
}

constexpr int kScoreColumn = 4;

// Lines may break between tokens but not inside one: a word joiner after "</" keeps "</s>"
// whole. Copies leave the joiners out.
constexpr QChar kWordJoiner(0x2060);

QString rawForDisplay(const std::string& text) {
    return QString::fromStdString(text).replace(QStringLiteral("</"),
                                                QStringLiteral("</") + kWordJoiner);
}

class RawTextEdit : public QPlainTextEdit {
public:
    using QPlainTextEdit::QPlainTextEdit;

protected:
    QMimeData* createMimeDataFromSelection() const override {
        auto* data = new QMimeData;
        data->setText(textCursor()
                          .selectedText()
                          .remove(kWordJoiner)
                          .replace(QChar::ParagraphSeparator, QLatin1Char('\n')));
        return data;
    }
};

} // namespace

ResultsPanel::ResultsPanel(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("resultsPanel"));
    m_summary = new QLabel(tr("No result yet"), this);
    m_summary->setObjectName(QStringLiteral("resultSummary"));
    m_summary->setTextFormat(Qt::PlainText); // "<OD> · …" is not HTML
    m_summary->setMinimumWidth(0);
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    // Buttons below the table so the summary line keeps the full width.
    m_header = new QHBoxLayout();
    m_header->setContentsMargins(0, 0, 0, 0);
    m_header->addStretch(1);

    // The answer as a person reads it, large and selectable, for every task.
    m_answerText = new QPlainTextEdit(this);
    m_answerText->setObjectName(QStringLiteral("answerText"));
    m_answerText->setReadOnly(true);
    m_answerText->setTabChangesFocus(true);
    m_answerText->setFrameShape(QFrame::NoFrame);
    m_answerText->setPlaceholderText(tr("The answer appears here as the model writes it."));
    QFont answerFont = m_answerText->font();
    answerFont.setPointSizeF(answerFont.pointSizeF() * 1.25);
    m_answerText->setFont(answerFont);
    m_answerText->setMinimumHeight(QFontMetrics(answerFont).lineSpacing() * 2 + 12);

    m_text = new RawTextEdit(this);
    m_text->setTabChangesFocus(true);
    m_text->setObjectName(QStringLiteral("rawText"));
    m_text->setReadOnly(true);
    m_text->setPlaceholderText(
        tr("The raw tokens the model generates appear here as they arrive; the table, the "
           "image and Copy Answer Text show the answer without them."));
    m_text->setToolTip(tr("Raw tokens: the text exactly as generated, with the model's special "
                          "and location tokens"));
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setLineWrapMode(QPlainTextEdit::WidgetWidth);

    m_table = new QTableWidget(0, 5, this);
    // Tab leaves the table (arrow keys move between cells) instead of cycling its cells.
    m_table->setTabKeyNavigation(false);
    m_table->setObjectName(QStringLiteral("itemsTable"));
    m_table->setHorizontalHeaderLabels(
        {tr("#"), tr("Label"), tr("Kind"), tr("Coordinates (px)"), tr("Score")});
    m_table->horizontalHeaderItem(kScoreColumn)->setToolTip(scoreExplanation());
    m_table->verticalHeader()->hide();
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Interactive);
    m_table->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    // Coordinates take the room left; the score stays in view at the right.
    m_table->horizontalHeader()->setSectionResizeMode(3, QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(kScoreColumn, QHeaderView::ResizeToContents);
    m_table->setColumnWidth(1, 140);
    m_table->setWordWrap(false);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &ResultsPanel::onSelectionChanged);

    // Ctrl+C anywhere in the panel except inside the text (which copies its own selection).
    auto* copy = new QAction(tr("Copy"), m_table);
    copy->setShortcut(QKeySequence::Copy);
    copy->setShortcutContext(Qt::WidgetShortcut);
    connect(copy, &QAction::triggered, this, &ResultsPanel::copyToClipboard);
    m_table->addAction(copy);

    auto* split = new QSplitter(Qt::Vertical, this);
    split->setObjectName(QStringLiteral("resultsSplitter"));
    split->addWidget(m_answerText);
    split->addWidget(m_table);
    split->addWidget(m_text);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 2);
    split->setStretchFactor(2, 1);
    split->setChildrenCollapsible(false);
    m_text->hide(); // behind the Raw tokens toggle

    m_rawToggle = new QToolButton(this);
    m_rawToggle->setObjectName(QStringLiteral("rawToggle"));
    m_rawToggle->setText(tr("Raw tokens"));
    m_rawToggle->setCheckable(true); // framed like the buttons beside it: flat, they read as labels
    m_rawToggle->setToolTip(tr("Show the text exactly as generated, with the model's special and "
                               "location tokens"));
    connect(m_rawToggle, &QToolButton::toggled, m_text, &QWidget::setVisible);
    m_header->insertWidget(0, m_rawToggle);

    // Between Run and the first token the encoders run (seconds at base size, more on a busy
    // machine): a moving bar and a phase say the model is at work.
    m_pending = new QWidget(this);
    m_pending->setObjectName(QStringLiteral("runProgress"));
    auto* bar = new QProgressBar(m_pending);
    bar->setObjectName(QStringLiteral("runProgressBar"));
    bar->setRange(0, 0); // busy: the encoders report no fraction done
    bar->setTextVisible(false);
    bar->setMaximumWidth(120);
    m_pendingPhase = new QLabel(m_pending);
    m_pendingPhase->setObjectName(QStringLiteral("runProgressPhase"));
    m_pendingPhase->setTextFormat(Qt::PlainText);
    m_pendingPhase->setMinimumWidth(0);
    m_pendingPhase->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    auto* pendingRow = new QHBoxLayout(m_pending);
    pendingRow->setContentsMargins(0, 0, 0, 0);
    pendingRow->addWidget(bar);
    pendingRow->addWidget(m_pendingPhase, 1);
    m_pending->hide();
    m_answerViews = split;

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_scores = new ScoreControls(this);
    layout->addWidget(m_summary);
    layout->addWidget(m_pending);
    layout->addWidget(m_scores);
    layout->addWidget(split, 1);
    layout->addLayout(m_header);
}

void ResultsPanel::addHeaderActions(const QList<QAction*>& actions) {
    for (QAction* a : actions) {
        auto* b = new QToolButton(this);
        b->setDefaultAction(a);
        b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
        m_header->addWidget(b);
    }
}

void ResultsPanel::setSummary(const QString& text) {
    m_summary->setText(text);
}

void ResultsPanel::setRawText(const std::string& text) {
    if (text == m_shownText)
        return;
    QScrollBar* bar = m_text->verticalScrollBar();
    const bool atEnd = bar->value() >= bar->maximum() - 4;
    const QString shown = m_text->toPlainText();
    const QString wanted = rawForDisplay(text);
    if (wanted.size() > shown.size() && wanted.startsWith(shown)) {
        // Appending keeps the user's selection and scroll position; replacing would reset both.
        QTextCursor c(m_text->document());
        c.movePosition(QTextCursor::End);
        c.insertText(wanted.mid(shown.size()));
    } else {
        m_text->setPlainText(wanted);
    }
    m_shownText = text;
    if (atEnd)
        bar->setValue(bar->maximum());
}

QString ResultsPanel::rawText() const {
    return m_text->toPlainText().remove(kWordJoiner);
}

void ResultsPanel::setAnswer(const ParsedAnswer& answer) {
    // While streaming, items only grow at the end; rebuild only the rows that changed so the
    // user's selection survives.
    size_t common = 0;
    while (common < answer.items.size() && common < m_answer.items.size() &&
           sameItem(answer.items[common], m_answer.items[common]))
        ++common;
    const int selected = m_table->currentRow();
    m_table->setSortingEnabled(false);
    const QString text = QString::fromStdString(answer.text).trimmed();
    if (m_answerText->toPlainText() != text)
        m_answerText->setPlainText(text);
    if (answer.items.empty()) {
        showTextRow(answer, text);
        return;
    }
    if (m_textRow)
        common = 0; // the row was the text row
    m_textRow = false;
    m_table->setRowCount(static_cast<int>(answer.items.size()));
    for (size_t i = common; i < answer.items.size(); ++i) {
        const AnswerItem& it = answer.items[i];
        const int row = static_cast<int>(i);
        auto* index = new QTableWidgetItem(QString::number(row + 1));
        index->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(row, 0, index);
        m_table->setItem(row, 1, new QTableWidgetItem(QString::fromStdString(it.label).trimmed()));
        m_table->setItem(row, 2, new QTableWidgetItem(kindName(it.kind)));
        auto* coords = new QTableWidgetItem(coordinates(it));
        coords->setToolTip(coords->text());
        m_table->setItem(row, 3, coords);
        auto* score = new QTableWidgetItem(scoreText(it.score));
        score->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        score->setToolTip(scoreToolTip(it.score));
        m_table->setItem(row, kScoreColumn, score);
    }
    if (selected >= static_cast<int>(answer.items.size()))
        m_table->clearSelection();
    m_answer = answer;
}

void ResultsPanel::showTextRow(const ParsedAnswer& answer, const QString& text) {
    // A caption or an OCR answer: one row with the text, so the table never looks empty when
    // the model answered.
    m_textRow = !text.isEmpty();
    m_table->setRowCount(m_textRow ? 1 : 0);
    if (m_textRow) {
        auto* index = new QTableWidgetItem(QStringLiteral("1"));
        index->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(0, 0, index);
        auto* label = new QTableWidgetItem(text);
        label->setToolTip(text);
        m_table->setItem(0, 1, label);
        m_table->setItem(0, 2, new QTableWidgetItem(tr("text")));
        m_table->setItem(0, 3, new QTableWidgetItem(tr("the whole image")));
        auto* score = new QTableWidgetItem(scoreText(answer.score));
        score->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        score->setToolTip(scoreToolTip(answer.score, true));
        m_table->setItem(0, kScoreColumn, score);
    }
    m_answer = answer;
}

QString ResultsPanel::answerText() const {
    return m_answerText->toPlainText();
}

void ResultsPanel::showPending(const QString& phase) {
    m_pendingPhase->setText(phase);
    m_pendingPhase->setToolTip(phase);
    if (isPending())
        return;
    m_summaryBeforePending = m_summary->text();
    m_pending->show();
    // Greyed, so it cannot pass for the answer on its way.
    m_answerViews->setEnabled(false);
    if (!hasAnswerShown())
        m_summary->setText(tr("Waiting for the first token…"));
    else
        m_summary->setText(tr("Previous answer (greyed) · the new one replaces it when its first "
                              "token arrives"));
}

void ResultsPanel::endPending(const QString& why) {
    if (!isPending())
        return;
    m_pending->hide();
    m_answerViews->setEnabled(true);
    if (why.isEmpty() || !hasAnswerShown()) {
        m_summary->setText(m_summaryBeforePending);
        return;
    }
    QString reason = why;
    reason[0] = reason[0].toLower();
    // The reason first: a narrow panel cuts the label's end.
    m_summary->setText(tr("From before (last run: %1) · %2").arg(reason, m_summaryBeforePending));
}

bool ResultsPanel::hasAnswerShown() const {
    return !m_answerText->toPlainText().isEmpty() || m_table->rowCount() > 0;
}

bool ResultsPanel::isPending() const {
    return !m_pending->isHidden();
}

QString ResultsPanel::pendingPhase() const {
    return isPending() ? m_pendingPhase->text() : QString();
}

void ResultsPanel::clear() {
    m_pending->hide();
    m_answerViews->setEnabled(true);
    m_answerText->clear();
    m_textRow = false;
    m_text->clear();
    m_shownText.clear();
    m_table->clearSelection();
    m_table->setRowCount(0);
    m_answer = ParsedAnswer();
    m_summary->setText(tr("No result yet"));
}

int ResultsPanel::itemCount() const {
    return m_textRow ? 0 : m_table->rowCount();
}

int ResultsPanel::rowCount() const {
    return m_table->rowCount();
}

void ResultsPanel::selectItem(int index) {
    if (index < 0 || index >= m_table->rowCount()) {
        m_table->clearSelection();
        return;
    }
    m_table->selectRow(index);
    m_table->scrollToItem(m_table->item(index, 0));
}

void ResultsPanel::onSelectionChanged() {
    const QList<QTableWidgetSelectionRange> ranges = m_table->selectedRanges();
    if (ranges.isEmpty()) {
        emit itemSelected(-1);
        return;
    }
    if (m_textRow) {
        emit itemSelected(-1); // the text row has no shape on the image
        return;
    }
    emit itemSelected(m_table->currentRow() >= 0 ? m_table->currentRow() : ranges.first().topRow());
}

void ResultsPanel::copyToClipboard() {
    QStringList lines;
    for (int row = 0; row < m_table->rowCount(); ++row) {
        if (!m_table->item(row, 0) || !m_table->item(row, 0)->isSelected())
            continue;
        QStringList cells;
        for (int col = 0; col < m_table->columnCount(); ++col)
            cells << (m_table->item(row, col) ? m_table->item(row, col)->text() : QString());
        lines << cells.join(QLatin1Char('\t'));
    }
    // Without a selection: the answer as a person reads it, never the raw tokens.
    QApplication::clipboard()->setText(lines.isEmpty()
                                           ? QString::fromStdString(cleanAnswerText(m_shownText))
                                           : lines.join(QLatin1Char('\n')));
}

} // namespace florence::ui
