#include "widgets/ChartStyle.h"

#include <QAbstractAxis>
#include <QAbstractSeries>
#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QLegend>
#include <QValueAxis>
#include <QWidget>

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

QString formatMs(double v) {
    if (v >= 10000)
        return QStringLiteral("%1 s").arg(v / 1000.0, 0, 'f', 2);
    return QStringLiteral("%1 ms").arg(v, 0, 'f', v < 10 ? 2 : 1);
}

void setUpLatencyChart(QChart* chart, QValueAxis*& axisX, QValueAxis*& axisY) {
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setAnimationOptions(QChart::NoAnimation);
    axisX = new QValueAxis();
    axisX->setTitleText(QObject::tr("token"));
    axisX->setLabelFormat(QStringLiteral("%d"));
    axisX->setRange(0, 10);
    axisY = new QValueAxis();
    axisY->setTitleText(QObject::tr("ms"));
    axisY->setRange(0, 10);
    chart->addAxis(axisX, Qt::AlignBottom);
    chart->addAxis(axisY, Qt::AlignLeft);
}

QChartView* layOutChartWithStats(QWidget* owner, QChart* chart, QWidget* stats,
                                 const QString& viewName) {
    auto* view = new QChartView(chart, owner);
    view->setObjectName(viewName);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(260, 140);
    stats->setMinimumWidth(230);
    stats->setMaximumWidth(320);
    auto* layout = new QHBoxLayout(owner);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(view, 1);
    layout->addWidget(stats, 0);
    return view;
}

} // namespace florence::ui
