#include "StatusLabels.h"

#include "widgets/ElidedLabel.h"

#include <QLabel>
#include <QObject>
#include <QStatusBar>

namespace florence::ui {

StatusLabels::StatusLabels(QStatusBar* bar) {
    // The model's name and the run's state elide rather than widen the window or run into the
    // bar's messages; the bar's messages get the room first.
    model = new ElidedLabel(bar);
    model->setObjectName(QStringLiteral("statusModel"));
    zoom = new QLabel(bar);
    // Its own: the bar's tooltip (a message cut at its edge) would show over it otherwise.
    zoom->setToolTip(QObject::tr("The image's zoom: View › Zoom In, Zoom Out, Fit to Window"));
    // The run's state keeps room for "Done: 18 answer tokens in 92.2 ms" before the model's name
    // gives way ("Cancellin…" when a long name took the room).
    run = new ElidedLabel(bar, 34);
    run->setText(QObject::tr("Idle"));
    run->setObjectName(QStringLiteral("statusRun"));
    bar->addPermanentWidget(run);
    bar->addPermanentWidget(zoom);
    bar->addPermanentWidget(model);
}

void StatusLabels::showZoom(double factor) {
    zoom->setText(QObject::tr("Zoom %1%").arg(qRound(factor * 100)));
}

} // namespace florence::ui
