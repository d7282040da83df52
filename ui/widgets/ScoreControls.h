// The results panel's score row: "Scores on image" (adds each item's confidence to its label on
// the overlay) and the minimum-score slider, whose items below it leave the overlay, the table
// and the exports.
//
//   auto* scores = new ScoreControls(parent);
//   connect(scores, &ScoreControls::minScoreChanged, view, &RunView::setMinScore);
//   scores->setMinScore(0.5);   // the slider moves; minScoreChanged(0.5)
#pragma once

#include <QWidget>

class QCheckBox;
class QLabel;
class QSlider;

namespace florence::ui {

class ScoreControls : public QWidget {
    Q_OBJECT

public:
    explicit ScoreControls(QWidget* parent = nullptr);

    // In [0, 1], in steps of 0.001 (the slider's resolution).
    double minScore() const;
    bool showScores() const;

public slots:
    void setMinScore(double score);
    void setShowScores(bool on);

signals:
    void minScoreChanged(double score);
    void showScoresChanged(bool on);

private:
    void onSliderMoved(int value);

    QCheckBox* m_show = nullptr;
    QSlider* m_slider = nullptr;
    QLabel* m_value = nullptr;
};

} // namespace florence::ui
