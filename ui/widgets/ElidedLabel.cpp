#include "widgets/ElidedLabel.h"

#include <QHelpEvent>
#include <QPainter>
#include <QStyle>
#include <QStyleOption>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace florence::ui {

ElidedLabel::ElidedLabel(QWidget* parent, int leastChars)
    : QLabel(parent), m_leastChars(leastChars) {
    setTextFormat(Qt::PlainText); // task tokens look like HTML tags
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

QString ElidedLabel::shownText() const {
    return fontMetrics().elidedText(text(), Qt::ElideRight, contentsRect().width());
}

int ElidedLabel::wholeWidth() const {
    // The unrounded advance, rounded up, and a pixel for the last glyph's overhang: elidedText
    // cuts a text whose width is a fraction of a pixel over the room it has.
    return int(std::ceil(QFontMetricsF(font()).horizontalAdvance(text()))) + 1;
}

QSize ElidedLabel::minimumSizeHint() const {
    const QFontMetrics fm = fontMetrics();
    const int least = fm.horizontalAdvance(text().left(m_leastChars) + QChar(0x2026));
    const QMargins m = contentsMargins();
    return {std::min(least, wholeWidth()) + m.left() + m.right(),
            fm.height() + m.top() + m.bottom()};
}

QSize ElidedLabel::sizeHint() const {
    const QMargins m = contentsMargins();
    return {wholeWidth() + m.left() + m.right(), fontMetrics().height() + m.top() + m.bottom()};
}

bool ElidedLabel::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip && toolTip().isEmpty()) {
        const auto* help = static_cast<QHelpEvent*>(event);
        if (shownText() != text())
            QToolTip::showText(help->globalPos(), text(), this);
        else
            QToolTip::hideText();
        return true;
    }
    return QLabel::event(event);
}

void ElidedLabel::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    QStyleOption option;
    option.initFrom(this);
    style()->drawItemText(&painter, contentsRect(), alignment() | Qt::AlignVCenter, option.palette,
                          isEnabled(), shownText(), foregroundRole());
}

} // namespace florence::ui
