// Help › About: the version, the runtime, what the model in use can and cannot do, and how to
// import a real Florence-2 checkpoint.
//
//   florence::ui::AboutDialog::show(window, loadedModelOrNothing);
//   QString html = florence::ui::AboutDialog::text(std::nullopt);   // about the bundled model
#pragma once

#include "controllers/WorkerTypes.h"

#include <QString>

#include <optional>

class QWidget;

namespace florence::ui {

class AboutDialog {
public:
    // Rich text. `loaded` is the model in use; without one, the bundled package is described.
    static QString text(const std::optional<ModelInfo>& loaded);
    static void show(QWidget* parent, const std::optional<ModelInfo>& loaded);
};

} // namespace florence::ui
