#include "widgets/ChartStyle.h"

#include <florence/stats.h>

#include <QAbstractAxis>
#include <QAbstractSeries>
#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLegend>
#include <QLineSeries>
#include <QPen>
#include <QValueAxis>
#include <QWidget>

#include <algorithm>
#include <cmath>

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

QString formatMs(double ms) {
    return QString::fromStdString(florence::formatMs(ms));
}

void setUpLatencyChart(QChart* chart, QValueAxis*& axisX, QValueAxis*& axisY) {
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setAnimationOptions(QChart::NoAnimation);
    axisX = new QValueAxis();
    axisX->setTitleText(QObject::tr("token"));
    setNiceRange(axisX, 10, true);
    axisY = new QValueAxis();
    axisY->setTitleText(QObject::tr("ms"));
    setNiceRange(axisY, 10, false);
    chart->addAxis(axisX, Qt::AlignBottom);
    chart->addAxis(axisY, Qt::AlignLeft);
}

void addCacheSeries(QChart* chart, QValueAxis* axisX, QValueAxis* axisY,
                    std::array<QLineSeries*, 2>& series) {
    // Short: the legend shares a chart's width with nothing, and Qt cuts a name that does not
    // fit ("KV cach…" twice in a window with the History panel shown).
    const QString names[2] = {QObject::tr("cached"), QObject::tr("uncached")};
    for (int i = 0; i < 2; ++i) {
        series[i] = new QLineSeries();
        series[i]->setName(names[i]);
        chart->addSeries(series[i]);
        series[i]->attachAxis(axisX);
        series[i]->attachAxis(axisY);
    }
    chart->legend()->setAlignment(Qt::AlignTop);
}

void styleCacheSeries(std::array<QLineSeries*, 2>& series) {
    series[0]->setPen(QPen(QColor(0x2c, 0xa0, 0x2c), 2));
    series[1]->setPen(QPen(QColor(0xd6, 0x27, 0x28), 2));
}

NiceScale niceScale(double maxValue, bool integer, int maxTicks) {
    NiceScale n;
    const double top = std::max(maxValue, integer ? 1.0 : 1e-3);
    const double rough = top / std::max(1, maxTicks);
    const double power = std::pow(10.0, std::floor(std::log10(rough)));
    double step = power * 10;
    for (const double m : {1.0, 2.0, 5.0, 10.0})
        if (power * m >= rough) {
            step = power * m;
            break;
        }
    if (integer)
        step = std::max(1.0, std::round(step));
    n.step = step;
    n.max = std::ceil(top / step - 1e-9) * step;
    n.decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    return n;
}

namespace {

// What setNiceRange was asked for, and the plot width fitTickLabels found for the axis.
const char* const kAskedMax = "florenceAskedMax";
const char* const kAskedInteger = "florenceAskedInteger";
const char* const kPlotWidth = "florencePlotWidth";

// The most intervals whose labels fit whole in the axis's plot width: the widest label is the
// last one's at niceScale's most ticks, two characters apart. niceScale's own most where the
// width is not known (a vertical axis, a chart not laid out yet).
int intervalsThatFit(const QValueAxis* axis, double maxValue, bool integer) {
    const NiceScale most = niceScale(maxValue, integer);
    const QVariant width = axis->property(kPlotWidth);
    if (!width.isValid())
        return 6;
    const QFontMetrics metrics(axis->labelsFont());
    const int label = metrics.horizontalAdvance(QString::number(most.max, 'f', most.decimals)) +
                      2 * metrics.averageCharWidth();
    return std::clamp(int(width.toDouble() / std::max(1, label)) - 1, 1, 6);
}

} // namespace

void setNiceRange(QValueAxis* axis, double maxValue, bool integer) {
    axis->setProperty(kAskedMax, maxValue);
    axis->setProperty(kAskedInteger, integer);
    const NiceScale n = niceScale(maxValue, integer, intervalsThatFit(axis, maxValue, integer));
    // Qt Charts lays out the ticks of every intermediate state synchronously, at a cost that
    // grows with the square of their number: a 12 s range with the 0.2 ms step of a 1 ms range
    // is tens of thousands of labels and freezes the window for minutes. So the axis never
    // holds a step from another range: a coarser step goes in before a wider range, a finer
    // one after a narrower range, and each state has at most about kMaxTicks ticks.
    axis->setTickType(QValueAxis::TicksDynamic);
    axis->setTickAnchor(0);
    const bool coarser = n.step >= axis->tickInterval();
    if (coarser)
        axis->setTickInterval(n.step);
    axis->setRange(0, n.max);
    if (!coarser)
        axis->setTickInterval(n.step);
    axis->setLabelFormat(n.decimals == 0 ? QStringLiteral("%d")
                                         : QStringLiteral("%.%1f").arg(n.decimals));
}

double axisTickCount(const QValueAxis* axis) {
    const double interval = axis->tickInterval();
    if (axis->tickType() != QValueAxis::TicksDynamic || interval <= 0)
        return axis->tickCount();
    return (axis->max() - axis->min()) / interval + 1;
}

void fitTickLabels(QChart* chart) {
    const double width = chart->plotArea().width();
    if (width <= 0)
        return;
    for (QAbstractAxis* a : chart->axes(Qt::Horizontal)) {
        auto* axis = qobject_cast<QValueAxis*>(a);
        if (!axis || axis->property(kPlotWidth).toDouble() == width)
            continue;
        // setNiceRange keeps to it from now on, whatever range it is given.
        axis->setProperty(kPlotWidth, width);
        if (axis->property(kAskedMax).isValid())
            setNiceRange(axis, axis->property(kAskedMax).toDouble(),
                         axis->property(kAskedInteger).toBool());
    }
}

namespace {

class ShortChartFit : public QObject {
public:
    explicit ShortChartFit(QChartView* view) : QObject(view), m_view(view) {
        view->installEventFilter(this);
        // The tick labels follow the plot's width (its axes' labels and the legend move it).
        if (QChart* chart = view->chart())
            connect(chart, &QChart::plotAreaChanged, this, [chart] { fitTickLabels(chart); });
    }

    bool eventFilter(QObject* watched, QEvent* event) override {
        if (watched == m_view && event->type() == QEvent::Resize)
            fit();
        return false;
    }

private:
    void fit() {
        QChart* chart = m_view->chart();
        if (!chart)
            return;
        const bool compact = m_view->height() < kShortChartHeight;
        // The tick labels tell it is tokens; "0 2 4 6" cut to "... ... ..." tells nothing.
        for (QAbstractAxis* axis : chart->axes(Qt::Horizontal))
            axis->setTitleVisible(!compact);
        fitLegend(chart);
    }

    // A legend wider than the chart is cut ("uncac…" at 2x beside the History panel): its
    // font shrinks to fit, down to 70% of the window's.
    void fitLegend(QChart* chart) {
        QLegend* legend = chart->legend();
        if (!legend->isVisible())
            return;
        QFont font = m_view->font();
        const QFontMetrics metrics(font);
        int needed = 0;
        for (const QAbstractSeries* s : chart->series())
            needed += metrics.horizontalAdvance(s->name()) + 3 * metrics.height(); // marker, gaps
        const int room = m_view->width() - 4 * metrics.averageCharWidth();
        if (needed > room && needed > 0 && font.pointSizeF() > 0)
            font.setPointSizeF(font.pointSizeF() * std::max(0.7, double(room) / needed));
        if (legend->font() != font)
            legend->setFont(font);
    }

    QChartView* m_view;
};

} // namespace

void keepLegibleWhenShort(QChartView* view) {
    new ShortChartFit(view);
}

QChartView* layOutChartWithStats(QWidget* owner, QChart* chart, QWidget* stats,
                                 const QString& viewName) {
    auto* view = new QChartView(chart, owner);
    view->setObjectName(viewName);
    view->setRenderHint(QPainter::Antialiasing);
    // Small minimums so the window fits narrow and scaled screens; the chart stays readable.
    view->setMinimumSize(180, 140);
    keepLegibleWhenShort(view);
    stats->setMinimumWidth(190);
    stats->setMaximumWidth(320);
    auto* layout = new QHBoxLayout(owner);
    // A few pixels on the right, so the figures' longest line ("… ms before Run") does not
    // touch the window's edge.
    layout->setContentsMargins(0, 0, 6, 0);
    layout->addWidget(view, 1);
    layout->addWidget(stats, 0);
    return view;
}

} // namespace florence::ui
