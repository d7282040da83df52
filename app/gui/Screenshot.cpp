#include "Screenshot.h"

#include "MainWindow.h"
#include "Theme.h"
#include "dialogs/ProcessFolderDialog.h"

#include <florence/paths.h>

#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QLineEdit>
#include <QPixmap>
#include <QPointer>
#include <QRadioButton>
#include <QTemporaryDir>
#include <QTimer>

#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

using florence::ui::MainWindow;

namespace {

// Time for the last repaint (charts animate their axes; a theme change repolishes every widget).
constexpr int kSettleMs = 400;

// The runs the History shot shows, after the one asked for (it is the newest of them).
const char* const kHistoryTasks[] = {"<OD>", "<OCR>", "<DETAILED_CAPTION>"};

QString variantPath(const QString& out, const QString& suffix) {
    const QFileInfo info(out);
    return info.dir().filePath(info.completeBaseName() + suffix + QStringLiteral(".png"));
}

class Shooter {
public:
    Shooter(MainWindow* window, ScreenshotPlan plan) : m_window(window), m_plan(std::move(plan)) {}

    // Called when the run asked for has ended well: go on to the view, then grab.
    void runEnded() {
        if (m_done)
            return;
        if (m_plan.view == ScreenshotView::History &&
            m_nextHistoryTask < std::size(kHistoryTasks)) {
            m_window->setTask(QString::fromLatin1(kHistoryTasks[m_nextHistoryTask++]));
            if (m_window->startRun())
                return;
        }
        if (m_plan.view == ScreenshotView::ProcessFolder && !m_dialog) {
            openFolderDialog();
            return;
        }
        if (m_plan.view == ScreenshotView::Waiting) {
            waitForFirstToken();
            return;
        }
        if (m_plan.view == ScreenshotView::History) {
            if (auto* dock = m_window->findChild<QDockWidget*>(QStringLiteral("historyDock")))
                dock->show();
        }
        grabAll();
    }

    void fail(const QString& why) {
        if (m_done)
            return;
        std::fprintf(stderr, "florence-studio: %s\n", qPrintable(why));
        grabOne(m_plan.out);
        finish(1);
    }

private:
    QWidget* target() const { return m_dialog ? static_cast<QWidget*>(m_dialog.data()) : m_window; }

    void openFolderDialog() {
        m_results = std::make_unique<QTemporaryDir>();
        m_dialog = m_window->showProcessFolderDialog();
        m_dialog->setFolder(QString::fromStdString(florence::samplesDir()) +
                            QStringLiteral("/scenes"));
        // The results go to a throwaway folder, never beside the installed samples.
        if (auto* elsewhere = m_dialog->findChild<QRadioButton*>(QStringLiteral("elsewhereRadio")))
            elsewhere->setChecked(true);
        if (auto* out = m_dialog->findChild<QLineEdit*>(QStringLiteral("outFolderEdit")))
            out->setText(m_results->path());
        QObject::connect(
            m_dialog, &florence::ui::ProcessFolderDialog::finished, m_window, [this] { grabAll(); },
            Qt::SingleShotConnection);
        if (!m_dialog->start())
            fail("the Process Folder form did not start");
    }

    // A comparison encodes the image again in every pass: grabbed before its first token, the
    // window shows the previous answer greyed and what the model is doing.
    void waitForFirstToken() {
        if (m_waited || !m_window->startComparison()) {
            fail("the comparison did not start");
            return;
        }
        m_waited = true;
        auto tokens = std::make_shared<int>(0);
        QObject::connect(m_window, &MainWindow::tokenArrived, m_window, [tokens] { ++*tokens; });
        QTimer::singleShot(kSettleMs, m_window, [this, tokens] {
            if (*tokens > 0) {
                fail("the first token came before the shot: use a larger model");
                return;
            }
            grabAll();
        });
    }

    bool grabOne(const QString& path) {
        const QPixmap shot = target()->grab();
        if (!shot.save(path)) {
            std::fprintf(stderr, "florence-studio: cannot write %s\n", qPrintable(path));
            return false;
        }
        std::fprintf(stderr, "florence-studio: wrote %s\n", qPrintable(path));
        return true;
    }

    // The shots in order, each after the window has settled from the step before it.
    void grabAll() {
        std::vector<std::function<bool()>> steps;
        steps.push_back([this] { return grabOne(m_plan.out); });
        if (m_plan.alsoDark) {
            steps.push_back(
                [] { return florence::ui::applyTheme(florence::ui::Theme::Dark), true; });
            steps.push_back([this] { return grabOne(variantPath(m_plan.out, "-dark")); });
        }
        if (m_plan.also720p && target() == m_window) {
            steps.push_back([this] { return m_window->resize(1280, 680), true; });
            if (m_plan.alsoDark)
                steps.push_back([this] { return grabOne(variantPath(m_plan.out, "-720p-dark")); });
            steps.push_back(
                [] { return florence::ui::applyTheme(florence::ui::Theme::System), true; });
            steps.push_back([this] { return grabOne(variantPath(m_plan.out, "-720p")); });
        }
        m_steps = std::move(steps);
        next(0, true);
    }

    void next(size_t i, bool ok) {
        if (!ok || i == m_steps.size()) {
            finish(ok ? 0 : 1);
            return;
        }
        QTimer::singleShot(kSettleMs, m_window, [this, i] { next(i + 1, m_steps[i]()); });
    }

    void finish(int code) {
        m_done = true;
        m_window->cancelRun(); // a comparison grabbed while it waits
        QCoreApplication::exit(code);
    }

    MainWindow* m_window;
    ScreenshotPlan m_plan;
    size_t m_nextHistoryTask = 0;
    bool m_waited = false;
    QPointer<florence::ui::ProcessFolderDialog> m_dialog;
    std::unique_ptr<QTemporaryDir> m_results;
    std::vector<std::function<bool()>> m_steps;
    bool m_done = false;
};

} // namespace

bool screenshotViewNamed(const QString& name, ScreenshotView* view) {
    if (name == QLatin1String("main"))
        *view = ScreenshotView::Main;
    else if (name == QLatin1String("history"))
        *view = ScreenshotView::History;
    else if (name == QLatin1String("process-folder"))
        *view = ScreenshotView::ProcessFolder;
    else if (name == QLatin1String("waiting"))
        *view = ScreenshotView::Waiting;
    else
        return false;
    return true;
}

ScreenshotFailure scheduleScreenshot(MainWindow* window, const ScreenshotPlan& plan) {
    // Lives as long as the window: the process ends with the last shot.
    auto shooter = std::make_shared<Shooter>(window, plan);
    const auto settled = [shooter] {
        QTimer::singleShot(kSettleMs, [shooter] { shooter->runEnded(); });
    };
    QObject::connect(window, &MainWindow::runCompleted, window, [shooter, settled](bool cancelled) {
        if (cancelled)
            shooter->fail("the run was cancelled");
        else
            settled();
    });
    QObject::connect(window, &MainWindow::comparisonCompleted, window, settled);
    QObject::connect(window, &MainWindow::runErrored, window,
                     [shooter] { shooter->fail("the run failed"); });
    // From the event loop: a model or an image may fail before it runs (exit() would be lost),
    // and the window is shown by then.
    const auto failSoon = [window, shooter](const QString& why) {
        QTimer::singleShot(0, window, [shooter, why] { shooter->fail(why); });
    };
    QObject::connect(window, &MainWindow::modelFailed, window, [failSoon](const QString& why) {
        failSoon(QStringLiteral("the model did not load: ") + why);
    });
    // The run waits for the image: one that cannot open ends the shot now, not at the timeout.
    QObject::connect(window, &MainWindow::imageFailed, window, [failSoon](const QString& message) {
        failSoon(QStringLiteral("the image did not open: ") + message);
    });
    QTimer::singleShot(plan.timeoutMs, window,
                       [shooter] { shooter->fail("screenshot timed out"); });
    return failSoon;
}
