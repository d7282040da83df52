// A one-line label that never widens its window: it asks for room for its whole text but
// makes do with a few characters, eliding the rest ("Florence-2 demo (sha…"); hovering shows
// the whole text unless the label has a tooltip of its own. For texts the machine writes (model
// names, runtime lines, precision notes, run states), whose length differs from one machine to
// the next. setText() works as on any QLabel.
//
//   auto* label = new ElidedLabel(statusBar);
//   label->setText(tr("Running %1…").arg(taskName));
#pragma once

#include <QLabel>

namespace florence::ui {

class ElidedLabel : public QLabel {
    Q_OBJECT

public:
    explicit ElidedLabel(QWidget* parent = nullptr, int leastChars = 8);

    // The text as drawn at the current width.
    QString shownText() const;

    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;

protected:
    bool event(QEvent* event) override;
    void paintEvent(QPaintEvent* event) override;

private:
    int wholeWidth() const; // the text's width, whole

    int m_leastChars;
};

} // namespace florence::ui
