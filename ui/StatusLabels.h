// The status bar's permanent labels, right to left: the model in use ("statusModel"), the
// zoom, and the run ("statusRun"); messages show on the left as usual.
//
//   StatusLabels labels(window->statusBar());
//   labels.run->setText("Running <OD>…");
//   labels.showZoom(1.5);                      // "Zoom 150%"
#pragma once

class QLabel;
class QStatusBar;

namespace florence::ui {

struct StatusLabels {
    explicit StatusLabels(QStatusBar* bar);

    void showZoom(double factor);

    QLabel* model = nullptr; // owned by the status bar
    QLabel* zoom = nullptr;
    QLabel* run = nullptr;
};

} // namespace florence::ui
