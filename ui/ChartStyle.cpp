#include "ChartStyle.h"

#include <QAbstractAxis>
#include <QAbstractSeries>
#include <QChart>
#include <QLegend>

namespace florence::ui {

bool isDarkPalette(const QPalette& palette) {
    return palette.color(QPalette::Window).lightness() < 128;
}

void applyChartPalette(QChart* chart, const QPalette& palette) {
    // setTheme() resets series colors, so the series are recolored by their owners afterwards.
    chart->setBackgroundBrush(palette.brush(QPalette::Base));
    chart->setBackgroundPen(QPen(palette.color(QPalette::Mid)));
    chart->setPlotAreaBackgroundVisible(false);
    chart->setTitleBrush(palette.brush(QPalette::Text));
    chart->legend()->setLabelColor(palette.color(QPalette::Text));
    const QColor grid = palette.color(QPalette::Mid);
    for (QAbstractAxis* axis : chart->axes()) {
        axis->setLabelsColor(palette.color(QPalette::Text));
        axis->setTitleBrush(palette.brush(QPalette::Text));
        axis->setLinePenColor(grid);
        axis->setGridLineColor(grid.lighter(isDarkPalette(palette) ? 80 : 130));
    }
}

} // namespace florence::ui
