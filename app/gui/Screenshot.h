// --screenshot: runs the task (or Compare) once the window is up, opens the view asked for, and
// saves PNGs of it when everything has been drawn; then quits. Variants of the same state (the
// other theme, a 1280×720 screen's window size) are grabbed in the same process, so a
// comparison that takes minutes is run once for all of them.
//
//   ScreenshotPlan plan;
//   plan.out = "docs/history.png";
//   plan.view = ScreenshotView::History;
//   plan.alsoDark = plan.also720p = true;   // + history-dark.png, history-720p(-dark).png
//   scheduleScreenshot(&window, plan);      // then start the run as main() does
#pragma once

#include <QString>

#include <functional>

namespace florence::ui {
class MainWindow;
}

enum class ScreenshotView {
    Main,          // the window after the run
    History,       // the History panel after a few runs on the image
    ProcessFolder, // File › Process Folder after a run over the sample scenes
    Waiting,       // after the run, a comparison that has not had its first token yet
};

// The view named on the command line ("main", "history", "process-folder", "waiting"); false
// for others.
bool screenshotViewNamed(const QString& name, ScreenshotView* view);

struct ScreenshotPlan {
    QString out; // OUT.png; variants add "-dark", "-720p"
    ScreenshotView view = ScreenshotView::Main;
    bool alsoDark = false;   // also the dark theme (OUT-dark.png)
    bool also720p = false;   // also at 1280×680, a 1280×720 screen's window
    int timeoutMs = 600'000; // gives up (and grabs what there is) after this
};

// Ends the screenshot from the event loop: says why on stderr, grabs the window as it is (its
// message showing) and exits with 1.
using ScreenshotFailure = std::function<void(const QString& why)>;

// Connects to the window's model, image and run signals (call it before the model and the image
// load); main() starts the run itself, and ends the shot with the returned function when the
// window refuses the run or the task.
ScreenshotFailure scheduleScreenshot(florence::ui::MainWindow* window, const ScreenshotPlan& plan);
