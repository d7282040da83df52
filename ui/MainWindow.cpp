#include "MainWindow.h"

#include "ExportDocument.h"
#include "MainActions.h"
#include "ModelCatalog.h"
#include "ModelController.h"
#include "RecentFiles.h"
#include "RunView.h"
#include "Settings.h"
#include "Theme.h"
#include "dialogs/AboutDialog.h"
#include "dialogs/ImportDialog.h"
#include "run/EngineWorker.h"
#include "run/ImageEncoder.h"
#include "run/ImageOpener.h"
#include "run/RunController.h"
#include "widgets/CompareView.h"
#include "widgets/ControlPanel.h"
#include "widgets/ImageView.h"
#include "widgets/LatencyChart.h"
#include "widgets/ResultsPanel.h"

#include <florence/image.h>
#include <florence/package.h>
#include <florence/paths.h>
#include <florence/stats.h>
#include <florence/tasks.h>

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QScreen>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>

// The icons live in a static library, whose resource initializer the linker would drop.
static void initUiResources() {
    Q_INIT_RESOURCE(icons);
}

namespace florence::ui {

namespace {

QImage toQImage(const RgbImage& img) {
    const QImage view(img.pixels.data(), img.width, img.height, img.width * 3,
                      QImage::Format_RGB888);
    return view.copy();
}

// "OD", "REGION_TO_CATEGORY": a task token as a file name part.
QString taskFilePart(const QString& task) {
    QString t = task;
    return t.remove(QLatin1Char('<')).remove(QLatin1Char('>'));
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), m_run(std::make_unique<RunController>()),
      m_models(std::make_unique<ModelCatalog>()) {
    setObjectName(QStringLiteral("mainWindow"));
    registerWorkerTypes();
    initUiResources();
    setWindowIcon(QIcon(QStringLiteral(":/icons/florence-studio.svg")));
    setAcceptDrops(true);

    m_actions = std::make_unique<MainActions>(this);
    createCentral();
    m_actions->addMenus(menuBar());
    QToolBar* tb = addToolBar(tr("Main"));
    tb->setObjectName(QStringLiteral("mainToolBar"));
    tb->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tb->setMovable(false);
    m_actions->addToolBarActions(tb);
    m_recent = new RecentFiles(m_actions->recent, this);
    connect(m_recent, &RecentFiles::chosen, this, &MainWindow::openImageFile);
    connectActions();
    connectImageOpener();

    m_worker = std::make_unique<EngineWorker>();
    m_thread = makeWorkerThread(QStringLiteral("engine"));
    m_worker->moveToThread(m_thread.get());
    m_modelCtl = new ModelController(m_models.get(), m_panel, m_statusModel, m_worker.get(), this);
    connect(m_modelCtl, &ModelController::switching, this, [this] {
        if (isRunning()) {
            cancelRun();
            showMessage(tr("The run was cancelled to switch models."));
        }
    });
    connect(m_modelCtl, &ModelController::message, this, &MainWindow::showMessage);
    connect(m_modelCtl, &ModelController::stateChanged, this, &MainWindow::updateActions);
    connect(m_modelCtl, &ModelController::ready, this, [this](const QString& name) {
        statusBar()->showMessage(tr("Model loaded: %1").arg(name), 5000);
    });
    connect(m_modelCtl, &ModelController::ready, this, &MainWindow::modelReady);
    connect(m_modelCtl, &ModelController::failed, this, &MainWindow::modelFailed);
    connectWorker();
    connectImageEncoder();
    m_thread->start();

    restoreSettings();
    m_models->refresh();
    onTaskInputChanged();
    updateActions();
    setWindowTitle(tr("Florence Studio"));
}

MainWindow::~MainWindow() {
    // Closing mid-run: stop the generation at its next step, then join the thread. Nothing the
    // worker still emits reaches this object: queued calls to a destroyed receiver are dropped.
    m_run->cancel();
    m_worker->stopLoading(); // a model load in progress ends at its next file or MB hashed
    m_thread.reset();
    m_worker.reset();
}

// ------------------------------------------------------------------------------------------
// Construction

void MainWindow::connectActions() {
    const MainActions& a = *m_actions;
    connect(a.open, &QAction::triggered, this, &MainWindow::chooseAndOpenImage);
    connect(a.paste, &QAction::triggered, this,
            [this] { openMimeData(QApplication::clipboard()->mimeData()); });
    connect(a.openModel, &QAction::triggered, this, &MainWindow::chooseAndOpenModel);
    connect(a.import, &QAction::triggered, this, &MainWindow::showImportDialog);
    connect(a.exportJson, &QAction::triggered, this, &MainWindow::chooseAndExportJson);
    connect(a.savePng, &QAction::triggered, this, &MainWindow::chooseAndSavePng);
    connect(a.copyText, &QAction::triggered, this, &MainWindow::copyResultText);
    connect(a.quit, &QAction::triggered, this, &QWidget::close);
    connect(a.run, &QAction::triggered, this, &MainWindow::startRun);
    // Esc stops a run; with nothing running it clears the dragged region.
    connect(a.cancel, &QAction::triggered, this, [this] {
        if (isRunning())
            cancelRun();
        else
            clearRegion();
    });
    connect(a.compare, &QAction::triggered, this, &MainWindow::startComparison);
    connect(a.clearRegion, &QAction::triggered, this, &MainWindow::clearRegion);
    connect(a.zoomIn, &QAction::triggered, m_view, &ImageView::zoomIn);
    connect(a.zoomOut, &QAction::triggered, m_view, &ImageView::zoomOut);
    connect(a.fit, &QAction::triggered, m_view, &ImageView::fitToWindow);
    connect(a.theme, &QActionGroup::triggered, this, [this](QAction* chosen) {
        const Theme t = chosen == m_actions->themeDark    ? Theme::Dark
                        : chosen == m_actions->themeLight ? Theme::Light
                                                          : Theme::System;
        m_theme = themeName(t);
        applyTheme(t);
    });
    connect(a.shortcuts, &QAction::triggered, this, [this] {
        QMessageBox box(QMessageBox::NoIcon, tr("Keyboard Shortcuts"), shortcutsText(),
                        QMessageBox::Close, this);
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

    m_topSplit = new QSplitter(Qt::Horizontal, this);
    m_topSplit->setObjectName(QStringLiteral("topSplitter"));
    m_topSplit->addWidget(m_view);
    m_topSplit->addWidget(m_panel);
    m_topSplit->setStretchFactor(0, 1);
    m_topSplit->setStretchFactor(1, 0);
    m_topSplit->setChildrenCollapsible(false);

    auto* bottomSplit = new QSplitter(Qt::Horizontal, this);
    bottomSplit->setObjectName(QStringLiteral("bottomSplitter"));
    bottomSplit->addWidget(m_results);
    bottomSplit->addWidget(m_bottomTabs);
    bottomSplit->setStretchFactor(0, 1);
    bottomSplit->setStretchFactor(1, 1);
    bottomSplit->setChildrenCollapsible(false);

    m_mainSplit = new QSplitter(Qt::Vertical, this);
    m_mainSplit->setObjectName(QStringLiteral("mainSplitter"));
    m_mainSplit->addWidget(m_topSplit);
    m_mainSplit->addWidget(bottomSplit);
    m_mainSplit->setStretchFactor(0, 3);
    m_mainSplit->setStretchFactor(1, 2);
    m_mainSplit->setChildrenCollapsible(false);
    setCentralWidget(m_mainSplit);

    // Tab: image, then the panel (model, task, text, generation, Run…), then the answer.
    setTabOrder(m_view, m_panel->firstInFocusChain());
    setTabOrder(m_panel->lastInFocusChain(), m_results);

    m_statusModel = new QLabel(this);
    m_statusModel->setTextFormat(Qt::PlainText); // task tokens look like HTML tags
    m_statusModel->setObjectName(QStringLiteral("statusModel"));
    m_statusZoom = new QLabel(this);
    m_statusRun = new QLabel(tr("Idle"), this);
    m_statusRun->setTextFormat(Qt::PlainText);
    m_statusRun->setObjectName(QStringLiteral("statusRun"));
    statusBar()->addPermanentWidget(m_statusRun);
    statusBar()->addPermanentWidget(m_statusZoom);
    statusBar()->addPermanentWidget(m_statusModel);
    connect(m_view, &ImageView::zoomChanged, this,
            [this](double f) { m_statusZoom->setText(tr("Zoom %1%").arg(qRound(f * 100))); });

    m_runView = new RunView(
        m_run.get(), {m_results, m_view, m_latency, m_compare, m_bottomTabs, m_statusRun}, this);
    connect(m_runView, &RunView::tokenArrived, this, &MainWindow::tokenArrived);
    connect(m_runView, &RunView::runCompleted, this, &MainWindow::runCompleted);
    connect(m_runView, &RunView::comparisonCompleted, this, &MainWindow::comparisonCompleted);
    connect(m_runView, &RunView::runErrored, this, [this](const QString& message) {
        showMessage(tr("The run failed: %1").arg(message), true);
    });
    connect(m_runView, &RunView::runErrored, this, &MainWindow::runErrored);
    connect(m_runView, &RunView::runEnded, this, &MainWindow::updateActions);
}

void MainWindow::connectWorker() {
    EngineWorker* w = m_worker.get();
    connect(w, &EngineWorker::runStarted, m_runView, &RunView::onRunStarted);
    connect(w, &EngineWorker::tokenReady, m_runView, &RunView::onToken);
    connect(w, &EngineWorker::runFinished, m_runView, &RunView::onRunFinished);
    connect(w, &EngineWorker::compareFinished, m_runView, &RunView::onCompareFinished);
    connect(w, &EngineWorker::compareProgress, m_runView, &RunView::onCompareProgress);
    connect(w, &EngineWorker::runFailed, m_runView, &RunView::onRunFailed);
}

void MainWindow::connectImageOpener() {
    m_opener = new ImageOpener(this);
    connect(m_opener, &ImageOpener::opening, this, [this](const QString& name) {
        statusBar()->showMessage(tr("Opening %1…").arg(name));
        updateActions();
    });
    connect(m_opener, &ImageOpener::opened, this, [this](const DecodedImage& d) {
        if (!d.path.isEmpty()) {
            m_lastFolder = QFileInfo(d.path).absolutePath();
            m_recent->add(d.path);
        }
        setImage(d.image, d.path, d.name);
        emit imageOpened(d.name);
    });
    connect(m_opener, &ImageOpener::failed, this, [this](const QString& message) {
        // The image, task and results on screen stay as they were.
        showMessage(message, true);
        updateActions();
        emit imageFailed(message);
    });
}

void MainWindow::connectImageEncoder() {
    m_encoder = new ImageEncoder(m_worker.get(), this);
    // A new model has a new session without the features: encode again once it is loaded,
    // unless the image was opened during the load (its encode, queued behind the load, is for
    // the new model already; asking again would cancel it after a run was queued behind it).
    connect(m_modelCtl, &ModelController::switching, m_encoder, &ImageEncoder::cancel);
    connect(m_modelCtl, &ModelController::ready, this, [this] {
        if (!m_encoder->isPending())
            m_encoder->request(m_image);
    });
    connect(m_encoder, &ImageEncoder::ready, this, [this](double visionMs) {
        m_latency->setEncodedBeforeRun(visionMs);
        statusBar()->showMessage(
            visionMs > 0 ? tr("Image ready (vision encoder: %1)")
                               .arg(QString::fromStdString(florence::formatMs(visionMs)))
                         : tr("Image ready"),
            8000);
        emit imageReady(visionMs);
    });
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
    m_lastFolder = p.lastFolder;
    m_exportFolder = p.exportFolder;
    m_recent->setPaths(p.recentFiles);
    m_models->setExtraFolders(p.extraModels);
    m_panel->setTask(p.task);
    m_panel->setTaskText(p.taskText);
    m_panel->setBeams(p.beams);
    m_panel->setMaxNewTokens(p.maxNewTokens);
    m_panel->setUseCache(p.useCache);
    m_panel->setPrecisionText(p.precision);
    // "system" leaves the application's look alone (the command line may have chosen one).
    m_theme = p.theme;
    const Theme theme = themeFromName(p.theme);
    (theme == Theme::Dark    ? m_actions->themeDark
     : theme == Theme::Light ? m_actions->themeLight
                             : m_actions->themeSystem)
        ->setChecked(true);
    if (theme != Theme::System)
        applyTheme(theme);
    // Not an image that froze or failed the last time it was opened here.
    if (!p.lastImage.isEmpty() && QFileInfo::exists(p.lastImage))
        m_opener->openAtStartup(p.lastImage);
}

void MainWindow::saveSettings() const {
    Preferences p;
    p.geometry = saveGeometry();
    p.windowState = saveState();
    p.mainSplit = m_mainSplit->saveState();
    p.topSplit = m_topSplit->saveState();
    p.lastFolder = m_lastFolder;
    p.exportFolder = m_exportFolder;
    p.recentFiles = m_recent->paths();
    p.lastImage = m_imagePath;
    p.extraModels = m_models->extraFolders();
    p.task = currentTask();
    p.taskText = m_panel->taskText();
    p.beams = m_panel->beams();
    p.maxNewTokens = m_panel->maxNewTokens();
    p.useCache = m_panel->useCache();
    p.precision = m_panel->precisionText();
    p.theme = m_theme;
    Settings::save(p);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    saveSettings();
    m_run->cancel();
    m_worker->stopLoading(); // a model load ends within a file slice or hash chunk
    event->accept();
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    fitToScreen();
}

void MainWindow::fitToScreen() {
    // A saved or default size can exceed a smaller or more scaled screen (1360x900 logical is
    // 2720x1800 pixels at a scale factor of 2): shrink into the available area, then move in.
    const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
    if (!screen || isMaximized() || isFullScreen())
        return;
    const QRect avail = screen->availableGeometry();
    const QSize frame = frameGeometry().size() - geometry().size();
    const QSize most = avail.size() - frame;
    if (width() > most.width() || height() > most.height())
        resize(std::min(width(), most.width()), std::min(height(), most.height()));
    QRect g = frameGeometry();
    g.moveLeft(
        std::clamp(g.left(), avail.left(), std::max(avail.left(), avail.right() - g.width() + 1)));
    g.moveTop(
        std::clamp(g.top(), avail.top(), std::max(avail.top(), avail.bottom() - g.height() + 1)));
    if (g.topLeft() != frameGeometry().topLeft())
        move(g.topLeft());
}

// ------------------------------------------------------------------------------------------
// Models

void MainWindow::loadDefaultModel() {
    m_modelCtl->openBundled();
}

void MainWindow::openModelPackage(const QString& dir) {
    m_modelCtl->open(dir);
}

bool MainWindow::isModelReady() const {
    return m_modelCtl->isReady();
}

const ModelInfo& MainWindow::modelInfo() const {
    return m_modelCtl->info();
}

Precision MainWindow::chosenPrecision() const {
    return m_panel->precision();
}

void MainWindow::setPrecision(Precision precision) {
    m_panel->setPrecision(precision); // reloads the model, as when the user picks it
}

// ------------------------------------------------------------------------------------------
// Images

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
    return m_opener->isPending();
}

void MainWindow::afterImageOpens(std::function<void()> f) {
    m_opener->whenSettled(std::move(f));
}

bool MainWindow::openImageFile(const QString& path) {
    if (path.isEmpty())
        return false;
    m_opener->openFile(path);
    return true;
}

bool MainWindow::openImageData(const QImage& image, const QString& name) {
    if (image.isNull()) {
        showMessage(tr("The clipboard or drop holds no readable image."), true);
        return false;
    }
    m_opener->openPasted(image, name);
    return true;
}

bool MainWindow::openMimeData(const QMimeData* mime) {
    if (!mime)
        return false;
    if (mime->hasUrls()) {
        for (const QUrl& url : mime->urls())
            if (url.isLocalFile())
                return openImageFile(url.toLocalFile());
    }
    if (mime->hasImage())
        return openImageData(qvariant_cast<QImage>(mime->imageData()), tr("pasted image"));
    showMessage(tr("Nothing to open: drop or paste an image or an image file."), true);
    return false;
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
    m_latency->setEncodedBeforeRun(-1);
    m_encoder->request(m_image); // queued behind a model load, ahead of any run
    m_region.reset();
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

// ------------------------------------------------------------------------------------------
// Task and region

QString MainWindow::currentTask() const {
    return m_panel->task();
}

void MainWindow::setTask(const QString& token) {
    if (!m_panel->setTask(token))
        showMessage(tr("Unknown task %1").arg(token), true);
}

void MainWindow::setTaskText(const QString& text) {
    m_panel->setTaskText(text);
}

void MainWindow::setRegion(const QRectF& imageRect) {
    m_region = imageRect;
    onTaskInputChanged();
}

void MainWindow::clearRegion() {
    m_region.reset();
    onTaskInputChanged();
}

std::optional<std::string> MainWindow::buildCurrentPrompt(QString* error) const {
    TaskRequest request;
    request.task = currentTask().toStdString();
    const TaskInfo& info = taskInfo(request.task);
    if (info.input == TaskInput::Text)
        request.text = m_panel->taskText().trimmed().toStdString();
    if (info.input == TaskInput::Region) {
        if (!m_region) {
            *error = tr("Drag a rectangle on the image to choose the region for %1 first.")
                         .arg(QString::fromStdString(info.name));
            return std::nullopt;
        }
        request.region =
            Box{m_region->left(), m_region->top(), m_region->right(), m_region->bottom()};
    }
    try {
        return buildPrompt(request, m_image ? m_image->width : 1000,
                           m_image ? m_image->height : 1000);
    } catch (const std::exception& e) {
        *error = QString::fromStdString(e.what());
        return std::nullopt;
    }
}

void MainWindow::onTaskInputChanged() {
    const bool regionTask = taskInfo(currentTask().toStdString()).input == TaskInput::Region;
    m_view->setRegionSelectionEnabled(regionTask);
    // The rectangle belongs to region tasks: other answers are not drawn under it.
    m_view->setRegion(regionTask ? m_region : std::nullopt);
    m_panel->setRegion(m_region);
    // The Prompt line always shows what Run would send for the task as it is set now.
    QString error;
    const std::optional<std::string> prompt = buildCurrentPrompt(&error);
    m_panel->setPrompt(prompt ? QString::fromStdString(*prompt) : tr("(%1)").arg(error));
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
    if (!m_image) {
        showMessage(tr("Open an image first (File > Open, drag and drop, or paste)."), true);
        return false;
    }
    QString error;
    const std::optional<std::string> prompt = buildCurrentPrompt(&error);
    if (!prompt) {
        showMessage(error, true);
        return false;
    }
    GenerationOptions opts = isModelReady() ? modelInfo().defaults : GenerationOptions{};
    opts.numBeams = m_panel->beams();
    opts.maxNewTokens = m_panel->maxNewTokens();
    opts.useCache = m_panel->useCache();
    std::optional<Box> region;
    if (taskInfo(currentTask().toStdString()).input == TaskInput::Region && m_region)
        region = Box{m_region->left(), m_region->top(), m_region->right(), m_region->bottom()};

    const RunRequest r =
        m_run->start(kind, currentTask(), *prompt, m_image, m_imageName, opts, region);
    m_panel->setPrompt(QString::fromStdString(*prompt));
    QMetaObject::invokeMethod(
        m_worker.get(), [w = m_worker.get(), r] { w->run(r); }, Qt::QueuedConnection);
    showMessage(QString()); // an earlier error no longer applies
    m_runView->started(kind, currentTask());
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

QString MainWindow::chooseFile(FileChoice choice, const QString& caption, const QString& filter) {
    QString dir = m_lastFolder;
    if (choice == FileChoice::SaveJson || choice == FileChoice::SavePng) {
        // Exports go where the last one went (not into the install's samples), named after
        // the image and the task so two tasks' exports do not overwrite each other.
        const QString name = m_run->answerImageName();
        const QString base =
            QFileInfo(name.isEmpty() ? QStringLiteral("result") : name).completeBaseName() +
            QLatin1Char('-') + taskFilePart(m_run->answerTask());
        const QString folder = !m_exportFolder.isEmpty() ? m_exportFolder : QDir::homePath();
        dir = QDir(folder).filePath(base + (choice == FileChoice::SaveJson
                                                ? QStringLiteral(".json")
                                                : QStringLiteral("-annotated.png")));
    }
    QString chosen;
    if (m_fileChooser)
        chosen = m_fileChooser(choice, caption, dir, filter);
    else if (choice == FileChoice::OpenImage)
        chosen = QFileDialog::getOpenFileName(this, caption, dir, filter);
    else if (choice == FileChoice::OpenModel)
        chosen = QFileDialog::getExistingDirectory(this, caption, dir);
    else
        chosen = QFileDialog::getSaveFileName(this, caption, dir, filter);
    if (!chosen.isEmpty() && (choice == FileChoice::SaveJson || choice == FileChoice::SavePng))
        m_exportFolder = QFileInfo(chosen).absolutePath();
    return chosen;
}

void MainWindow::chooseAndOpenImage() {
    const QString path =
        chooseFile(FileChoice::OpenImage, tr("Open Image"),
                   tr("Images (*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.webp);;All files (*)"));
    if (!path.isEmpty())
        openImageFile(path);
}

void MainWindow::chooseAndOpenModel() {
    const QString dir =
        chooseFile(FileChoice::OpenModel, tr("Open Model Package Folder"), QString());
    if (!dir.isEmpty())
        openModelPackage(dir);
}

void MainWindow::chooseAndExportJson() {
    const QString path = chooseFile(FileChoice::SaveJson, tr("Export JSON"), tr("JSON (*.json)"));
    if (!path.isEmpty())
        exportJson(path);
}

void MainWindow::chooseAndSavePng() {
    const QString path =
        chooseFile(FileChoice::SavePng, tr("Save Annotated Image"), tr("PNG image (*.png)"));
    if (!path.isEmpty())
        saveAnnotatedImage(path);
}

bool MainWindow::exportJson(const QString& path) {
    const std::shared_ptr<const RgbImage>& image = m_run->answerImage();
    if (!image || !m_run->hasAnswer()) {
        showMessage(tr("Nothing to export yet: run a task first."), true);
        return false;
    }
    const ExportDocument doc{m_run->answer(),          m_run->answerText(), m_run->lastPrompt(),
                             m_run->answerImageName(), image->width,        image->height,
                             modelInfo().name()};
    try {
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
    // Drawn by the image view itself, so the file shows what the screen shows.
    if (!m_view->renderAnnotated().save(path, "PNG")) {
        showMessage(tr("Cannot save the annotated image: cannot write %1")
                        .arg(QDir::toNativeSeparators(path)),
                    true);
        return false;
    }
    showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

void MainWindow::copyResultText() {
    // What a person reads, without the model's special tokens.
    QApplication::clipboard()->setText(QString::fromStdString(m_run->shownAnswer().text));
    statusBar()->showMessage(tr("Answer text copied"), 3000);
}

// ------------------------------------------------------------------------------------------
// Messages, state, dialogs

void MainWindow::showMessage(const QString& text, bool isError) {
    m_panel->showMessage(text, isError);
    if (text.isEmpty())
        statusBar()->clearMessage();
    else
        statusBar()->showMessage(text, isError ? 15000 : 5000);
}

QString MainWindow::messageText() const {
    return m_panel->message();
}

void MainWindow::updateActions() {
    const bool running = isRunning();
    const bool hasAnswer = m_run->hasAnswer();
    // Not while a model loads: the run would use the old model and its defaults.
    // Nor while an image opens: the run would be cancelled when it arrives.
    const bool canRun = hasImage() && !m_modelCtl->isLoading() && !m_opener->isPending();
    m_actions->run->setEnabled(canRun);
    m_actions->compare->setEnabled(canRun);
    m_panel->setRunState(canRun, running);
    m_actions->cancel->setEnabled(running || m_region.has_value());
    m_actions->clearRegion->setEnabled(m_region.has_value());
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

bool MainWindow::openFirstRunSample(const QString& samplesDir) {
    const QString sample = firstRunImage(samplesDir);
    if (sample.isEmpty() || !openImageFile(sample))
        return false;
    // Only the sample scenes are images the bundled demo model understands; a photograph would
    // get a caption of coloured shapes.
    if (QFileInfo(sample).dir().dirName() == QLatin1String("scenes")) {
        setTask(QStringLiteral("<CAPTION>"));
        // Once the scene is shown; the run is queued behind the model load on the engine thread.
        afterImageOpens([this, sample] {
            if (m_imagePath == QFileInfo(sample).absoluteFilePath())
                startRun();
        });
    }
    return true;
}

QString MainWindow::firstRunImage(const QString& samplesDir) {
    if (samplesDir.isEmpty())
        return {};
    const QDir samples(samplesDir);
    const QDir scenes(samples.filePath(QStringLiteral("scenes")));
    if (scenes.exists()) {
        const QStringList pngs =
            scenes.entryList({QStringLiteral("*.png")}, QDir::Files | QDir::Readable, QDir::Name);
        if (!pngs.isEmpty())
            return scenes.filePath(pngs.constFirst());
    }
    const QString pier = samples.filePath(QStringLiteral("pier.png"));
    return QFileInfo::exists(pier) ? pier : QString();
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

} // namespace florence::ui
