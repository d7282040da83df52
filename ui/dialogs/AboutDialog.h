// Help › About: in plain words the version, what the model in use can and cannot do, and how
// to import a real Florence-2 checkpoint; behind Show Details the runtime, the folders and the
// command line.
//
//   florence::ui::AboutDialog::show(window, loadedModelOrNothing);
//   QString html = florence::ui::AboutDialog::text(std::nullopt);   // about the bundled model
//   QString more = florence::ui::AboutDialog::details();           // "Runtime: LibTorch …"
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
    // Plain text for those who want it: the runtime line, the import folder, the command line.
    static QString details();
    static void show(QWidget* parent, const std::optional<ModelInfo>& loaded);
};

} // namespace florence::ui
