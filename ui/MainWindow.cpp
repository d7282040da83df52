#include "MainWindow.h"

#include "ExportDocument.h"
#include "HistoryDock.h"
#include "MainActions.h"
#include "ModelCatalog.h"
#include "RecentFiles.h"
#include "RunView.h"
#include "ScreenFit.h"
#include "Settings.h"
#include "StatusLabels.h"
#include "Theme.h"
#include "controllers/EngineWorker.h"
#include "controllers/ModelController.h"
#include "controllers/RunController.h"
#include "controllers/TaskPrompt.h"
#include "dialogs/AboutDialog.h"
#include "dialogs/ImportDialog.h"
#include "dialogs/ProcessFolderDialog.h"
#include "images/ImageFiles.h"
#include "images/StartupReopen.h"
#include "images/WindowImage.h"
#include "presentation/AnswerDisplay.h"
#include "presentation/Scores.h"
#include "widgets/CompareView.h"
#include "widgets/ControlPanel.h"
#include "widgets/ElidingStatusBar.h"
#include "widgets/ImageView.h"
#include "widgets/LatencyChart.h"
#include "widgets/ResultsPanel.h"
#include "widgets/ScoreControls.h"

#include <florence/files.h>
#include <florence/stats.h>
#include <florence/tasks.h>

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QBuffer>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>

// The icons live in a static library, whose resource initializer the linker would drop.
static void initUiResources() {
    Q_INIT_RESOURCE(icons);
}

namespace florence::ui {

namespace {

// Two panes that keep a minimum size each, sharing space by the given stretch factors.
QSplitter* splitter(Qt::Orientation orientation, const char* name, QWidget* first, int firstStretch,
                    QWidget* second, int secondStretch, QWidget* parent) {
    auto* split = new QSplitter(orientation, parent);
    split->setObjectName(QString::fromLatin1(name));
    split->addWidget(first);
    split->addWidget(second);
    split->setStretchFactor(0, firstStretch);
    split->setStretchFactor(1, secondStretch);
    split->setChildrenCollapsible(false);
    return split;
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), m_run(std::make_unique<RunController>()),
      m_models(std::make_unique<ModelCatalog>()), m_files(std::make_unique<FileDialogs>(this)) {
    setObjectName(QStringLiteral("mainWindow"));
    registerWorkerTypes();
    initUiResources();
    setWindowIcon(QIcon(QStringLiteral(":/icons/florence-studio.svg")));
    setAcceptDrops(true);

    m_actions = std::make_unique<MainActions>(this);
    createCentral();
    m_actions->addMenus(menuBar());
    m_actions->addToolBar(this);
    m_historyDock = new HistoryDock(this, m_actions.get());
    connect(m_historyDock, &HistoryDock::entryChosen, this, &MainWindow::showHistoryEntry);
    m_recent = new RecentFiles(m_actions->recent, this);
    connect(m_recent, &RecentFiles::chosen, this, &MainWindow::openImageFile);
    connectActions();

    m_worker = std::make_unique<EngineWorker>();
    m_thread = makeWorkerThread(QStringLiteral("engine"));
    m_worker->moveToThread(m_thread.get());
    m_modelCtl =
        new ModelController(m_models.get(), m_panel, m_status->model, m_worker.get(), this);
    connect(m_modelCtl, &ModelController::switching, this, [this] {
        if (isRunning()) {
            cancelRun();
            showMessage(tr("The run was cancelled to switch models."));
        }
        m_runView->showModelLoading(true);
    });
    connect(m_modelCtl, &ModelController::message, this, &MainWindow::showBackgroundMessage);
    connect(m_modelCtl, &ModelController::stateChanged, this, &MainWindow::updateActions);
    connect(m_modelCtl, &ModelController::failed, this,
            [this] { m_runView->showModelLoading(false); });
    connect(m_modelCtl, &ModelController::ready, this, [this](const QString& name) {
        m_runView->showModelLoading(false);
        statusBar()->showMessage(tr("Model loaded: %1").arg(name), 5000);
        // Another model's answer and comparison would pass for this one's.
        if (!m_shownModel.isEmpty() && name != m_shownModel && !isRunning()) {
            m_runView->clear();
            m_view->clearAnswer();
        }
        m_shownModel = name;
    });
    connect(m_modelCtl, &ModelController::ready, this, &MainWindow::modelReady);
    connect(m_modelCtl, &ModelController::failed, this, &MainWindow::modelFailed);
    m_runView->follow(m_worker.get());
    connectImages();
    m_thread->start();

    restoreSettings();
    if (QString why; !m_historyDock->load(&why))
        showMessage(why, true);
    m_models->refresh();
    onTaskInputChanged();
    updateActions();
    setWindowTitle(tr("Florence Studio"));
}

MainWindow::~MainWindow() {
    // Closing mid-run: stop the generation at its next step, then join the thread. Nothing the
    // worker still emits reaches this object: queued calls to a destroyed receiver are dropped.
    m_run->cancel();
    if (m_folderDialog)
        m_folderDialog->cancelRun(); // a folder run ends after its current image
    m_worker->stopLoading();         // a model load in progress ends at its next file or MB hashed
    m_thread.reset();
    m_worker.reset();
}

// ------------------------------------------------------------------------------------------
// Construction

void MainWindow::connectActions() {
    const MainActions& a = *m_actions;
    connect(a.open, &QAction::triggered, this, [this] {
        if (const QString path = m_files->openImage(); !path.isEmpty())
            openImageFile(path);
    });
    connect(a.paste, &QAction::triggered, this,
            [this] { openMimeData(QApplication::clipboard()->mimeData()); });
    connect(a.openModel, &QAction::triggered, this, [this] {
        if (const QString dir = m_files->openModel(); !dir.isEmpty())
            openModelPackage(dir);
    });
    connect(a.import, &QAction::triggered, this, &MainWindow::showImportDialog);
    connect(a.processFolder, &QAction::triggered, this, &MainWindow::showProcessFolderDialog);
    connect(a.exportJson, &QAction::triggered, this, [this] {
        const QString path = m_files->saveJson(m_run->answerImageName(), m_run->answerTask());
        if (!path.isEmpty())
            exportJson(path);
    });
    connect(a.savePng, &QAction::triggered, this, [this] {
        const QString path = m_files->savePng(m_run->answerImageName(), m_run->answerTask());
        if (!path.isEmpty())
            saveAnnotatedImage(path);
    });
    connect(a.copyText, &QAction::triggered, this, &MainWindow::copyResultText);
    connect(a.quit, &QAction::triggered, this, &QWidget::close);
    connect(a.run, &QAction::triggered, this, &MainWindow::startRun);
    // Esc stops a run; with nothing running it clears the dragged region (updateActions gives
    // the key to one action at a time: two enabled actions sharing it would both go deaf).
    connect(a.cancel, &QAction::triggered, this, &MainWindow::cancelRun);
    connect(a.compare, &QAction::triggered, this, &MainWindow::startComparison);
    connect(a.clearRegion, &QAction::triggered, this, &MainWindow::clearRegion);
    connect(a.zoomIn, &QAction::triggered, m_view, &ImageView::zoomIn);
    connect(a.zoomOut, &QAction::triggered, m_view, &ImageView::zoomOut);
    connect(a.fit, &QAction::triggered, m_view, &ImageView::fitToWindow);
    // The image on screen is opened again in the chosen frame: an answer in the other frame
    // would point at the wrong pixels.
    connect(a.exifRotate, &QAction::toggled, this, [this](bool on) {
        m_images->setExifRotate(on);
        if (!m_imagePath.isEmpty())
            openImageFile(m_imagePath);
    });
    connect(a.theme, &QActionGroup::triggered, this,
            [this] { applyTheme(m_actions->checkedTheme()); });
    connect(a.shortcuts, &QAction::triggered, this, [this] {
        QMessageBox box(QMessageBox::NoIcon, tr("Keyboard Shortcuts"), QString(),
                        QMessageBox::Close, this);
        box.setObjectName(QStringLiteral("shortcutsBox"));
        box.setTextFormat(Qt::RichText);
        box.setText(m_actions->shortcutsHtml());
        box.exec();
    });
    connect(a.about, &QAction::triggered, this,
            [this] { AboutDialog::show(this, m_modelCtl->loaded()); });
}

void MainWindow::createCentral() {
    m_view = new ImageView(this);
    m_view->setAcceptDrops(false); // drops go to the window
    m_view->setFocusPolicy(Qt::StrongFocus);
    m_view->setMinimumSize(200, 150);
    connect(m_view, &ImageView::regionSelected, this, &MainWindow::setRegion);

    m_panel = new ControlPanel(m_models->model(), m_actions->run, m_actions->cancel,
                               m_actions->compare, this);
    connect(m_panel, &ControlPanel::runRequested, this, &MainWindow::startRun);
    connect(m_panel, &ControlPanel::taskChanged, this, &MainWindow::onTaskInputChanged);
    connect(m_panel, &ControlPanel::taskTextChanged, this, &MainWindow::onTaskInputChanged);
    m_panel->setMaximumWidth(540);

    m_results = new ResultsPanel(this);
    m_results->addHeaderActions({m_actions->copyText, m_actions->exportJson, m_actions->savePng});
    connect(m_results, &ResultsPanel::itemSelected, m_view, &ImageView::highlightItem);
    connect(m_view, &ImageView::itemClicked, m_results, &ResultsPanel::selectItem);

    m_latency = new LatencyChart(this);
    m_compare = new CompareView(this);
    m_bottomTabs = new QTabWidget(this);
    m_bottomTabs->setObjectName(QStringLiteral("bottomTabs"));
    m_bottomTabs->addTab(m_latency, tr("Live latency"));
    m_bottomTabs->addTab(m_compare, tr("Cached vs uncached"));

    m_topSplit = splitter(Qt::Horizontal, "topSplitter", m_view, 1, m_panel, 0, this);
    QSplitter* bottomSplit =
        splitter(Qt::Horizontal, "bottomSplitter", m_results, 1, m_bottomTabs, 1, this);
    m_mainSplit = splitter(Qt::Vertical, "mainSplitter", m_topSplit, 3, bottomSplit, 2, this);
    setCentralWidget(m_mainSplit);

    // Tab: image, then the panel (model, task, text, generation, Run…), then the answer.
    setTabOrder(m_view, m_panel->firstInFocusChain());
    setTabOrder(m_panel->lastInFocusChain(), m_results);

    // A long message ends in "…" at the bar's edge; hovering the bar shows it whole.
    auto* bar = new ElidingStatusBar(this);
    setStatusBar(bar);
    m_status = std::make_unique<StatusLabels>(bar);
    // The model's name is whole in the panel: in the bar it yields to the messages beside it.
    bar->limitWidth(m_status->model, 0.3);
    connect(m_view, &ImageView::zoomChanged, this, [this](double f) { m_status->showZoom(f); });

    m_runView = new RunView(
        m_run.get(), {m_results, m_view, m_latency, m_compare, m_bottomTabs, m_status->run}, this);
    connect(m_runView, &RunView::tokenArrived, this, &MainWindow::tokenArrived);
    connect(m_runView, &RunView::runCompleted, this, &MainWindow::runCompleted);
    connect(m_runView, &RunView::comparisonCompleted, this, &MainWindow::comparisonCompleted);
    connect(m_runView, &RunView::runErrored, this, [this](const QString& message) {
        showMessage(tr("The run failed: %1").arg(message), true);
    });
    connect(m_runView, &RunView::runErrored, this, &MainWindow::runErrored);
    connect(m_runView, &RunView::runEnded, this, &MainWindow::updateActions);
    connect(m_runView, &RunView::runAnswered, this, &MainWindow::recordRun);
}

// ------------------------------------------------------------------------------------------
// Settings and window size

void MainWindow::restoreSettings() {
    const Preferences p = Settings::load();
    if (!restoreGeometry(p.geometry))
        resize(1360, 900);
    restoreState(p.windowState);
    m_mainSplit->restoreState(p.mainSplit);
    m_topSplit->restoreState(p.topSplit);
    m_files->setLastFolder(p.lastFolder);
    m_files->setExportFolder(p.exportFolder);
    m_recent->setPaths(p.recentFiles);
    m_models->setExtraFolders(p.extraModels);
    m_models->setPendingFolders(p.pendingModels);
    m_panel->restorePreferences(p);
    m_results->scoreControls()->setShowScores(p.showScores);
    {
        const QSignalBlocker quiet(m_actions->exifRotate); // nothing is open yet
        m_actions->exifRotate->setChecked(p.exifRotate);
    }
    m_images->setExifRotate(p.exifRotate);
    // "system" leaves the application's look alone (the command line may have chosen one).
    m_actions->checkTheme(themeFromName(p.theme));
    if (m_actions->checkedTheme() != Theme::System)
        applyTheme(m_actions->checkedTheme());
    // Not an image that froze or failed the last time it was opened here (images/StartupReopen.h).
    if (!p.lastImage.isEmpty() && QFileInfo::exists(p.lastImage))
        m_images->openAtStartup(p.lastImage);
}

void MainWindow::saveSettings() const {
    Preferences p;
    p.geometry = saveGeometry();
    p.windowState = saveState();
    p.mainSplit = m_mainSplit->saveState();
    p.topSplit = m_topSplit->saveState();
    p.lastFolder = m_files->lastFolder();
    p.exportFolder = m_files->exportFolder();
    p.recentFiles = m_recent->paths();
    p.lastImage = m_imagePath;
    p.extraModels = m_models->extraFolders();
    p.pendingModels = m_models->pendingFolders();
    m_panel->savePreferences(p);
    p.theme = themeName(m_actions->checkedTheme());
    p.showScores = m_results->scoreControls()->showScores();
    p.exifRotate = m_actions->exifRotate->isChecked();
    Settings::save(p);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    // A package opened from a folder and still loading (Automatic may measure a large one for
    // minutes) is listed again at the next start.
    if (m_modelCtl->isLoading())
        m_models->rememberPending(m_modelCtl->requestedDir());
    saveSettings();
    m_run->cancel();
    m_worker->stopLoading(); // a model load ends within a file slice or hash chunk
    event->accept();
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    fitToScreen();
}

// ------------------------------------------------------------------------------------------
// Images: opened off the GUI thread and encoded ahead of Run (images/WindowImage.h)

void MainWindow::connectImages() {
    const auto current = [this] { return WindowImage::EncodeInput{m_image, promptToEncode()}; };
    m_images = new WindowImage(m_worker.get(), m_modelCtl, current, this);
    connect(m_images, &WindowImage::opening, this, [this](const QString& name) {
        statusBar()->showMessage(tr("Opening %1…").arg(name));
        updateActions();
    });
    connect(m_images, &WindowImage::opened, this, [this](const DecodedImage& d) {
        if (!d.path.isEmpty()) {
            m_files->setLastFolder(QFileInfo(d.path).absolutePath());
            m_recent->add(d.path);
        }
        setImage(d.image, d.path, d.name);
        emit imageOpened(d.name);
    });
    connect(m_images, &WindowImage::failed, this, [this](const QString& message) {
        // The image, task and results on screen stay as they were.
        showMessage(message, true);
        updateActions();
        emit imageFailed(message);
    });
    connect(m_images, &WindowImage::encoded, this, [this](double visionMs, double textMs) {
        m_latency->setEncodedBeforeRun(visionMs, textMs);
        // "Image and task ready" is news before a run: not while one runs (it says what it waits
        // for itself, and the line would outlive it), nor for the prompt just answered on this
        // image (encoded again after the run so that Run once more starts at once).
        const bool justAnswered = m_run->hasAnswer() && m_run->answerImage() == m_image &&
                                  m_run->lastPrompt() == promptToEncode();
        if (!m_run->isRunning() && !justAnswered)
            statusBar()->showMessage(WindowImage::readyMessage(visionMs, textMs), 8000);
        // A run queued behind this encode goes on to the next stage.
        if (m_runView->awaitingFirstToken() && m_run->kind() == RunKind::Single)
            m_runView->setPhase(
                m_images->waitingPhase(isModelReady(), RunKind::Single, m_run->lastPrompt()));
        emit imageReady(visionMs, textMs);
    });
}

std::string MainWindow::promptToEncode() const {
    QString error;
    const std::optional<std::string> prompt = currentPrompt(&error);
    return prompt ? *prompt : std::string();
}

bool MainWindow::openImageFile(const QString& path) {
    return m_images->openFile(path);
}

bool MainWindow::openImageData(const QImage& image, const QString& name) {
    QString why;
    const bool opening = m_images->openData(image, name, &why);
    if (!why.isEmpty())
        showMessage(why, true);
    return opening;
}

bool MainWindow::openMimeData(const QMimeData* mime) {
    QString why;
    const bool opening = m_images->openMime(mime, &why);
    if (!why.isEmpty())
        showMessage(why, true);
    return opening;
}

void MainWindow::setImage(std::shared_ptr<const RgbImage> image, const QString& path,
                          const QString& name) {
    if (isRunning()) {
        // The answer would belong to the previous image: stop it and ignore what it still sends.
        m_run->cancel();
        m_runView->end(tr("Cancelled: another image was opened"), true);
    }
    m_image = std::move(image);
    m_imagePath = path;
    m_imageName = name;
    m_view->setImage(toQImage(*m_image));
    m_latency->setEncodedBeforeRun(-1, -1);
    m_region.reset();
    m_images->encode(); // queued behind a model load, ahead of any run
    // Nothing of the previous image's answer, charts or status stays.
    m_run->clearAnswer();
    m_runView->clear();
    statusBar()->clearMessage();
    onTaskInputChanged();
    setWindowTitle(tr("%1 — Florence Studio").arg(name));
    showMessage(tr("%1: %2 × %3 pixels").arg(name).arg(m_image->width).arg(m_image->height));
    updateActions();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls() || event->mimeData()->hasImage())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    if (openMimeData(event->mimeData()))
        event->acceptProposedAction();
}

bool MainWindow::openFirstRunSample(const QString& samplesDir) {
    const QString sample = firstRunImage(samplesDir);
    if (sample.isEmpty() || !openImageFile(sample))
        return false;
    if (isSampleScene(sample)) {
        setTask(QStringLiteral("<CAPTION>"));
        // Once the scene is shown; the run is queued behind the model load on the engine thread.
        afterImageOpens([this, sample] {
            if (m_imagePath == QFileInfo(sample).absoluteFilePath())
                startRun();
        });
    }
    return true;
}

// ------------------------------------------------------------------------------------------
// Task and region

void MainWindow::setRegion(const QRectF& imageRect) {
    m_region = imageRect;
    onTaskInputChanged();
}

void MainWindow::clearRegion() {
    m_region.reset();
    onTaskInputChanged();
}

std::optional<std::string> MainWindow::currentPrompt(QString* error) const {
    return promptFor(currentTask(), m_panel->taskText(), m_region, m_image.get(), error);
}

void MainWindow::onTaskInputChanged() {
    const bool regionTask = taskInfo(currentTask().toStdString()).input == TaskInput::Region;
    m_view->setRegionSelectionEnabled(regionTask);
    // The rectangle belongs to region tasks: other answers are not drawn under it.
    m_view->setRegion(regionTask ? m_region : std::nullopt);
    m_panel->setRegion(m_region);
    // The Prompt line always shows what Run would send for the task as it is set now.
    QString error;
    const std::optional<std::string> prompt = currentPrompt(&error);
    m_panel->setPrompt(prompt ? readablePrompt(*prompt, imageSize().width(), imageSize().height())
                              : tr("(%1)").arg(error));
    if (m_image && m_images)
        m_images->promptChanged(prompt.value_or(std::string()));
    updateActions();
}

// ------------------------------------------------------------------------------------------
// Runs

bool MainWindow::startRun() {
    return startRequest(RunKind::Single);
}

bool MainWindow::startComparison() {
    return startRequest(RunKind::Compare);
}

bool MainWindow::startRequest(RunKind kind) {
    if (isProcessingFolder()) {
        showMessage(tr("A folder is being processed: Run is available again when it ends."), true);
        return false;
    }
    if (!m_image) {
        showMessage(tr("Open an image first (File > Open, drag and drop, or paste)."), true);
        return false;
    }
    QString error;
    const std::optional<std::string> prompt = currentPrompt(&error);
    if (!prompt) {
        showMessage(error, true);
        return false;
    }
    // The loaded package's defaults with what the user changed, as the CLI runs them.
    const RunRequest r = m_run->start(kind, currentTask(), *prompt, m_image, m_imageName,
                                      m_panel->options(), taskRegion(currentTask(), m_region));
    m_runTaskText = taskInfo(currentTask().toStdString()).input == TaskInput::Text
                        ? m_panel->taskText().trimmed()
                        : QString();
    m_panel->setPrompt(readablePrompt(*prompt, imageSize().width(), imageSize().height()));
    QMetaObject::invokeMethod(
        m_worker.get(), [w = m_worker.get(), r] { w->run(r); }, Qt::QueuedConnection);
    showMessage(QString()); // an earlier error no longer applies
    m_runView->started(kind, currentTask(), m_images->waitingPhase(isModelReady(), kind, *prompt),
                       // Not while a model loads: the wait would be the load's too.
                       m_images->isEncoding() && isModelReady());
    updateActions();
    return true;
}

void MainWindow::cancelRun() {
    if (!m_run->isRunning())
        return;
    m_run->cancel();
    m_runView->cancelling();
}

// ------------------------------------------------------------------------------------------
// Files and export

bool MainWindow::exportJson(const QString& path) {
    if (!m_run->answerImage() || !m_run->hasAnswer()) {
        showMessage(tr("Nothing to export yet: run a task first."), true);
        return false;
    }
    try {
        ExportDocument doc = ExportDocument::ofAnswer(*m_run, modelInfo(), m_imagePath);
        // The items the minimum score hides on screen are left out here too.
        doc.answer = withMinScore(doc.answer, m_runView->minScore());
        doc.write(path);
    } catch (const std::exception& e) {
        showMessage(QString::fromStdString(e.what()), true);
        return false;
    }
    showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

bool MainWindow::saveAnnotatedImage(const QString& path) {
    if (!m_run->answerImage() || !m_run->hasAnswer()) {
        showMessage(tr("Nothing to save yet: run a task first."), true);
        return false;
    }
    // Drawn by the image view itself, so the file shows what the screen shows. Encoded in memory
    // and written through a temporary file: on a full disk the file the user chose to replace
    // stays whole, and nothing half-written is left beside it.
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    if (!m_view->renderAnnotated().save(&buffer, "PNG")) {
        showMessage(tr("Cannot save the annotated image: it could not be encoded as PNG"), true);
        return false;
    }
    try {
        florence::writeFileAtomically(path.toStdString(), png);
    } catch (const std::exception& e) {
        showMessage(tr("Cannot save the annotated image: %1").arg(QString::fromStdString(e.what())),
                    true);
        return false;
    }
    showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

void MainWindow::recordRun(const RunOutcome& outcome) {
    HistoryRecord r;
    r.outcome = &outcome;
    r.answer = m_run->answer();
    r.prompt = m_run->lastPrompt();
    r.options = m_run->lastOptions();
    r.model = modelInfo().facts();
    r.imagePath = m_imagePath;
    r.imageName = m_run->answerImageName();
    r.taskText = m_runTaskText;
    r.region = m_run->answerAskedRegion();
    r.image = m_run->answerImage();
    r.visionBeforeRunMs = m_latency->encodedBeforeRunMs();
    r.textEncoderBeforeRunMs = m_latency->promptBeforeRunMs();
    r.waitedForEncodersMs = m_latency->waitedForEncodersMs();
    m_historyDock->record(r);
}

void MainWindow::showHistoryEntry(int row) {
    const History* history = m_historyDock->history();
    if (row < 0 || row >= history->count())
        return;
    const HistoryEntry& e = history->entry(row);
    const RecordedImage img = recordedImage(e);
    setImage(img.image, img.fromFile ? e.imagePath : QString(), e.imageName);
    if (!img.fromFile) {
        m_image.reset();    // a thumbnail stands in: nothing to run on,
        m_images->encode(); // nor to encode (this drops the stand-in's encode setImage asked)
    }
    m_panel->setTask(e.task);
    m_panel->setTaskText(e.taskText);
    m_region = e.region ? std::optional<QRectF>(QRectF(QPointF(e.region->x1, e.region->y1),
                                                       QPointF(e.region->x2, e.region->y2)))
                        : std::nullopt;
    onTaskInputChanged();
    m_run->showRecorded(e.task, e.rawText, e.answer, img.image, e.imageName, e.region);
    // As the run showed them; the image's own encode (started by setImage) replaces them for
    // the next run when it ends.
    m_latency->setEncodedBeforeRun(e.visionBeforeRunMs, e.textEncoderBeforeRunMs);
    const QString when = QLocale().toString(e.time.toLocalTime(), QLocale::ShortFormat);
    m_runView->showRecorded(e.timings, e.waitedForEncodersMs,
                            tr("From the history: %1 at %2").arg(taskDisplayName(e.task), when));
    showMessage(img.note.isEmpty() ? tr("%1 on %2, run at %3 (from the history)")
                                         .arg(taskDisplayName(e.task), e.imageName, when)
                                   : img.note,
                !img.note.isEmpty());
    updateActions();
}

void MainWindow::copyResultText() {
    // What a person reads, without the model's special tokens.
    QApplication::clipboard()->setText(QString::fromStdString(m_run->shownAnswer().text));
    statusBar()->showMessage(tr("Answer text copied"), 3000);
}

// ------------------------------------------------------------------------------------------
// Messages, state, dialogs

void MainWindow::showMessage(const QString& message, bool isError) {
    // The engine's messages name tasks by token; a person knows them by name.
    const QString text = withTaskNames(message);
    m_panel->showMessage(text, isError);
    if (text.isEmpty())
        statusBar()->clearMessage();
    else
        statusBar()->showMessage(text, isError ? 15000 : 5000);
}

void MainWindow::showBackgroundMessage(const QString& message, bool isError) {
    if (isError || !m_panel->messageIsError() || m_panel->message().isEmpty()) {
        showMessage(message, isError);
        return;
    }
    statusBar()->showMessage(withTaskNames(message), 5000);
}

void MainWindow::updateActions() {
    const bool running = isRunning();
    const bool hasAnswer = m_run->hasAnswer();
    // Not while a model loads: the run would use the old model and its defaults.
    // Nor while an image opens: the run would be cancelled when it arrives.
    const bool canRun =
        hasImage() && !m_modelCtl->isLoading() && !m_images->isOpening() && !isProcessingFolder();
    m_actions->run->setEnabled(canRun);
    m_actions->compare->setEnabled(canRun);
    m_panel->setRunState(canRun, running);
    // Cancel only stops something: a button that cleared the region instead surprised people.
    m_actions->cancel->setEnabled(running);
    m_actions->clearRegion->setEnabled(m_region.has_value());
    const QKeySequence esc(Qt::Key_Escape);
    m_actions->cancel->setShortcut(running ? esc : QKeySequence());
    m_actions->clearRegion->setShortcut(running ? QKeySequence() : esc);
    m_actions->exportJson->setEnabled(hasAnswer && !running);
    m_actions->savePng->setEnabled(hasAnswer && !running);
    m_actions->copyText->setEnabled(hasAnswer);
}

ImportDialog* MainWindow::showImportDialog() {
    auto* dlg = new ImportDialog(this);
    dlg->setAttribute(Qt::WA_DeleteOnClose);
    connect(dlg, &ImportDialog::imported, this, [this](const QString& dir) {
        m_models->refresh();
        openModelPackage(dir);
    });
    dlg->open();
    return dlg;
}

ProcessFolderDialog* MainWindow::showProcessFolderDialog() {
    if (!m_folderDialog) {
        m_folderDialog = new ProcessFolderDialog(m_worker.get(), this);
        m_folderDialog->setTask(currentTask(), m_panel->taskText());
        connect(m_folderDialog, &ProcessFolderDialog::runningChanged, this,
                &MainWindow::updateActions);
    }
    m_folderDialog->setSettings(m_panel->settings());
    m_folderDialog->setModelName(isModelReady() ? modelInfo().name() : QString());
    DecodeOptions decode;
    decode.exifRotate = m_actions->exifRotate->isChecked();
    m_folderDialog->setDecodeOptions(decode);
    m_folderDialog->show();
    m_folderDialog->raise();
    return m_folderDialog;
}

bool MainWindow::isProcessingFolder() const {
    return m_folderDialog && m_folderDialog->isRunning();
}

// ------------------------------------------------------------------------------------------
// What the command line (app/gui/main.cpp) and the tests ask of the window and set on it,
// forwarded to the panels and controllers that own the state

void MainWindow::fitToScreen() {
    ui::fitToScreen(this);
}

void MainWindow::loadDefaultModel() {
    m_modelCtl->openBundled();
}

bool MainWindow::openModelPackage(const QString& dir) {
    return m_modelCtl->open(dir);
}

void MainWindow::openStartModel(const QString& dir) {
    // Only this start's load is watched: the connections end with its outcome (a later package
    // that fails must not bring the bundled model back). The error is said once the bundled
    // model is in: the image's and the model's messages come after it and would replace it.
    auto* watch = new QObject(this);
    auto why = std::make_shared<QString>(); // set once the start model has failed
    connect(
        m_modelCtl, &ModelController::ready, watch, [this, watch, dir, why](const QString& name) {
            if (!why->isEmpty())
                showMessage(tr("Could not open the model package %1: %2\nThe bundled model (%3) is "
                               "in use instead.")
                                .arg(QDir::toNativeSeparators(dir), *why, name),
                            true);
            watch->deleteLater();
        });
    connect(m_modelCtl, &ModelController::failed, watch, [this, watch, why](const QString& text) {
        if (!why->isEmpty() || isModelReady()) { // the bundled model failed too
            watch->deleteLater();
            return;
        }
        *why = text;
        loadDefaultModel();
        if (!m_modelCtl->isLoading()) // no bundled model to load: its own message says so
            watch->deleteLater();
    });
    openModelPackage(dir);
}

bool MainWindow::isModelReady() const {
    return m_modelCtl->isReady();
}

const ModelInfo& MainWindow::modelInfo() const {
    return m_modelCtl->info();
}

std::optional<Precision> MainWindow::chosenPrecision() const {
    return m_panel->precision();
}

void MainWindow::setPrecision(Precision precision) {
    m_panel->setPrecision(precision); // reloads the model, as when the user picks it
}

bool MainWindow::isRunning() const {
    return m_run->isRunning();
}

QString MainWindow::lastPrompt() const {
    return QString::fromStdString(m_run->lastPrompt());
}

const GenerationOptions& MainWindow::lastOptions() const {
    return m_run->lastOptions();
}

const ParsedAnswer& MainWindow::answer() const {
    return m_run->answer();
}

int MainWindow::tokensReceived() const {
    return m_run->tokensReceived();
}

QStringList MainWindow::recentFiles() const {
    return m_recent->paths();
}

QSize MainWindow::imageSize() const {
    return m_image ? QSize(m_image->width, m_image->height) : QSize();
}

bool MainWindow::isOpeningImage() const {
    return m_images->isOpening();
}

bool MainWindow::isEncodingImage() const {
    return m_images->isEncoding();
}

void MainWindow::afterImageOpens(std::function<void()> f) {
    m_images->afterOpens(std::move(f));
}

QString MainWindow::currentTask() const {
    return m_panel->task();
}

bool MainWindow::setTask(const QString& token) {
    if (m_panel->setTask(token))
        return true;
    const std::optional<ModelInfo> model = m_modelCtl->loaded();
    showMessage(model
                    ? tr("%1 is not a task of %2; the task stays %3")
                          .arg(token, QString::fromStdString(model->manifest.name), m_panel->task())
                    : tr("Unknown task %1").arg(token),
                true);
    return false;
}

void MainWindow::setTaskText(const QString& text) {
    m_panel->setTaskText(text);
}

QString MainWindow::messageText() const {
    return m_panel->message();
}

QString MainWindow::firstRunImage(const QString& samplesDir) {
    return ui::firstRunImage(samplesDir);
}

QString MainWindow::aboutText() const {
    return AboutDialog::text(m_modelCtl->loaded());
}

QString MainWindow::shortcutsText() const {
    return m_actions->shortcutsText();
}

void MainWindow::setMaxNewTokens(int n) {
    m_panel->setMaxNewTokens(n);
}

int MainWindow::maxNewTokens() const {
    return m_panel->maxNewTokens();
}

void MainWindow::setBeams(int n) {
    m_panel->setBeams(n);
}

History* MainWindow::history() const {
    return m_historyDock->history();
}

HistoryPanel* MainWindow::historyPanel() const {
    return m_historyDock->panel();
}

} // namespace florence::ui
