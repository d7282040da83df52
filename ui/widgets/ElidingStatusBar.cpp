#include "widgets/ElidingStatusBar.h"

#include <QPainter>
#include <QSizeGrip>
#include <QStyle>
#include <QStyleOption>

#include <algorithm>

namespace florence::ui {

ElidingStatusBar::ElidingStatusBar(QWidget* parent) : QStatusBar(parent) {
    connect(this, &QStatusBar::messageChanged, this, &ElidingStatusBar::updateToolTip);
}

QRect ElidingStatusBar::messageArea() const {
    // QStatusBarPrivate::messageRect's bounds: up to the permanent widgets and the size grip,
    // which sit on the right (on the left right to left).
    const bool rtl = layoutDirection() == Qt::RightToLeft;
    int left = 6, right = width() - 12;
    for (const QWidget* w : findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly)) {
        if (!w->isVisible() || w->isWindow())
            continue;
        const int gap = qobject_cast<const QSizeGrip*>(w) ? 0 : 2;
        if (rtl)
            left = std::max(left, w->x() + w->width() + gap);
        else
            right = std::min(right, w->x() - gap);
    }
    return QRect(left, 0, std::max(0, right - left), height());
}

QString ElidingStatusBar::shownMessage() const {
    return fontMetrics().elidedText(currentMessage(), Qt::ElideRight, messageArea().width());
}

void ElidingStatusBar::paintEvent(QPaintEvent* event) {
    QStatusBar::paintEvent(event);
    updateToolTip(); // the permanent widgets' widths may have changed since the message came
    const QString shown = shownMessage();
    if (shown == currentMessage())
        return;
    // Cut: the message area painted over as the window and the bar's panel, then the message
    // elided.
    QPainter p(this);
    const QRect area = messageArea();
    p.setClipRect(area);
    p.fillRect(area, palette().brush(backgroundRole())); // the window's, under the bar's panel
    QStyleOption opt;
    opt.initFrom(this);
    style()->drawPrimitive(QStyle::PE_PanelStatusBar, &opt, &p, this);
    p.setPen(palette().windowText().color());
    p.drawText(area, Qt::AlignLeading | Qt::AlignVCenter | Qt::TextSingleLine, shown);
}

void ElidingStatusBar::limitWidth(QWidget* widget, double fraction) {
    m_limits.append({widget, fraction});
    applyLimits();
}

void ElidingStatusBar::applyLimits() {
    for (const auto& [widget, fraction] : m_limits)
        if (widget)
            widget->setMaximumWidth(
                std::max(widget->minimumSizeHint().width(), int(width() * fraction)));
}

void ElidingStatusBar::resizeEvent(QResizeEvent* event) {
    applyLimits();
    QStatusBar::resizeEvent(event);
    updateToolTip();
}

void ElidingStatusBar::updateToolTip() {
    // Hovering a cut message shows it whole; nothing for one that fits.
    const QString message = currentMessage();
    setToolTip(!message.isEmpty() && shownMessage() != message ? message : QString());
}

} // namespace florence::ui
