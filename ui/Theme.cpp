#include "Theme.h"

#include <QApplication>
#include <QPainter>
#include <QPainterPath>
#include <QPalette>
#include <QPixmap>
#include <QProxyStyle>
#include <QStyle>
#include <QStyleFactory>
#include <QStyleOption>

#include <optional>

namespace florence::ui {

namespace {

struct StartLook {
    QString style;
    QPalette palette;
};

// What the application looked like before the first theme change: "System" goes back to it.
const StartLook& startLook() {
    static const StartLook look{QApplication::style()->name(), QApplication::palette()};
    return look;
}

QPalette darkPalette() {
    QPalette p;
    const QColor window(0x2b, 0x2d, 0x31), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0x9a, 0x9a));
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::Highlight, QColor(0x3d, 0x8e, 0xe8));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x6c, 0xb4, 0xff));
    p.setColor(QPalette::Mid, QColor(0x55, 0x57, 0x5c));
    p.setColor(QPalette::Dark, QColor(0x18, 0x19, 0x1b));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
    return p;
}

// Fusion in the dark palette, with check boxes and radio buttons that show: Fusion outlines them
// in the window colour darkened, which on a dark window is the colour of their fill.
class DarkStyle : public QProxyStyle {
public:
    DarkStyle() : QProxyStyle(QStyleFactory::create(QStringLiteral("Fusion"))) {}

    void drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                       const QWidget* widget) const override {
        QProxyStyle::drawPrimitive(element, option, painter, widget);
        if (element != PE_IndicatorCheckBox && element != PE_IndicatorRadioButton)
            return;
        // Fusion's keyboard-focus edge (the highlight colour) shows as it is.
        if ((option->state & State_HasFocus) && (option->state & State_KeyboardFocusChange))
            return;
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing, element == PE_IndicatorRadioButton);
        const bool enabled = option->state & State_Enabled;
        painter->setPen(QPen(option->palette.color(QPalette::Mid).lighter(enabled ? 135 : 100), 1));
        painter->setBrush(Qt::NoBrush);
        const QRectF r = QRectF(option->rect).adjusted(0.5, 0.5, -0.5, -0.5);
        if (element == PE_IndicatorRadioButton)
            painter->drawEllipse(r.adjusted(0.5, 0.5, -0.5, -0.5));
        else
            painter->drawRoundedRect(r, 1, 1);
        painter->restore();
    }
};

} // namespace

QString themeName(Theme theme) {
    switch (theme) {
    case Theme::Light:
        return QStringLiteral("light");
    case Theme::Dark:
        return QStringLiteral("dark");
    case Theme::System:
        break;
    }
    return QStringLiteral("system");
}

Theme themeFromName(const QString& name) {
    if (name == QLatin1String("dark"))
        return Theme::Dark;
    if (name == QLatin1String("light"))
        return Theme::Light;
    return Theme::System;
}

void applyTheme(Theme theme) {
    const StartLook& start = startLook();
    switch (theme) {
    case Theme::System:
        QApplication::setStyle(QStyleFactory::create(start.style));
        QApplication::setPalette(start.palette);
        break;
    case Theme::Light:
        QApplication::setStyle(QStringLiteral("Fusion"));
        QApplication::setPalette(QApplication::style()->standardPalette());
        break;
    case Theme::Dark:
        QApplication::setStyle(new DarkStyle);
        QApplication::setPalette(darkPalette());
        break;
    }
}

QIcon runIcon() {
    QIcon icon;
    for (const int size : {16, 22, 24, 32, 48}) {
        QPixmap pm(size, size);
        pm.fill(Qt::transparent);
        QPainter p(&pm);
        p.setRenderHint(QPainter::Antialiasing);
        QPainterPath path;
        const double m = size * 0.18;
        path.moveTo(m, m * 0.8);
        path.lineTo(size - m * 0.8, size / 2.0);
        path.lineTo(m, size - m * 0.8);
        path.closeSubpath();
        p.fillPath(path, QColor(0x2c, 0xa0, 0x2c));
        p.setPen(QPen(QColor(0x1a, 0x6b, 0x1a), std::max(1.0, size / 16.0)));
        p.drawPath(path);
        icon.addPixmap(pm);
    }
    return icon;
}

} // namespace florence::ui
