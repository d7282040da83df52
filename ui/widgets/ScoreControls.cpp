#include "widgets/ScoreControls.h"

#include "presentation/Scores.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>

#include <algorithm>
#include <cmath>

namespace florence::ui {

namespace {

// Thousandths: a small model's scores crowd near 1 (0.95, 0.99), so hundredths would not
// separate them.
constexpr int kSteps = 1000;

} // namespace

ScoreControls::ScoreControls(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("scoreControls"));
    m_show = new QCheckBox(tr("Scores on image"), this);
    m_show->setObjectName(QStringLiteral("showScoresCheck"));
    m_show->setToolTip(
        tr("Add each item's score to its label on the image.\n\n%1").arg(scoreExplanation()));
    connect(m_show, &QCheckBox::toggled, this, &ScoreControls::showScoresChanged);

    auto* label = new QLabel(tr("Min score"), this);
    m_slider = new QSlider(Qt::Horizontal, this);
    m_slider->setObjectName(QStringLiteral("minScoreSlider"));
    m_slider->setRange(0, kSteps);
    m_slider->setSingleStep(10);
    m_slider->setPageStep(100);
    m_slider->setToolTip(tr("Hide the items scored below this from the image, the table and "
                            "the exports; items without a score always show.\n\n%1")
                             .arg(scoreExplanation()));
    label->setToolTip(m_slider->toolTip());
    m_slider->setMinimumWidth(100);
    label->setBuddy(m_slider);
    m_value = new QLabel(this);
    m_value->setObjectName(QStringLiteral("minScoreValue"));
    // Room for "0.000" so the row does not jump while dragging.
    m_value->setMinimumWidth(m_value->fontMetrics().horizontalAdvance(QStringLiteral("0.000")));
    connect(m_slider, &QSlider::valueChanged, this, &ScoreControls::onSliderMoved);

    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(m_show);
    row->addStretch(1);
    row->addWidget(label);
    row->addWidget(m_slider, 1);
    row->addWidget(m_value);
    onSliderMoved(m_slider->value());
}

double ScoreControls::minScore() const {
    return m_slider->value() / double(kSteps);
}

bool ScoreControls::showScores() const {
    return m_show->isChecked();
}

void ScoreControls::setMinScore(double score) {
    m_slider->setValue(static_cast<int>(std::lround(std::clamp(score, 0.0, 1.0) * kSteps)));
}

void ScoreControls::setShowScores(bool on) {
    m_show->setChecked(on);
}

void ScoreControls::onSliderMoved(int value) {
    m_value->setText(QString::number(value / double(kSteps), 'f', 3));
    emit minScoreChanged(value / double(kSteps));
}

} // namespace florence::ui
