// florence-studio: the desktop app. Only wiring: command line, settings identity, the window.
#include "MainWindow.h"
#include "Screenshot.h"
#include "Settings.h"
#include "Theme.h"
#include "history/History.h"

#include <florence/paths.h>
#include <florence/process.h>
#include <florence/tasks.h>
#include <florence/version.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QIcon>
#include <QPalette>
#include <QRectF>
#include <QTemporaryDir>

#include <cstdio>
#include <functional>
#include <memory>

namespace {

// The command line's options, in --help's order.
struct Options {
    QCommandLineOption model{QStringLiteral("model"),
                             QStringLiteral("Model package folder (default: the bundled model)."),
                             QStringLiteral("PKG")};
    QCommandLineOption image{QStringLiteral("image"), QStringLiteral("Image to open."),
                             QStringLiteral("FILE")};
    QCommandLineOption task{QStringLiteral("task"),
                            QStringLiteral("Task token to select, e.g. \"<OD>\"."),
                            QStringLiteral("TOKEN")};
    QCommandLineOption text{QStringLiteral("text"), QStringLiteral("Text input for the task."),
                            QStringLiteral("TEXT")};
    QCommandLineOption shot{QStringLiteral("screenshot"),
                            QStringLiteral("Run the task, save a PNG of the window, and exit."),
                            QStringLiteral("OUT.png")};
    QCommandLineOption compare{QStringLiteral("compare"),
                               QStringLiteral("With --screenshot: run the cached/uncached "
                                              "comparison instead of a single run.")};
    QCommandLineOption maxTokens{QStringLiteral("max-new-tokens"),
                                 QStringLiteral("Generation limit for this session."),
                                 QStringLiteral("N")};
    QCommandLineOption beams{QStringLiteral("beams"),
                             QStringLiteral("Beam count for this session (1 = greedy)."),
                             QStringLiteral("N")};
    QCommandLineOption size{QStringLiteral("size"),
                            QStringLiteral("Window size WxH (screenshots)."),
                            QStringLiteral("WxH")};
    QCommandLineOption region{
        QStringLiteral("region"),
        QStringLiteral("Region X1,Y1,X2,Y2 in image pixels for region tasks."),
        QStringLiteral("X1,Y1,X2,Y2")};
    QCommandLineOption view{
        QStringLiteral("view"),
        QStringLiteral("With --screenshot: what to show, main (the window after the run), history "
                       "(the History panel after a few runs), process-folder (Process Folder "
                       "after a run over the sample scenes) or waiting (after the run, a "
                       "comparison before its first token)."),
        QStringLiteral("VIEW")};
    QCommandLineOption alsoDark{
        QStringLiteral("also-dark"),
        QStringLiteral("With --screenshot: also grab the same state in the dark theme "
                       "(OUT-dark.png).")};
    QCommandLineOption also720p{
        QStringLiteral("also-720p"),
        QStringLiteral("With --screenshot: also grab the window resized for a 1280x720 screen "
                       "(OUT-720p.png, with --also-dark OUT-720p-dark.png too).")};
    QCommandLineOption dark{QStringLiteral("dark"),
                            QStringLiteral("Use a dark palette (Fusion style) whatever the desktop "
                                           "theme is (also View > Theme in the app).")};
};

// --help and --version must work without a display (packaging, man pages, ssh sessions):
// they are answered by a console application, which QCommandLineParser::process exits after
// printing.
std::unique_ptr<QCoreApplication> makeApplication(int& argc, char** argv) {
    bool consoleOnly = false;
    for (int i = 1; i < argc; ++i) {
        const QByteArray a(argv[i]);
        consoleOnly = consoleOnly || a == "--help" || a == "-h" || a == "--help-all" ||
                      a == "--version" || a == "-v";
    }
    if (consoleOnly)
        return std::make_unique<QCoreApplication>(argc, argv);
    return std::make_unique<QApplication>(argc, argv);
}

void parseCommandLine(QCommandLineParser& parser, const Options& o, QCoreApplication& app) {
    parser.setApplicationDescription(
        QStringLiteral("Desktop studio for Microsoft's Florence-2 vision-language model."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("image"), QStringLiteral("Image to open."),
                                 QStringLiteral("[image]"));
    parser.addOptions({o.region, o.dark, o.model, o.image, o.task, o.text, o.shot, o.compare,
                       o.view, o.alsoDark, o.also720p, o.maxTokens, o.beams, o.size});
    parser.process(app); // exits after --help / --version
}

// The image asked for, else (no image restored from the settings) a sample scene the bundled
// model understands, captioned at once on the user's first start unless the command line asks
// for more (a second window, or a later start with nothing to restore, only shows it: the cores
// may be busy with the first window's work).
void openStartImage(florence::ui::MainWindow& window, const QCommandLineParser& parser,
                    const Options& o) {
    QString image = parser.value(o.image);
    if (image.isEmpty() && !parser.positionalArguments().isEmpty())
        image = parser.positionalArguments().constFirst();
    if (!image.isEmpty()) {
        window.openImageFile(image);
        return;
    }
    if (window.hasImage() || window.isOpeningImage())
        return;
    const QString samples = QString::fromStdString(florence::samplesDir());
    if (parser.isSet(o.task) || parser.isSet(o.shot) ||
        !florence::ui::Settings::claimFirstStart()) {
        const QString sample = florence::ui::MainWindow::firstRunImage(samples);
        if (!sample.isEmpty())
            window.openImageFile(sample);
    } else {
        window.openFirstRunSample(samples);
    }
}

// f now if the window's model is ready, else once it is (the model asked for, or the bundled one
// the window falls back to).
void whenModelReady(florence::ui::MainWindow& window, const std::function<void()>& f) {
    if (window.isModelReady())
        f();
    else
        QObject::connect(&window, &florence::ui::MainWindow::modelReady, &window, f,
                         Qt::SingleShotConnection);
}

// --task, --text, --region, --max-new-tokens and --beams, as if chosen in the window. The task
// once the model has loaded: a package's own tasks are listed then. A task it does not have is
// said on stderr, and ends a screenshot (failShot) rather than shooting another task.
void applyTaskOptions(florence::ui::MainWindow& window, const QCommandLineParser& parser,
                      const Options& o, const ScreenshotFailure& failShot,
                      const std::shared_ptr<bool>& taskRefused) {
    if (parser.isSet(o.task))
        whenModelReady(window, [&window, token = parser.value(o.task), failShot, taskRefused] {
            if (window.setTask(token))
                return;
            *taskRefused = true;
            const QString why = QStringLiteral("--task %1: %2").arg(token, window.messageText());
            if (failShot)
                failShot(why);
            else
                std::fprintf(stderr, "florence-studio: %s\n", qPrintable(why));
        });
    if (parser.isSet(o.text))
        window.setTaskText(parser.value(o.text));
    // Opening an image clears the region: it waits until the image has opened.
    if (parser.isSet(o.region)) {
        window.afterImageOpens([&window, text = parser.value(o.region)] {
            try {
                const florence::Box b = florence::parseRegion(text.toStdString());
                window.setRegion(QRectF(QPointF(b.x1, b.y1), QPointF(b.x2, b.y2)).normalized());
            } catch (const florence::TaskError& e) {
                window.showMessage(QStringLiteral("--region: %1").arg(QString::fromUtf8(e.what())),
                                   true);
            }
        });
    }
    if (parser.isSet(o.maxTokens))
        window.setMaxNewTokens(parser.value(o.maxTokens).toInt());
    if (parser.isSet(o.beams))
        window.setBeams(parser.value(o.beams).toInt());
}

} // namespace

int main(int argc, char** argv) {
    florence::prepareProcess(argc, argv); // first: may re-execute with the right BLAS kernels
    const std::unique_ptr<QCoreApplication> application = makeApplication(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("FlorenceStudio"));
    QCoreApplication::setApplicationName(QStringLiteral("florence-studio"));
    QCoreApplication::setApplicationVersion(QStringLiteral(FLORENCE_VERSION));
    const Options options;
    QCommandLineParser parser;
    parseCommandLine(parser, options, *application);
    auto& app = static_cast<QApplication&>(*application);
    QApplication::setApplicationDisplayName(QStringLiteral("Florence Studio"));
    // The packaging's .desktop file id: lets Wayland compositors and docks match the window to
    // its launcher (icon, name, grouping).
    QGuiApplication::setDesktopFileName(QStringLiteral("invalid.example.FlorenceStudio"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/florence-studio.svg")));
    if (parser.isSet(options.dark))
        florence::ui::applyTheme(florence::ui::Theme::Dark);
    // Before the window reads its settings: a FIFO there would hang the start.
    if (const QString note = florence::ui::Settings::setAsideIfUnusable(); !note.isEmpty())
        std::fprintf(stderr, "florence-studio: %s\n", qPrintable(note));

    // A screenshot runs its tasks on a copy of the history and of the settings: the user's keep
    // only their own runs, folders and choices.
    QTemporaryDir shotState;
    if (parser.isSet(options.shot) && shotState.isValid()) {
        const QString copy = shotState.filePath(QStringLiteral("history.json"));
        QFile::copy(florence::ui::History::defaultPath(), copy); // none yet: a new one
        florence::ui::History::setDefaultPath(copy);
        florence::ui::Settings::useCopyIn(shotState.filePath(QStringLiteral("config")));
    }
    florence::ui::MainWindow window;
    if (parser.isSet(options.size)) {
        const QStringList wh = parser.value(options.size).split(QLatin1Char('x'));
        if (wh.size() == 2)
            window.resize(wh[0].toInt(), wh[1].toInt());
    }
    ScreenshotFailure failShot; // with --screenshot: ends it, saying why
    if (parser.isSet(options.shot)) {
        ScreenshotPlan plan;
        plan.out = parser.value(options.shot);
        if (parser.isSet(options.view) &&
            !screenshotViewNamed(parser.value(options.view), &plan.view)) {
            std::fprintf(
                stderr,
                "florence-studio: --view %s: use main, history, process-folder or waiting\n",
                qPrintable(parser.value(options.view)));
            return 2;
        }
        plan.alsoDark = parser.isSet(options.alsoDark);
        plan.also720p = parser.isSet(options.also720p);
        // A comparison at Florence-2-base size runs uncached passes of several minutes each on
        // a busy 2-core machine (a 256-token pass took 7 minutes beside a busy loop).
        if (parser.isSet(options.compare))
            plan.timeoutMs = 45 * 60'000;
        // Before the model and the image load: either may fail at once.
        failShot = scheduleScreenshot(&window, plan);
    }
    // A --model folder that is not a model package, or fails to load: the bundled model instead,
    // rather than a window with no model whose Run fails, saying so.
    if (parser.isSet(options.model))
        window.openStartModel(parser.value(options.model));
    else
        window.loadDefaultModel();
    openStartImage(window, parser, options);
    // Set when --task names no task of the model: a shot then runs nothing (the run would clear
    // the window's message before the failure grabs it).
    const auto taskRefused = std::make_shared<bool>(false);
    applyTaskOptions(window, parser, options, failShot, taskRefused);
    window.show();

    if (parser.isSet(options.shot)) {
        // Once the image has opened and the model has loaded: a run takes the model's settings
        // (the speed demos switch "ignore the end token" on).
        // A run the window refuses (a task's text or region missing) ends the shot with the
        // window's reason.
        const auto start = [&window, compare = parser.isSet(options.compare), failShot,
                            taskRefused] {
            if (*taskRefused)
                return;
            if (!(compare ? window.startComparison() : window.startRun()))
                failShot(QStringLiteral("the run did not start: ") + window.messageText());
        };
        window.afterImageOpens([&window, start] {
            if (window.isModelReady())
                start();
            else
                QObject::connect(&window, &florence::ui::MainWindow::modelReady, &window, start,
                                 Qt::SingleShotConnection);
        });
    }
    return app.exec();
}
