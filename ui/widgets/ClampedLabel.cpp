#include "widgets/ClampedLabel.h"

#include <QEvent>
#include <QFontMetrics>
#include <QTextLayout>
#include <QTextOption>

#include <algorithm>

namespace florence::ui {

ClampedLabel::ClampedLabel(int maxLines, QWidget* parent)
    : QLabel(parent), m_maxLines(std::max(1, maxLines)) {
    setTextFormat(Qt::PlainText);
    setWordWrap(true);
    // The lines are laid out here: the label only ever gets the width the layout gives it.
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    setMaximumHeight(fontMetrics().lineSpacing() * m_maxLines + 4);
}

QStringList ClampedLabel::clampedLines(const QString& text, const QFont& font, int width,
                                       int maxLines) {
    QStringList lines;
    const QFontMetrics metrics(font);
    qsizetype offset = 0; // of the paragraph in `text`
    for (const QString& paragraph : text.split(QLatin1Char('\n'))) {
        QTextLayout layout(paragraph, font);
        QTextOption option;
        option.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
        layout.setTextOption(option);
        layout.beginLayout();
        for (QTextLine line = layout.createLine(); line.isValid(); line = layout.createLine()) {
            line.setLineWidth(width);
            if (int(lines.size()) == maxLines - 1) {
                // The last line that shows: the rest of the text, cut to fit with "…".
                const QString rest = text.mid(offset + line.textStart()).simplified();
                lines << metrics.elidedText(rest, Qt::ElideRight, width);
                layout.endLayout();
                return lines;
            }
            lines << paragraph.mid(line.textStart(), line.textLength()).trimmed();
        }
        layout.endLayout();
        offset += paragraph.size() + 1;
    }
    return lines;
}

void ClampedLabel::setFullText(const QString& text) {
    m_text = text;
    setToolTip(text);
    clamp();
}

void ClampedLabel::clamp() {
    const int width = contentsRect().width() - 2 * margin() - indent();
    const QString shown =
        width > 0 ? clampedLines(m_text, font(), width, m_maxLines).join(QLatin1Char('\n'))
                  : m_text;
    if (shown != text())
        setText(shown);
}

void ClampedLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    clamp();
}

void ClampedLabel::changeEvent(QEvent* event) {
    QLabel::changeEvent(event);
    if (event->type() == QEvent::FontChange) {
        setMaximumHeight(fontMetrics().lineSpacing() * m_maxLines + 4);
        clamp();
    }
}

} // namespace florence::ui
