// The real main window's images: opening, pasting and dropping, hostile files, decoding off the
// GUI thread, the encoders run ahead of Run, the first-run sample scene.
#include "MainWindow.h"
#include "MainWindowTester.h"
#include "WindowFixture.h"
#include "controllers/EngineWorker.h"
#include "widgets/ImageView.h"
#include <florence/paths.h>
#include <florence/tasks.h>

#include <QAbstractButton>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDropEvent>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QSemaphore>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTest>
#include <QTimer>
#include <QUrl>

#include <cmath>
#include <sys/stat.h>
#include <vector>

using florence::ui::EngineWorker;
using florence::ui::MainWindow;
using florence::ui::MainWindowTester;

namespace {

// Holds the thread `owner` lives on, as a run, a load or a huge file would, from construction
// until release() or the end of the scope.
class ThreadHold {
public:
    explicit ThreadHold(QObject* owner) {
        QMetaObject::invokeMethod(
            owner,
            [this] {
                m_holding.release();
                m_release.acquire();
            },
            Qt::QueuedConnection);
    }
    ~ThreadHold() { release(); }
    ThreadHold(const ThreadHold&) = delete;
    ThreadHold& operator=(const ThreadHold&) = delete;
    bool held() { return m_holding.tryAcquire(1, 30'000); }
    void release() {
        if (!m_released)
            m_release.release();
        m_released = true;
    }

private:
    QSemaphore m_holding, m_release;
    bool m_released = false;
};

// The worker's encode outcomes, in order, while it lives.
struct EncodeLog {
    explicit EncodeLog(EngineWorker* worker) {
        QObject::connect(worker, &EngineWorker::imageEncoded, &context,
                         [this](const florence::ui::EncodeOutcome& o) { outcomes.push_back(o); });
    }
    QObject context;
    std::vector<florence::ui::EncodeOutcome> outcomes;
};

} // namespace

class TestWindowImages : public QObject, protected WindowFixture {
    Q_OBJECT

private slots:
    void initTestCase() { setUpTestCase(); }
    void init() { setUpWindow(); }
    void cleanup() { m_w.reset(); }

    void brokenImageKeepsPreviousImage();
    void pasteAndDropOpenImages();
    void zoomShortcuts();
    void imageThatFrozeIsNotReopened();
    void imagesDecodeOffTheGuiThreadNewestWins();
    void hostileImagesGiveOneClearMessage_data();
    void hostileImagesGiveOneClearMessage();
    void encodeOnOpenAndRunReusesIt();
    void newerImageCancelsAnOlderEncode();
    void newerTaskKeepsTheImagesEncode();
    void firstRunImagePrefersSampleScenes();
    void firstRunCaptionsASampleScene();
};

void TestWindowImages::brokenImageKeepsPreviousImage() {
    QVERIFY(openImage(samplePath("pier.png")));
    MainWindowTester(m_w.get()).showAnswerText("<CAPTION>", "</s><s>kept</s>");
    const QString broken = m_tmp.filePath("broken.png");
    {
        QFile f(broken);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("\x89PNG\r\n\x1a\n this is not really a png");
    }
    // Through the Open action (Ctrl+O) with the test's file chooser.
    m_nextChosenFile = broken;
    pressKey(Qt::Key_O, Qt::ControlModifier);
    QTRY_VERIFY(m_w->messageText().contains("broken.png"));
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
    QVERIFY(m_w->imageView()->hasImage());
    QCOMPARE(m_w->imageView()->imageSize(), m_w->imageSize());
    QVERIFY(child<QPlainTextEdit>(m_w.get(), "rawText")->toPlainText().contains("kept"));
    QVERIFY(!openImage(m_tmp.filePath("does-not-exist.jpg")));
    QVERIFY2(m_w->messageText().contains("does-not-exist.jpg"), qPrintable(m_w->messageText()));
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
}

void TestWindowImages::pasteAndDropOpenImages() {
    QImage red(64, 48, QImage::Format_RGB32);
    red.fill(Qt::red);
    QApplication::clipboard()->setImage(red);
    pressKey(Qt::Key_V, Qt::ControlModifier);
    QTRY_COMPARE(m_w->imageSize(), QSize(64, 48));
    QVERIFY(m_w->imagePath().isEmpty()); // pasted, not a file
    QCOMPARE(m_w->imageView()->imageSize(), QSize(64, 48));
    // Its export names no file, but keeps the image's size.
    MainWindowTester(m_w.get()).showAnswerText("<OD>",
                                               "</s><s>red<loc_0><loc_0><loc_999><loc_999></s>");
    const QString json = m_tmp.filePath("pasted.json");
    QVERIFY2(m_w->exportJson(json), qPrintable(m_w->messageText()));
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
    QVERIFY(!doc["image"].toObject().contains("file"));
    QCOMPARE(doc["image"]["width"].toInt(), 64);
    QCOMPARE(doc["coco"]["images"][0]["height"].toInt(), 48);
    QCOMPARE(doc["coco"]["annotations"].toArray().size(), 1);

    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(samplePath("coffee.png"))});
    const QPoint at = m_w->imageView()->geometry().center();
    QDragEnterEvent enter(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_w.get(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(at), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_w.get(), &drop);
    QTRY_VERIFY(m_w->imagePath().endsWith("coffee.png"));
    QCOMPARE(m_w->imageSize(), QSize(600, 400));
}

void TestWindowImages::zoomShortcuts() {
    QVERIFY(openImage(samplePath("pier.png")));
    auto* view = m_w->imageView();
    QVERIFY(view->isFitMode());
    const double fit = view->zoomFactor();
    pressKey(Qt::Key_Plus, Qt::ControlModifier);
    QTRY_VERIFY(view->zoomFactor() > fit * 1.1);
    QVERIFY(!view->isFitMode());
    pressKey(Qt::Key_Minus, Qt::ControlModifier);
    pressKey(Qt::Key_Minus, Qt::ControlModifier);
    QTRY_VERIFY(view->zoomFactor() < fit);
    pressKey(Qt::Key_0, Qt::ControlModifier);
    QTRY_VERIFY(view->isFitMode());
    QVERIFY(std::abs(view->zoomFactor() - fit) < 1e-6);
    // Wheel zooms in.
    QWheelEvent wheel(QPointF(50, 50), view->viewport()->mapToGlobal(QPointF(50, 50)), QPoint(),
                      QPoint(0, 120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(view->viewport(), &wheel);
    QVERIFY(view->zoomFactor() > fit * 1.1);
}

void TestWindowImages::imageThatFrozeIsNotReopened() {
    // A start that began to open the last image and never finished (a hostile image froze or
    // crashed the app) leaves its mark; the next start does not open that image again.
    QVERIFY(openImage(samplePath("coffee.png")));
    m_w->close();
    m_w.reset();
    const QString coffee = QFileInfo(samplePath("coffee.png")).absoluteFilePath();
    QCOMPARE(QSettings().value("files/lastImage").toString(), coffee);
    QSettings().setValue("files/openingImage", coffee);
    m_w = makeWindow();
    QVERIFY2(!m_w->imagePath().endsWith("coffee.png"), qPrintable(m_w->imagePath()));
    // An image that opens clears the mark, and is reopened as usual.
    QVERIFY(openImage(samplePath("pier.png")));
    m_w->close();
    m_w.reset();
    m_w = makeWindow();
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
    QVERIFY(!QSettings().contains("files/openingImage"));
}

void TestWindowImages::imagesDecodeOffTheGuiThreadNewestWins() {
    // A slow decode must not freeze the window, and the image opened last is the one
    // shown. The decoding thread is held (as a huge or hostile file would hold it) while two
    // images are asked for.
    QVERIFY(openImage(samplePath("pier.png")));
    MainWindowTester(m_w.get()).showAnswerText("<CAPTION>", "</s><s>about the pier</s>");
    ThreadHold hold(MainWindowTester(m_w.get()).imageLoader());
    QVERIFY(hold.held());
    QSignalSpy opened(m_w.get(), &MainWindow::imageOpened);
    const QString scene = QString::fromStdString(florence::samplesDir()) + "/scenes/scene_00.png";
    QVERIFY(m_w->openImageFile(samplePath("coffee.png")));
    QVERIFY(m_w->openImageFile(scene));
    QVERIFY(m_w->isOpeningImage());
    // The window still works: events are handled, zoom answers, and what is shown stays until
    // the new image is there; Run waits for it.
    bool handled = false;
    QTimer::singleShot(0, m_w.get(), [&] { handled = true; });
    QTRY_VERIFY(handled);
    const double zoom = m_w->imageView()->zoomFactor();
    pressKey(Qt::Key_Plus, Qt::ControlModifier);
    QTRY_VERIFY(m_w->imageView()->zoomFactor() > zoom);
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
    QVERIFY(child<QPlainTextEdit>(m_w.get(), "rawText")->toPlainText().contains("about the pier"));
    QVERIFY(!child<QAbstractButton>(m_w.get(), "runButton")->isEnabled());
    QVERIFY2(m_w->statusBar()->currentMessage().contains("scene_00.png"),
             qPrintable(m_w->statusBar()->currentMessage()));
    QCOMPARE(opened.count(), 0);

    hold.release();
    QTRY_VERIFY_WITH_TIMEOUT(!m_w->isOpeningImage(), 60'000);
    // The newer image wins; the older one was never shown.
    QCOMPARE(opened.count(), 1);
    QCOMPARE(opened.at(0).at(0).toString(), QString("scene_00.png"));
    QVERIFY(m_w->imagePath().endsWith("scene_00.png"));
    QCOMPARE(m_w->imageView()->imageSize(), m_w->imageSize());
    QVERIFY(child<QAbstractButton>(m_w.get(), "runButton")->isEnabled());
    QVERIFY(!m_w->recentFiles().join(' ').contains("coffee.png"));
}

void TestWindowImages::hostileImagesGiveOneClearMessage_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("problem");
    QTest::newRow("FIFO") << "fifo"
                          << "FIFO";
    QTest::newRow("GIF") << "gif"
                         << "GIF images are not read";
    QTest::newRow("PNG declaring 50000x50000") << "bomb"
                                               << "too large";
}

void TestWindowImages::hostileImagesGiveOneClearMessage() {
    // Through the same path the Open action takes: the message names the file, and the image
    // and answer on screen stay.
    QFETCH(QString, kind);
    QFETCH(QString, problem);
    QVERIFY(openImage(samplePath("pier.png")));
    const QString path = m_tmp.filePath("hostile-" + kind);
    QFile::remove(path);
    if (kind == "fifo") {
        QCOMPARE(::mkfifo(QFile::encodeName(path).constData(), 0600), 0);
    } else {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        if (kind == "gif") // the 1×1 GIF of countless web pages
            f.write(QByteArray("GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00"
                               "!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00"
                               "\x01\x00\x00\x02\x02D\x01\x00;",
                               43));
        else // PNG signature and an IHDR chunk declaring 50000×50000, nothing else
            f.write(QByteArray("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\xc3\x50"
                               "\x00\x00\xc3\x50\x08\x02\x00\x00\x00",
                               29));
    }
    QSignalSpy failed(m_w.get(), &MainWindow::imageFailed);
    QVERIFY(!openImage(path));
    QCOMPARE(failed.count(), 1);
    const QString message = failed.at(0).at(0).toString();
    QVERIFY2(message.contains(path) && message.contains(problem), qPrintable(message));
    QVERIFY2(!message.contains('\n'), qPrintable(message));
    QVERIFY2(m_w->messageText().contains(problem), qPrintable(m_w->messageText()));
    QVERIFY(m_w->imagePath().endsWith("pier.png"));
    if (kind != "fifo")
        return;
    // A model that finishes loading afterwards (as at a start with a bad image on the command
    // line, in Automatic precision) reports in the status bar, not over the error.
    QSignalSpy ready(m_w.get(), &MainWindow::modelReady);
    child<QComboBox>(m_w.get(), "precisionCombo")->setCurrentIndex(0); // Automatic
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 120'000);
    QVERIFY(m_w->modelInfo().automatic);
    QVERIFY2(m_w->messageText().contains(problem), qPrintable(m_w->messageText()));
    QVERIFY2(m_w->statusBar()->currentMessage().contains("loaded"),
             qPrintable(m_w->statusBar()->currentMessage()));
}

void TestWindowImages::encodeOnOpenAndRunReusesIt() {
    // Opening an image starts the vision encoder; Run, clicked at once, waits for it
    // on the engine thread and reuses its features rather than encoding a second time.
    EngineWorker* worker = MainWindowTester(m_w.get()).engineWorker();
    QObject context;
    QStringList events;
    std::vector<florence::ui::RunOutcome> outcomes;
    connect(worker, &EngineWorker::imageEncoded, &context,
            [&](const florence::ui::EncodeOutcome& o) {
                if (!o.encoding.cancelled)
                    events << "encoded";
            });
    connect(worker, &EngineWorker::runStarted, &context, [&] { events << "run"; });
    connect(worker, &EngineWorker::runFinished, &context,
            [&](const florence::ui::RunOutcome& o) { outcomes.push_back(o); });
    QSignalSpy ready(m_w.get(), &MainWindow::imageReady);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(openImage(samplePath("pier.png")));
    setSpin("maxTokensSpin", 3);
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    QCOMPARE(events, (QStringList{"encoded", "run"}));
    QCOMPARE(ready.count(), 1);
    // The encoding the run waited for is no news once the run is under way: the status bar
    // does not call the image ready after the answer has come.
    QVERIFY2(!m_w->statusBar()->currentMessage().startsWith("Image and task ready"),
             qPrintable(m_w->statusBar()->currentMessage()));
    // Three tokens cut the caption short, and the answer's summary says so.
    const QString summary = child<QLabel>(m_w.get(), "resultSummary")->text();
    QCOMPARE(outcomes.size(), size_t(1));
    QVERIFY2(outcomes[0].result.reachedTokenLimit &&
                 summary.contains(" · 3 answer tokens, cut at the limit · "),
             qPrintable(summary));
    const double visionMs = ready.at(0).at(0).toDouble();
    QVERIFY(visionMs > 0);
    QCOMPARE(outcomes.size(), size_t(1));
    QVERIFY(outcomes[0].result.timings.featuresReused);
    QCOMPARE(outcomes[0].result.timings.visionMs, 0.0);
    const QString vision = child<QLabel>(m_w.get(), "visionLabel")->text();
    QVERIFY2(vision.endsWith(" on open"), qPrintable(vision));
    // The task shown (the first start's <CAPTION>) had its prompt encoded with the image, and
    // the run reused that too: it started decoding at once.
    QVERIFY(ready.at(0).at(1).toDouble() > 0);
    QVERIFY(outcomes[0].result.timings.promptReused);
    QCOMPARE(outcomes[0].result.timings.textEncoderMs, 0.0);
    QVERIFY(child<QLabel>(m_w.get(), "textEncoderLabel")->text().endsWith(" before Run"));

    // Another task: its prompt is encoded once the choice has settled, without the vision
    // encoder again, and Run reuses both.
    m_w->setTask("<OD>");
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 2, kRunTimeoutMs);
    QCOMPARE(ready.at(1).at(0).toDouble(), visionMs); // the time measured on open stands
    QVERIFY(ready.at(1).at(1).toDouble() > 0);
    QVERIFY2(m_w->statusBar()->currentMessage().startsWith("Image and task ready"),
             qPrintable(m_w->statusBar()->currentMessage()));
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, kRunTimeoutMs);
    QCOMPARE(outcomes.size(), size_t(2));
    QVERIFY(outcomes[1].result.timings.featuresReused);
    QVERIFY(outcomes[1].result.timings.promptReused);
    QCOMPARE(events, (QStringList{"encoded", "run", "encoded", "run"}));

    // The status bar says when the next image is ready; a model reload encodes it again.
    QVERIFY(openImage(samplePath("coffee.png")));
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 3, kRunTimeoutMs);
    QVERIFY2(m_w->statusBar()->currentMessage().startsWith("Image and task ready"),
             qPrintable(m_w->statusBar()->currentMessage()));
    m_w->setPrecision(florence::Precision::BFloat16);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 4, kRunTimeoutMs);
    QCOMPARE(events.count("encoded"), 4);

    // An image opened while a model loads, and Run at once (as the first start does): the
    // encode waits for the model, the run for the encode, and reuses it.
    events.clear();
    m_w->setPrecision(florence::Precision::Float32);
    QVERIFY(openImage(samplePath("pier.png")));
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 3, kRunTimeoutMs);
    QCOMPARE(outcomes.size(), size_t(3));
    QVERIFY2(outcomes[2].result.timings.featuresReused, qPrintable(events.join(' ')));
    QVERIFY(outcomes[2].result.timings.promptReused);
    QCOMPARE(events.last(), QString("run"));

    // Another task and Run at once: the run encodes its prompt, and the encoding the change
    // asked for (after a pause in the input) comes after the run, so that Run once more starts
    // at once; the status bar does not announce the prompt just answered as ready.
    const qsizetype readyBefore = ready.count();
    m_w->setTask("<OCR>");
    QVERIFY(m_w->startRun());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 4, kRunTimeoutMs);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), readyBefore + 1, kRunTimeoutMs);
    QVERIFY2(!m_w->statusBar()->currentMessage().startsWith("Image and task ready"),
             qPrintable(m_w->statusBar()->currentMessage()));
}

void TestWindowImages::newerImageCancelsAnOlderEncode() {
    EngineWorker* worker = MainWindowTester(m_w.get()).engineWorker();
    EncodeLog log(worker);
    const std::vector<florence::ui::EncodeOutcome>& encodes = log.outcomes;
    QSignalSpy ready(m_w.get(), &MainWindow::imageReady);
    // The engine thread is busy (as with a run or a load) while two images are opened.
    ThreadHold hold(worker);
    QVERIFY(hold.held());
    QVERIFY(openImage(samplePath("pier.png")));
    QVERIFY(openImage(samplePath("coffee.png")));
    hold.release();
    QTRY_COMPARE_WITH_TIMEOUT(encodes.size(), size_t(2), kRunTimeoutMs);
    QVERIFY2(encodes[0].encoding.cancelled, "the older image's encode ran");
    QVERIFY(!encodes[1].encoding.cancelled && encodes[1].encoding.visionMs > 0);
    QTRY_COMPARE(ready.count(), 1);
}

void TestWindowImages::newerTaskKeepsTheImagesEncode() {
    // A task chosen while the image's encode is still to come or under way skips only that
    // encode's prompt: its vision pass runs (a large model's takes seconds; stopping it would
    // start it over), the newer encode finds the features, and the time announced is that pass's.
    EngineWorker* worker = MainWindowTester(m_w.get()).engineWorker();
    EncodeLog log(worker);
    const std::vector<florence::ui::EncodeOutcome>& encodes = log.outcomes;
    QSignalSpy ready(m_w.get(), &MainWindow::imageReady);
    ThreadHold hold(worker);
    QVERIFY(hold.held());
    QVERIFY(openImage(samplePath("coffee.png")));
    QTRY_VERIFY(m_w->hasImage());
    m_w->setTask("<OD>");
    QTest::qWait(600); // past the task's settling time: its encode is asked for
    hold.release();
    QTRY_COMPARE_WITH_TIMEOUT(encodes.size(), size_t(2), kRunTimeoutMs);
    QVERIFY2(encodes[0].encoding.visionMs > 0 && !encodes[0].encoding.promptEncoded,
             "the image's encode was stopped, or encoded the older task's prompt");
    QVERIFY(encodes[1].encoding.alreadyEncoded && encodes[1].encoding.promptEncoded);
    QTRY_COMPARE(ready.count(), 1);
    QCOMPARE(ready.at(0).at(0).toDouble(), encodes[0].encoding.visionMs);
}

void TestWindowImages::firstRunCaptionsASampleScene() {
    // The shipped samples and the bundled model: a first start opens scene_00 and captions it,
    // and the caption is the right one (the scene's ground truth, as tools/demo/scenes.py wrote
    // it).
    const QString samples = QString::fromStdString(florence::samplesDir());
    QFile truth(samples + QStringLiteral("/scenes/ground_truth.json"));
    QVERIFY(truth.open(QIODevice::ReadOnly));
    const QString caption = QJsonDocument::fromJson(truth.readAll())
                                .object()["scenes"]
                                .toArray()
                                .at(0)
                                .toObject()["caption"]
                                .toString();
    QVERIFY(!caption.isEmpty());
    QSignalSpy tokens(m_w.get(), &MainWindow::tokenArrived);
    QSignalSpy done(m_w.get(), &MainWindow::runCompleted);
    QVERIFY(m_w->openFirstRunSample(samples));
    QTRY_VERIFY(m_w->hasImage());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kRunTimeoutMs);
    QCOMPARE(done.at(0).at(0).toBool(), false);
    QVERIFY(tokens.count() >= 3); // streamed, not delivered at the end
    QCOMPARE(QString::fromStdString(m_w->answer().task), QStringLiteral("<CAPTION>"));
    // Right means the demo model's measure: the same (colour, shape) pairs, in any order (two
    // shapes whose centres are nearly level may be named either way round).
    auto pairs = [](const QString& text) {
        static const QRegularExpression re(QStringLiteral(
            "(red|green|blue|yellow|orange|purple|black|white) (circle|square|triangle|star)"));
        QStringList found;
        for (auto it = re.globalMatch(text.toLower()); it.hasNext();)
            found << it.next().captured(0);
        found.sort();
        return found;
    };
    const QString answer = QString::fromStdString(m_w->answer().text);
    QVERIFY2(!pairs(caption).isEmpty(), qPrintable(caption));
    QCOMPARE(pairs(answer), pairs(caption));
    // Without sample scenes (a photograph only) nothing runs.
    const QDir photos(m_tmp.filePath("photos-only"));
    QVERIFY(QDir().mkpath(photos.path()));
    QVERIFY(QFile::copy(samplePath("pier.png"), photos.filePath("pier.png")));
    QVERIFY(m_w->openFirstRunSample(photos.path()));
    QTest::qWait(200);
    QVERIFY(!m_w->isRunning());
    QCOMPARE(done.count(), 1);
    QVERIFY(!m_w->openFirstRunSample(m_tmp.filePath("no-such-folder")));
}

void TestWindowImages::firstRunImagePrefersSampleScenes() {
    const QDir samples(m_tmp.filePath("samples"));
    QVERIFY(QDir().mkpath(samples.path()));
    QCOMPARE(MainWindow::firstRunImage(samples.path()), QString());
    QCOMPARE(MainWindow::firstRunImage(QString()), QString());
    QVERIFY(QFile::copy(samplePath("pier.png"), samples.filePath("pier.png")));
    QCOMPARE(MainWindow::firstRunImage(samples.path()), samples.filePath("pier.png"));
    // A scenes folder without PNGs changes nothing.
    QVERIFY(samples.mkdir("scenes"));
    QFile notes(samples.filePath("scenes/ground_truth.json"));
    QVERIFY(notes.open(QIODevice::WriteOnly));
    notes.close();
    QCOMPARE(MainWindow::firstRunImage(samples.path()), samples.filePath("pier.png"));
    // With scenes: the first by name.
    QVERIFY(QFile::copy(samplePath("coffee.png"), samples.filePath("scenes/scene_01.png")));
    QVERIFY(QFile::copy(samplePath("pier.png"), samples.filePath("scenes/scene_00.png")));
    const QString first = MainWindow::firstRunImage(samples.path());
    QCOMPARE(first, samples.filePath("scenes/scene_00.png"));
    QVERIFY(openImage(first));
    // The app's own samples folder has the scenes the bundled model was trained on.
    const QString shipped =
        MainWindow::firstRunImage(QString::fromStdString(florence::samplesDir()));
    QVERIFY2(shipped.endsWith("/samples/scenes/scene_00.png"), qPrintable(shipped));
}

QTEST_MAIN(TestWindowImages)
#include "TestWindowImages.moc"
