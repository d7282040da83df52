// A status bar whose message ends in "…" where it is cut, and whose tooltip then holds it whole.
// QStatusBar clips a long message at the first permanent widget, so that it seems to run into
// the run state beside it ("…not a regular file (a FI|Idle"), with nothing telling it goes on.
//
//   window->setStatusBar(new ElidingStatusBar(window));
//   window->statusBar()->showMessage(longText); // drawn as "Cannot open /tmp/xxxx…"
#pragma once

#include <QPointer>
#include <QStatusBar>

namespace florence::ui {

class ElidingStatusBar : public QStatusBar {
    Q_OBJECT

public:
    explicit ElidingStatusBar(QWidget* parent = nullptr);

    // The current message as drawn at the bar's width: whole, or cut with "…".
    QString shownMessage() const;
    // `widget` (a permanent one) never takes more than `fraction` of the bar's width, leaving the
    // rest to the messages and the other widgets (the model's long name, shown whole elsewhere).
    void limitWidth(QWidget* widget, double fraction);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    // Where QStatusBar draws its message: from the left edge to the first permanent widget (or
    // the size grip).
    QRect messageArea() const;
    void updateToolTip();
    void applyLimits();

    QList<QPair<QPointer<QWidget>, double>> m_limits;
};

} // namespace florence::ui
