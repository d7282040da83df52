// Makes a Qt Charts chart follow the widget palette (light or dark), which the built-in chart
// themes do not do on their own.
//
//   florence::ui::applyChartPalette(chart, widget->palette());   // again on PaletteChange
#pragma once

#include <QPalette>
#include <QString>

class QChart;
class QChartView;
class QValueAxis;
class QWidget;

namespace florence::ui {

void applyChartPalette(QChart* chart, const QPalette& palette);
bool isDarkPalette(const QPalette& palette);

// "0.84 ms", "12.3 ms", "10.52 s": the latency panels' format.
QString formatMs(double ms);

// The latency charts' common frame: no animation (it lags behind fast streams), small margins,
// "token" and "ms" value axes from 0 to 10 that the owner widens as steps arrive.
void setUpLatencyChart(QChart* chart, QValueAxis*& axisX, QValueAxis*& axisY);

// The chart view on the left, the stats panel on the right, filling `owner`.
QChartView* layOutChartWithStats(QWidget* owner, QChart* chart, QWidget* stats,
                                 const QString& viewName);

} // namespace florence::ui
