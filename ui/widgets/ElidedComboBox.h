// A combo box whose current item ends in "…" where the box is too narrow for it, as the status
// bar's labels do, rather than being cut mid-letter ("Florence-2-base · random weights (sp"). The
// list it drops down shows the items whole.
#pragma once

#include <QComboBox>

namespace florence::ui {

class ElidedComboBox : public QComboBox {
    Q_OBJECT

public:
    using QComboBox::QComboBox;

    // The current item's text as drawn at the current width.
    QString shownText() const;

protected:
    void paintEvent(QPaintEvent* event) override;
};

} // namespace florence::ui
