#include "StatusLabels.h"

#include <QLabel>
#include <QObject>
#include <QStatusBar>

namespace florence::ui {

StatusLabels::StatusLabels(QStatusBar* bar) {
    model = new QLabel(bar);
    model->setTextFormat(Qt::PlainText); // task tokens look like HTML tags
    model->setObjectName(QStringLiteral("statusModel"));
    zoom = new QLabel(bar);
    run = new QLabel(QObject::tr("Idle"), bar);
    run->setTextFormat(Qt::PlainText);
    run->setObjectName(QStringLiteral("statusRun"));
    bar->addPermanentWidget(run);
    bar->addPermanentWidget(zoom);
    bar->addPermanentWidget(model);
}

void StatusLabels::showZoom(double factor) {
    zoom->setText(QObject::tr("Zoom %1%").arg(qRound(factor * 100)));
}

} // namespace florence::ui
