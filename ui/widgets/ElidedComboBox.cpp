#include "widgets/ElidedComboBox.h"

#include <QStyleOptionComboBox>
#include <QStylePainter>

namespace florence::ui {

namespace {

QString elided(const QComboBox* box, QStyleOptionComboBox& opt) {
    const QRect field =
        box->style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, box);
    int room = field.width() - 2; // the style draws the label 1 px in from each side
    if (!opt.currentIcon.isNull())
        room -= opt.iconSize.width() + 4;
    return box->fontMetrics().elidedText(opt.currentText, Qt::ElideRight, room);
}

} // namespace

QString ElidedComboBox::shownText() const {
    QStyleOptionComboBox opt;
    initStyleOption(&opt);
    return elided(this, opt);
}

void ElidedComboBox::paintEvent(QPaintEvent*) {
    // QComboBox::paintEvent, the label's text elided.
    QStylePainter painter(this);
    painter.setPen(palette().color(QPalette::Text));
    QStyleOptionComboBox opt;
    initStyleOption(&opt);
    painter.drawComplexControl(QStyle::CC_ComboBox, opt);
    if (!isEditable())
        opt.currentText = elided(this, opt);
    painter.drawControl(QStyle::CE_ComboBoxLabel, opt);
}

} // namespace florence::ui
