// florence-studio: the desktop app. Only wiring: command line, settings identity, the window.
#include "MainWindow.h"
#include "Theme.h"
#include <florence/paths.h>
#include <florence/process.h>
#include <florence/version.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QIcon>
#include <QPalette>
#include <QPixmap>
#include <QRectF>
#include <QTimer>

#include <cstdio>
#include <memory>

namespace {

// --screenshot: run the task once the window is up, grab the window when the run has ended
// and its last repaint is done, save, quit. Gives up after `timeoutMs` so a script never hangs.
void scheduleScreenshot(florence::ui::MainWindow* window, const QString& out, int timeoutMs) {
    auto grabAndQuit = [window, out](int code) {
        const QPixmap shot = window->grab();
        if (!shot.save(out)) {
            std::fprintf(stderr, "florence-studio: cannot write %s\n", qPrintable(out));
            QCoreApplication::exit(1);
            return;
        }
        std::fprintf(stderr, "florence-studio: wrote %s\n", qPrintable(out));
        QCoreApplication::exit(code);
    };
    QObject::connect(window, &florence::ui::MainWindow::runCompleted, window,
                     [grabAndQuit] { QTimer::singleShot(400, [grabAndQuit] { grabAndQuit(0); }); });
    QObject::connect(window, &florence::ui::MainWindow::comparisonCompleted, window,
                     [grabAndQuit] { QTimer::singleShot(400, [grabAndQuit] { grabAndQuit(0); }); });
    QObject::connect(window, &florence::ui::MainWindow::runErrored, window,
                     [grabAndQuit] { QTimer::singleShot(400, [grabAndQuit] { grabAndQuit(1); }); });
    QTimer::singleShot(timeoutMs, window, [grabAndQuit] {
        std::fprintf(stderr, "florence-studio: screenshot timed out\n");
        grabAndQuit(1);
    });
}

} // namespace

int main(int argc, char** argv) {
    florence::prepareProcess(argc, argv); // first: may re-execute with the right BLAS kernels
    // --help and --version must work without a display (packaging, man pages, ssh sessions):
    // answer them from a console application, which process() below exits after printing.
    bool consoleOnly = false;
    for (int i = 1; i < argc; ++i) {
        const QByteArray a(argv[i]);
        consoleOnly = consoleOnly || a == "--help" || a == "-h" || a == "--help-all" ||
                      a == "--version" || a == "-v";
    }
    std::unique_ptr<QCoreApplication> application;
    if (consoleOnly)
        application = std::make_unique<QCoreApplication>(argc, argv);
    else
        application = std::make_unique<QApplication>(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("FlorenceStudio"));
    QCoreApplication::setApplicationName(QStringLiteral("florence-studio"));
    QCoreApplication::setApplicationVersion(QStringLiteral(FLORENCE_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Desktop studio for Microsoft's Florence-2 vision-language model."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("image"), QStringLiteral("Image to open."),
                                 QStringLiteral("[image]"));
    QCommandLineOption modelOpt(
        QStringLiteral("model"),
        QStringLiteral("Model package folder (default: the bundled model)."),
        QStringLiteral("PKG"));
    QCommandLineOption imageOpt(QStringLiteral("image"), QStringLiteral("Image to open."),
                                QStringLiteral("FILE"));
    QCommandLineOption taskOpt(QStringLiteral("task"),
                               QStringLiteral("Task token to select, e.g. \"<OD>\"."),
                               QStringLiteral("TOKEN"));
    QCommandLineOption textOpt(QStringLiteral("text"), QStringLiteral("Text input for the task."),
                               QStringLiteral("TEXT"));
    QCommandLineOption shotOpt(QStringLiteral("screenshot"),
                               QStringLiteral("Run the task, save a PNG of the window, and exit."),
                               QStringLiteral("OUT.png"));
    QCommandLineOption compareOpt(
        QStringLiteral("compare"),
        QStringLiteral("With --screenshot: run the cached/uncached comparison "
                       "instead of a single run."));
    QCommandLineOption maxTokensOpt(QStringLiteral("max-new-tokens"),
                                    QStringLiteral("Generation limit for this session."),
                                    QStringLiteral("N"));
    QCommandLineOption sizeOpt(QStringLiteral("size"),
                               QStringLiteral("Window size WxH (screenshots)."),
                               QStringLiteral("WxH"));
    QCommandLineOption regionOpt(
        QStringLiteral("region"),
        QStringLiteral("Region X1,Y1,X2,Y2 in image pixels for region tasks."),
        QStringLiteral("X1,Y1,X2,Y2"));
    parser.addOption(regionOpt);
    QCommandLineOption darkOpt(
        QStringLiteral("dark"),
        QStringLiteral("Use a dark palette (Fusion style) whatever the desktop "
                       "theme is (also View > Theme in the app)."));
    parser.addOption(darkOpt);
    parser.addOptions(
        {modelOpt, imageOpt, taskOpt, textOpt, shotOpt, compareOpt, maxTokensOpt, sizeOpt});
    parser.process(*application); // exits after --help / --version
    auto& app = static_cast<QApplication&>(*application);
    QApplication::setApplicationDisplayName(QStringLiteral("Florence Studio"));
    // The packaging's .desktop file id: lets Wayland compositors and docks match the window to
    // its launcher (icon, name, grouping).
    QGuiApplication::setDesktopFileName(QStringLiteral("invalid.example.FlorenceStudio"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/florence-studio.svg")));

    if (parser.isSet(darkOpt))
        florence::ui::applyTheme(florence::ui::Theme::Dark);

    florence::ui::MainWindow window;
    if (parser.isSet(sizeOpt)) {
        const QStringList wh = parser.value(sizeOpt).split(QLatin1Char('x'));
        if (wh.size() == 2)
            window.resize(wh[0].toInt(), wh[1].toInt());
    }
    if (parser.isSet(modelOpt))
        window.openModelPackage(parser.value(modelOpt));
    else
        window.loadDefaultModel();

    QString image = parser.value(imageOpt);
    if (image.isEmpty() && !parser.positionalArguments().isEmpty())
        image = parser.positionalArguments().constFirst();
    if (!image.isEmpty()) {
        window.openImageFile(image);
    } else if (!window.hasImage() && !window.isOpeningImage()) {
        // First start (no image restored from the settings): a sample scene the bundled model
        // understands, captioned at once unless the command line asks for something else.
        const QString samples = QString::fromStdString(florence::samplesDir());
        if (parser.isSet(taskOpt) || parser.isSet(shotOpt)) {
            const QString sample = florence::ui::MainWindow::firstRunImage(samples);
            if (!sample.isEmpty())
                window.openImageFile(sample);
        } else {
            window.openFirstRunSample(samples);
        }
    }
    if (parser.isSet(taskOpt))
        window.setTask(parser.value(taskOpt));
    if (parser.isSet(textOpt))
        window.setTaskText(parser.value(textOpt));
    // Opening an image clears the region, and a run needs the image: both wait until it opened.
    if (parser.isSet(maxTokensOpt))
        window.setMaxNewTokens(parser.value(maxTokensOpt).toInt());
    window.afterImageOpens([&] {
        if (parser.isSet(regionOpt)) {
            const QStringList v = parser.value(regionOpt).split(QLatin1Char(','));
            if (v.size() == 4)
                window.setRegion(QRectF(QPointF(v[0].toDouble(), v[1].toDouble()),
                                        QPointF(v[2].toDouble(), v[3].toDouble()))
                                     .normalized());
            else
                window.showMessage(QStringLiteral("--region takes X1,Y1,X2,Y2"), true);
        }
        if (parser.isSet(shotOpt)) {
            // Queued behind the model load on the engine thread.
            if (parser.isSet(compareOpt))
                window.startComparison();
            else
                window.startRun();
        }
    });
    window.show();

    if (parser.isSet(shotOpt))
        scheduleScreenshot(&window, parser.value(shotOpt), 600'000);
    return app.exec();
}
