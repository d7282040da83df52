#include "ScreenFit.h"

#include <QGuiApplication>
#include <QScreen>
#include <QWidget>

#include <algorithm>

namespace florence::ui {

void fitToScreen(QWidget* window) {
    const QScreen* screen = window->screen() ? window->screen() : QGuiApplication::primaryScreen();
    if (!screen || window->isMaximized() || window->isFullScreen())
        return;
    const QRect avail = screen->availableGeometry();
    const QSize frame = window->frameGeometry().size() - window->geometry().size();
    const QSize most = avail.size() - frame;
    if (window->width() > most.width() || window->height() > most.height())
        window->resize(std::min(window->width(), most.width()),
                       std::min(window->height(), most.height()));
    QRect g = window->frameGeometry();
    g.moveLeft(
        std::clamp(g.left(), avail.left(), std::max(avail.left(), avail.right() - g.width() + 1)));
    g.moveTop(
        std::clamp(g.top(), avail.top(), std::max(avail.top(), avail.bottom() - g.height() + 1)));
    if (g.topLeft() != window->frameGeometry().topLeft())
        window->move(g.topLeft());
}

} // namespace florence::ui
