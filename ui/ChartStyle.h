// Makes a Qt Charts chart follow the widget palette (light or dark), which the built-in chart
// themes do not do on their own.
//
//   florence::ui::applyChartPalette(chart, widget->palette());   // again on PaletteChange
#pragma once

#include <QPalette>

class QChart;

namespace florence::ui {

void applyChartPalette(QChart* chart, const QPalette& palette);
bool isDarkPalette(const QPalette& palette);

} // namespace florence::ui
