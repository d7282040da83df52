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
                // The last line that shows: the rest of its paragraph, cut to fit with "…", which
                // it ends in too when paragraphs follow.
                const QString rest = paragraph.mid(line.textStart()).simplified();
                const QString ellipsis(QChar(0x2026));
                const bool more = offset + paragraph.size() < text.size();
                QString last =
                    metrics.elidedText(rest, Qt::ElideRight,
                                       more ? width - metrics.horizontalAdvance(ellipsis) : width);
                if (more && !last.endsWith(ellipsis))
                    last += ellipsis;
                lines << last;
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
    // QLabel's own text width (no frame here): a line laid out wider would wrap again.
    const int width = contentsRect().width() - 2 * margin() - std::max(0, indent());
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
