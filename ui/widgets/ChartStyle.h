// Makes a Qt Charts chart follow the widget palette (light or dark), which the built-in chart
// themes do not do on their own.
//
//   florence::ui::applyChartPalette(chart, widget->palette());   // again on PaletteChange
#pragma once

#include <QPalette>
#include <QString>

#include <array>

class QChart;
class QChartView;
class QLineSeries;
class QValueAxis;
class QWidget;

namespace florence::ui {

void applyChartPalette(QChart* chart, const QPalette& palette);
bool isDarkPalette(const QPalette& palette);

// "0.84 ms", "12.3 ms", "10.52 s": <florence/stats.h>'s florence::formatMs, as a QString.
QString formatMs(double ms);

// The latency charts' common frame: no animation (it lags behind fast streams), small margins,
// "token" and "ms" value axes from 0 to 10 that the owner widens as steps arrive.
void setUpLatencyChart(QChart* chart, QValueAxis*& axisX, QValueAxis*& axisY);

// The "KV cache on" / "KV cache off" pair of lines of the comparison charts, on those axes, the
// legend on top: series[0] cached, series[1] uncached.
void addCacheSeries(QChart* chart, QValueAxis* axisX, QValueAxis* axisY,
                    std::array<QLineSeries*, 2>& series);
// Their pens: fixed hues (not palette roles), so cached and uncached keep their colours in both
// themes and in every chart that shows them.
void styleCacheSeries(std::array<QLineSeries*, 2>& series);

// Ticks a reader can use: a step of 1, 2 or 5 times a power of ten (at least 1 for `integer`
// axes, e.g. tokens), at most about `maxTicks` of them, from 0 to the first multiple of the
// step at or above `maxValue`.
struct NiceScale {
    double max = 10;
    double step = 2;
    int decimals = 0; // what the labels need to print every tick exactly
};
NiceScale niceScale(double maxValue, bool integer, int maxTicks = 6);
// Applies niceScale to a value axis: range 0..max, ticks at every step from 0, label format.
// Between its calls into Qt too, the axis never holds more ticks than the old or the new scale
// has (see ChartStyle.cpp).
void setNiceRange(QValueAxis* axis, double maxValue, bool integer);
// How many tick labels the axis lays out in its current state.
double axisTickCount(const QValueAxis* axis);

// Fewer ticks on the chart's horizontal axes where their labels would not fit between them at
// the plot's width (Qt Charts cuts them to "1…" or "…": a narrow window, 2x scaling): as many
// as fit, at most niceScale's. Records the width on each axis, which setNiceRange then fits
// every range to (the labels widen as tokens stream in); keepLegibleWhenShort calls it as the
// plot's width changes.
void fitTickLabels(QChart* chart);

// A chart short enough that Qt Charts would cut its horizontal tick labels and title to "..."
// (1280x720, 2x scaling on a 1080p screen) hides that axis's title while it is that short, which
// leaves the labels room; taller again, the title comes back. Narrow, it keeps its tick labels
// whole (fitTickLabels).
void keepLegibleWhenShort(QChartView* view);
constexpr int kShortChartHeight = 230;

// The chart view on the left, the stats panel on the right, filling `owner`.
QChartView* layOutChartWithStats(QWidget* owner, QChart* chart, QWidget* stats,
                                 const QString& viewName);

} // namespace florence::ui
