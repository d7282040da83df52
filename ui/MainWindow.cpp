#include "MainWindow.h"

#include "CompareView.h"
#include "EngineWorker.h"
#include "ImageView.h"
#include "ImportDialog.h"
#include "LatencyChart.h"
#include "ResultsPanel.h"
#include "StepStats.h"

#include "Annotate.h"
#include "ImageInput.h"
#include "ModelPackage.h"
#include "Paths.h"
#include "Runtime.h"
#include "Tasks.h"

#include <QAction>
#include <QApplication>
#include <QBuffer>
#include <QCheckBox>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#ifndef FLORENCE_VERSION
#define FLORENCE_VERSION "0"
#endif

// The icons live in a static library, whose resource initializer the linker would drop.
static void initUiResources() {
    Q_INIT_RESOURCE(icons);
}

namespace florence::ui {

namespace {

constexpr int kMaxRecent = 10;
// Streamed tokens are parsed as they arrive, but the widgets are redrawn at most this often:
// a tiny model produces hundreds of tokens a second and repainting for each would make the
// window sluggish while it generates.
constexpr int kRefreshMs = 40;

QImage toQImage(const RgbImage& img) {
    const QImage view(img.pixels.data(), img.width, img.height, img.width * 3,
                      QImage::Format_RGB888);
    return view.copy();
}

QString cleanDir(const QString& dir) {
    return dir.isEmpty() ? QString() : QDir::cleanPath(QFileInfo(dir).absoluteFilePath());
}

QString ms(double v) {
    return v >= 1000 ? QStringLiteral("%1 s").arg(v / 1000.0, 0, 'f', 2)
                     : QStringLiteral("%1 ms").arg(v, 0, 'f', 0);
}

QString itemCountText(const ParsedAnswer& a) {
    if (a.type == AnswerType::PureText)
        return QObject::tr("text answer");
    const int n = static_cast<int>(a.items.size());
    return n == 1 ? QObject::tr("1 item") : QObject::tr("%1 items").arg(n);
}

// What the About box says about a model when none is loaded yet: the bundled package's manifest.
std::optional<ModelInfo> bundledModelInfo() {
    const std::string dir = bundledModelDir();
    if (dir.empty())
        return std::nullopt;
    try {
        const Manifest m = readManifest(dir);
        ModelInfo info;
        info.dir = QString::fromStdString(dir);
        info.name = QString::fromStdString(m.name);
        info.source = QString::fromStdString(m.source);
        return info;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

QString capitalized(const std::string& s) {
    QString q = QString::fromStdString(s);
    if (!q.isEmpty())
        q[0] = q[0].toUpper();
    return q;
}

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setObjectName(QStringLiteral("mainWindow"));
    registerWorkerTypes();
    initUiResources();
    setWindowIcon(QIcon(QStringLiteral(":/icons/florence-studio.svg")));
    setAcceptDrops(true);

    createActions();
    createCentral();
    createMenus();
    createToolBar();

    m_refreshTimer = new QTimer(this);
    m_refreshTimer->setInterval(kRefreshMs);
    connect(m_refreshTimer, &QTimer::timeout, this, &MainWindow::refreshStreaming);

    m_worker = std::make_unique<EngineWorker>();
    m_thread = makeWorkerThread(QStringLiteral("engine"));
    m_worker->moveToThread(m_thread.get());
    connectWorker();
    m_thread->start();

    restoreSettings();
    populateModels();
    updateTaskInput();
    updateActions();
    setWindowTitle(tr("Florence Studio"));
}

MainWindow::~MainWindow() {
    // Closing mid-run: stop the generation at its next step, then join the thread. Nothing the
    // worker still emits reaches this object: queued calls to a destroyed receiver are dropped.
    if (m_activeCancel)
        m_activeCancel->store(true);
    m_refreshTimer->stop();
    m_thread.reset();
    m_worker.reset();
}

// ------------------------------------------------------------------------------------------
// Construction

void MainWindow::createActions() {
    QStyle* s = style();
    m_openAction =
        new QAction(s->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open Image…"), this);
    m_openAction->setObjectName(QStringLiteral("openAction"));
    m_openAction->setShortcut(QKeySequence::Open);
    m_openAction->setToolTip(tr("Open an image (Ctrl+O); you can also drop or paste one"));
    connect(m_openAction, &QAction::triggered, this, &MainWindow::chooseAndOpenImage);

    m_pasteAction = new QAction(tr("&Paste Image"), this);
    m_pasteAction->setShortcut(QKeySequence::Paste);
    connect(m_pasteAction, &QAction::triggered, this, &MainWindow::paste);

    m_openModelAction = new QAction(tr("Open &Model Package…"), this);
    connect(m_openModelAction, &QAction::triggered, this, &MainWindow::chooseAndOpenModel);

    m_importAction = new QAction(tr("&Import Hugging Face Model…"), this);
    connect(m_importAction, &QAction::triggered, this, &MainWindow::showImportDialog);

    m_exportJsonAction =
        new QAction(s->standardIcon(QStyle::SP_DialogSaveButton), tr("Export &JSON…"), this);
    m_exportJsonAction->setObjectName(QStringLiteral("exportJsonAction"));
    m_exportJsonAction->setShortcut(QKeySequence(tr("Ctrl+E")));
    connect(m_exportJsonAction, &QAction::triggered, this, &MainWindow::chooseAndExportJson);

    m_savePngAction = new QAction(tr("Save &Annotated Image…"), this);
    m_savePngAction->setObjectName(QStringLiteral("savePngAction"));
    m_savePngAction->setShortcut(QKeySequence(tr("Ctrl+Shift+S")));
    connect(m_savePngAction, &QAction::triggered, this, &MainWindow::chooseAndSavePng);

    m_copyTextAction = new QAction(tr("&Copy Answer Text"), this);
    m_copyTextAction->setObjectName(QStringLiteral("copyTextAction"));
    m_copyTextAction->setShortcut(QKeySequence(tr("Ctrl+Shift+C")));
    connect(m_copyTextAction, &QAction::triggered, this, &MainWindow::copyResultText);

    m_quitAction = new QAction(tr("&Quit"), this);
    m_quitAction->setShortcut(QKeySequence::Quit);
    connect(m_quitAction, &QAction::triggered, this, &QWidget::close);

    m_runAction = new QAction(s->standardIcon(QStyle::SP_MediaPlay), tr("&Run"), this);
    m_runAction->setObjectName(QStringLiteral("runAction"));
    m_runAction->setShortcuts({QKeySequence(tr("Ctrl+R")), QKeySequence(Qt::CTRL | Qt::Key_Return),
                               QKeySequence(Qt::CTRL | Qt::Key_Enter)});
    m_runAction->setToolTip(tr("Run the task (Ctrl+R, Ctrl+Return)"));
    connect(m_runAction, &QAction::triggered, this, &MainWindow::startRun);

    m_cancelAction = new QAction(s->standardIcon(QStyle::SP_MediaStop), tr("&Cancel"), this);
    m_cancelAction->setObjectName(QStringLiteral("cancelAction"));
    m_cancelAction->setShortcut(QKeySequence(Qt::Key_Escape));
    m_cancelAction->setToolTip(tr("Stop generating (Esc)"));
    connect(m_cancelAction, &QAction::triggered, this, &MainWindow::cancelRun);

    m_compareAction = new QAction(s->standardIcon(QStyle::SP_BrowserReload),
                                  tr("C&ompare Cached vs Uncached"), this);
    m_compareAction->setObjectName(QStringLiteral("compareAction"));
    m_compareAction->setShortcut(QKeySequence(tr("Ctrl+Shift+R")));
    m_compareAction->setToolTip(
        tr("Run the same request with and without the KV cache (Ctrl+Shift+R)"));
    connect(m_compareAction, &QAction::triggered, this, &MainWindow::startComparison);

    m_zoomInAction = new QAction(tr("Zoom &In"), this);
    m_zoomInAction->setShortcuts({QKeySequence::ZoomIn, QKeySequence(tr("Ctrl+="))});
    m_zoomOutAction = new QAction(tr("Zoom &Out"), this);
    m_zoomOutAction->setShortcut(QKeySequence::ZoomOut);
    m_fitAction = new QAction(tr("&Fit to Window"), this);
    m_fitAction->setShortcut(QKeySequence(tr("Ctrl+0")));

    m_aboutAction = new QAction(tr("&About Florence Studio"), this);
    connect(m_aboutAction, &QAction::triggered, this, &MainWindow::showAbout);

    // Window-wide shortcuts must work whichever child has focus.
    for (QAction* a : {m_openAction, m_pasteAction, m_runAction, m_cancelAction, m_compareAction,
                       m_zoomInAction, m_zoomOutAction, m_fitAction, m_exportJsonAction,
                       m_savePngAction, m_copyTextAction, m_quitAction})
        addAction(a);
}

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(m_openAction);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    m_recentMenu->setObjectName(QStringLiteral("recentMenu"));
    file->addAction(m_pasteAction);
    file->addSeparator();
    file->addAction(m_openModelAction);
    file->addAction(m_importAction);
    file->addSeparator();
    file->addAction(m_exportJsonAction);
    file->addAction(m_savePngAction);
    file->addSeparator();
    file->addAction(m_quitAction);

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->addAction(m_copyTextAction);
    edit->addAction(m_pasteAction);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(m_zoomInAction);
    view->addAction(m_zoomOutAction);
    view->addAction(m_fitAction);

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    run->addAction(m_runAction);
    run->addAction(m_cancelAction);
    run->addAction(m_compareAction);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(m_aboutAction);
}

void MainWindow::createToolBar() {
    QToolBar* tb = addToolBar(tr("Main"));
    tb->setObjectName(QStringLiteral("mainToolBar"));
    tb->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tb->setMovable(false);
    tb->addAction(m_openAction);
    tb->addSeparator();
    tb->addAction(m_runAction);
    tb->addAction(m_cancelAction);
    tb->addAction(m_compareAction);
    tb->addSeparator();
    tb->addAction(m_exportJsonAction);
}

void MainWindow::createCentral() {
    m_view = new ImageView(this);
    m_view->setAcceptDrops(false); // drops go to the window
    connect(m_zoomInAction, &QAction::triggered, m_view, &ImageView::zoomIn);
    connect(m_zoomOutAction, &QAction::triggered, m_view, &ImageView::zoomOut);
    connect(m_fitAction, &QAction::triggered, m_view, &ImageView::fitToWindow);
    connect(m_view, &ImageView::regionSelected, this, &MainWindow::setRegion);

    // Controls: model, task, generation settings, run buttons, messages.
    auto* controls = new QWidget(this);
    controls->setObjectName(QStringLiteral("controlPanel"));

    auto* modelBox = new QGroupBox(tr("Model"), controls);
    m_modelCombo = new QComboBox(modelBox);
    m_modelCombo->setObjectName(QStringLiteral("modelCombo"));
    m_modelCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_modelCombo->setMinimumContentsLength(20);
    m_modelLabel = new QLabel(tr("No model loaded"), modelBox);
    m_modelLabel->setTextFormat(Qt::PlainText); // task tokens look like HTML tags
    m_modelLabel->setObjectName(QStringLiteral("modelLabel"));
    m_modelLabel->setWordWrap(true);
    auto* modelLayout = new QVBoxLayout(modelBox);
    modelLayout->addWidget(m_modelCombo);
    modelLayout->addWidget(m_modelLabel);
    connect(m_modelCombo, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        const QString dir = m_modelCombo->itemData(index).toString();
        if (cleanDir(dir) != cleanDir(m_modelInfo.dir) || !m_modelReady)
            openModelPackage(dir);
    });

    auto* taskBox = new QGroupBox(tr("Task"), controls);
    m_taskCombo = new QComboBox(taskBox);
    m_taskCombo->setObjectName(QStringLiteral("taskCombo"));
    for (const TaskInfo& t : allTasks()) {
        m_taskCombo->addItem(QString::fromStdString(t.name), QString::fromStdString(t.token));
        m_taskCombo->setItemData(m_taskCombo->count() - 1, QString::fromStdString(t.token),
                                 Qt::ToolTipRole);
    }
    m_inputLabel = new QLabel(tr("Text input:"), taskBox);
    m_inputLabel->setObjectName(QStringLiteral("inputLabel"));
    m_inputEdit = new QLineEdit(taskBox);
    m_inputEdit->setObjectName(QStringLiteral("inputEdit"));
    m_inputEdit->setClearButtonEnabled(true);
    m_inputLabel->setBuddy(m_inputEdit);
    connect(m_inputEdit, &QLineEdit::returnPressed, this, &MainWindow::startRun);
    m_regionLabel = new QLabel(taskBox);
    m_regionLabel->setTextFormat(Qt::PlainText); // task tokens look like HTML tags
    m_regionLabel->setObjectName(QStringLiteral("regionLabel"));
    m_regionLabel->setWordWrap(true);
    m_promptLabel = new QLabel(taskBox);
    m_promptLabel->setTextFormat(Qt::PlainText); // task tokens look like HTML tags
    m_promptLabel->setObjectName(QStringLiteral("promptLabel"));
    m_promptLabel->setWordWrap(true);
    m_promptLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_promptLabel->setToolTip(tr("The text the model received in the last run"));
    m_promptLabel->setForegroundRole(QPalette::PlaceholderText);
    auto* taskLayout = new QFormLayout(taskBox);
    taskLayout->addRow(tr("Task:"), m_taskCombo);
    taskLayout->addRow(m_inputLabel, m_inputEdit);
    taskLayout->addRow(m_regionLabel);
    taskLayout->addRow(tr("Prompt:"), m_promptLabel);
    connect(m_taskCombo, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [this] { updateTaskInput(); });

    auto* genBox = new QGroupBox(tr("Generation"), controls);
    m_beamsSpin = new QSpinBox(genBox);
    m_beamsSpin->setObjectName(QStringLiteral("beamsSpin"));
    m_beamsSpin->setRange(1, 16);
    m_beamsSpin->setValue(3);
    m_beamsSpin->setToolTip(tr("1 = greedy search"));
    m_maxTokensSpin = new QSpinBox(genBox);
    m_maxTokensSpin->setObjectName(QStringLiteral("maxTokensSpin"));
    m_maxTokensSpin->setRange(1, 1024);
    m_maxTokensSpin->setValue(1024);
    m_cacheCheck = new QCheckBox(tr("Use the key/value cache"), genBox);
    m_cacheCheck->setObjectName(QStringLiteral("cacheCheck"));
    m_cacheCheck->setChecked(true);
    m_cacheCheck->setToolTip(tr("Off: the whole prefix runs through the decoder at every step"));
    m_precisionCombo = new QComboBox(genBox);
    m_precisionCombo->setObjectName(QStringLiteral("precisionCombo"));
    for (const Precision p : {Precision::Float32, Precision::BFloat16})
        m_precisionCombo->addItem(QString::fromLatin1(precisionName(p)), static_cast<int>(p));
    m_precisionCombo->setToolTip(
        tr("bfloat16 runs the linear layers with oneDNN's AVX512-BF16 kernels: faster on CPUs "
           "that have them, and the answers can differ slightly from float32. Changing it "
           "reloads the model."));
    auto* genLayout = new QFormLayout(genBox);
    genLayout->addRow(tr("Beams:"), m_beamsSpin);
    genLayout->addRow(tr("Max new tokens:"), m_maxTokensSpin);
    genLayout->addRow(tr("Precision:"), m_precisionCombo);
    genLayout->addRow(m_cacheCheck);
    connect(m_precisionCombo, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        // Before the first model request (settings being restored) there is nothing to reload:
        // the first load uses the chosen precision.
        if (m_requestedModelDir.isEmpty())
            return;
        if (m_modelReady && !m_modelLoading && m_modelInfo.precisionMode == chosenPrecision() &&
            cleanDir(m_modelInfo.dir) == cleanDir(m_requestedModelDir))
            return;
        openModelPackage(m_requestedModelDir);
    });

    m_runButton = new QPushButton(m_runAction->icon(), tr("Run"), controls);
    m_runButton->setObjectName(QStringLiteral("runButton"));
    m_runButton->setToolTip(m_runAction->toolTip());
    m_runButton->setDefault(true);
    connect(m_runButton, &QPushButton::clicked, this, &MainWindow::startRun);
    m_cancelButton = new QPushButton(m_cancelAction->icon(), tr("Cancel"), controls);
    m_cancelButton->setObjectName(QStringLiteral("cancelButton"));
    m_cancelButton->setToolTip(m_cancelAction->toolTip());
    connect(m_cancelButton, &QPushButton::clicked, this, &MainWindow::cancelRun);
    m_compareButton = new QPushButton(m_compareAction->icon(), tr("Compare"), controls);
    m_compareButton->setObjectName(QStringLiteral("compareButton"));
    m_compareButton->setToolTip(m_compareAction->toolTip());
    connect(m_compareButton, &QPushButton::clicked, this, &MainWindow::startComparison);
    auto* buttons = new QHBoxLayout();
    buttons->addWidget(m_runButton, 2);
    buttons->addWidget(m_cancelButton, 1);
    buttons->addWidget(m_compareButton, 1);

    m_messageLabel = new QLabel(controls);

    m_messageLabel->setTextFormat(Qt::PlainText); // task tokens look like HTML tags
    m_messageLabel->setObjectName(QStringLiteral("messageLabel"));
    m_messageLabel->setWordWrap(true);
    m_messageLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_messageLabel->setMinimumHeight(m_messageLabel->fontMetrics().height() * 3);
    m_messageLabel->setAlignment(Qt::AlignLeft | Qt::AlignTop);

    auto* controlsLayout = new QVBoxLayout(controls);
    controlsLayout->setContentsMargins(6, 0, 0, 0);
    controlsLayout->addWidget(modelBox);
    controlsLayout->addWidget(taskBox);
    controlsLayout->addWidget(genBox);
    controlsLayout->addLayout(buttons);
    controlsLayout->addWidget(m_messageLabel);
    controlsLayout->addStretch(1);
    controls->setMinimumWidth(300);
    controls->setMaximumWidth(520);

    m_results = new ResultsPanel(this);
    m_results->addHeaderActions({m_copyTextAction, m_exportJsonAction, m_savePngAction});
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
    m_topSplit->addWidget(controls);
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

    m_statusModel = new QLabel(this);

    m_statusModel->setTextFormat(Qt::PlainText); // task tokens look like HTML tags
    m_statusModel->setObjectName(QStringLiteral("statusModel"));
    m_statusZoom = new QLabel(this);
    m_statusRun = new QLabel(tr("Idle"), this);
    m_statusRun->setTextFormat(Qt::PlainText); // task tokens look like HTML tags
    m_statusRun->setObjectName(QStringLiteral("statusRun"));
    statusBar()->addPermanentWidget(m_statusRun);
    statusBar()->addPermanentWidget(m_statusZoom);
    statusBar()->addPermanentWidget(m_statusModel);
    connect(m_view, &ImageView::zoomChanged, this,
            [this](double f) { m_statusZoom->setText(tr("Zoom %1%").arg(qRound(f * 100))); });
}

void MainWindow::connectWorker() {
    EngineWorker* w = m_worker.get();
    connect(w, &EngineWorker::modelLoading, this, &MainWindow::onModelLoading);
    connect(w, &EngineWorker::modelLoaded, this, &MainWindow::onModelLoaded);
    connect(w, &EngineWorker::modelFailed, this, &MainWindow::onModelFailed);
    connect(w, &EngineWorker::runStarted, this, &MainWindow::onRunStarted);
    connect(w, &EngineWorker::tokenReady, this, &MainWindow::onToken);
    connect(w, &EngineWorker::runFinished, this, &MainWindow::onRunFinished);
    connect(w, &EngineWorker::compareFinished, this, &MainWindow::onCompareFinished);
    connect(w, &EngineWorker::runFailed, this, &MainWindow::onRunFailed);
}

// ------------------------------------------------------------------------------------------
// Settings

void MainWindow::restoreSettings() {
    QSettings s;
    if (!restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray()))
        resize(1360, 900);
    restoreState(s.value(QStringLiteral("window/state")).toByteArray());
    m_mainSplit->restoreState(s.value(QStringLiteral("window/mainSplit")).toByteArray());
    m_topSplit->restoreState(s.value(QStringLiteral("window/topSplit")).toByteArray());
    m_lastFolder = s.value(QStringLiteral("files/lastFolder")).toString();
    m_recentFiles = s.value(QStringLiteral("files/recent")).toStringList();
    m_extraModels = s.value(QStringLiteral("models/extra")).toStringList();
    const int index =
        m_taskCombo->findData(s.value(QStringLiteral("task/last"), QStringLiteral("<CAPTION>")));
    if (index >= 0)
        m_taskCombo->setCurrentIndex(index);
    m_inputEdit->setText(s.value(QStringLiteral("task/text")).toString());
    m_beamsSpin->setValue(s.value(QStringLiteral("generation/beams"), 3).toInt());
    m_maxTokensSpin->setValue(s.value(QStringLiteral("generation/maxNewTokens"), 1024).toInt());
    m_cacheCheck->setChecked(s.value(QStringLiteral("generation/useCache"), true).toBool());
    const int precision =
        m_precisionCombo->findText(s.value(QStringLiteral("generation/precision"),
                                           QLatin1String(precisionName(Precision::Float32)))
                                       .toString());
    if (precision >= 0)
        m_precisionCombo->setCurrentIndex(precision);
    updateRecentMenu();
    const QString lastImage = s.value(QStringLiteral("files/lastImage")).toString();
    if (!lastImage.isEmpty() && QFileInfo::exists(lastImage))
        openImageFile(lastImage);
}

void MainWindow::saveSettings() const {
    QSettings s;
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
    s.setValue(QStringLiteral("window/mainSplit"), m_mainSplit->saveState());
    s.setValue(QStringLiteral("window/topSplit"), m_topSplit->saveState());
    s.setValue(QStringLiteral("files/lastFolder"), m_lastFolder);
    s.setValue(QStringLiteral("files/recent"), m_recentFiles);
    s.setValue(QStringLiteral("files/lastImage"), m_imagePath);
    s.setValue(QStringLiteral("models/extra"), m_extraModels);
    s.setValue(QStringLiteral("task/last"), currentTask());
    s.setValue(QStringLiteral("task/text"), m_inputEdit->text());
    s.setValue(QStringLiteral("generation/beams"), m_beamsSpin->value());
    s.setValue(QStringLiteral("generation/maxNewTokens"), m_maxTokensSpin->value());
    s.setValue(QStringLiteral("generation/useCache"), m_cacheCheck->isChecked());
    s.setValue(QStringLiteral("generation/precision"), m_precisionCombo->currentText());
}

void MainWindow::closeEvent(QCloseEvent* event) {
    saveSettings();
    if (m_activeCancel)
        m_activeCancel->store(true);
    event->accept();
}

// ------------------------------------------------------------------------------------------
// Models

void MainWindow::populateModels() {
    m_modelCombo->clear();
    const QString bundled = QString::fromStdString(bundledModelDir());
    QStringList dirs;
    if (!bundled.isEmpty())
        dirs << bundled;
    const QDir user(QString::fromStdString(userModelsDir()));
    for (const QString& sub : user.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
        dirs << user.filePath(sub);
    dirs << m_extraModels;
    for (const QString& dir : dirs) {
        if (!QFileInfo::exists(QDir(dir).filePath(QStringLiteral("manifest.json"))))
            continue;
        try {
            const Manifest m = readManifest(dir.toStdString());
            QString name = QString::fromStdString(m.name);
            if (cleanDir(dir) == cleanDir(bundled))
                name = tr("Bundled: %1").arg(name);
            addModelEntry(dir, name, false);
        } catch (const std::exception&) {
            // A damaged package is reported when the user picks it, not at every start.
        }
    }
}

void MainWindow::addModelEntry(const QString& dir, const QString& name, bool select) {
    int index = -1;
    for (int i = 0; i < m_modelCombo->count(); ++i)
        if (cleanDir(m_modelCombo->itemData(i).toString()) == cleanDir(dir))
            index = i;
    if (index < 0) {
        m_modelCombo->addItem(name, dir);
        index = m_modelCombo->count() - 1;
        m_modelCombo->setItemData(index, dir, Qt::ToolTipRole);
    }
    if (select)
        m_modelCombo->setCurrentIndex(index);
}

void MainWindow::loadDefaultModel() {
    const QString dir = QString::fromStdString(bundledModelDir());
    if (dir.isEmpty()) {
        showMessage(
            tr("The bundled model was not found next to this program (share/florence-studio/"
               "models/default). Open a model package with File > Open Model Package."),
            true);
        return;
    }
    openModelPackage(dir);
}

void MainWindow::openModelPackage(const QString& dir) {
    if (dir.isEmpty())
        return;
    // Read the manifest here first: a wrong folder is reported at once, and the current model
    // stays loaded.
    Manifest m;
    try {
        m = readManifest(dir.toStdString());
    } catch (const std::exception& e) {
        showMessage(tr("Cannot open the model package: %1").arg(QString::fromStdString(e.what())),
                    true);
        emit modelFailed(QString::fromStdString(e.what()));
        // Point the combo back at the model that is still loaded.
        if (m_modelReady)
            addModelEntry(m_modelInfo.dir, m_modelCombo->currentText(), true);
        return;
    }
    if (isRunning()) {
        cancelRun();
        showMessage(tr("The run was cancelled to switch models."));
    }
    const QString bundled = QString::fromStdString(bundledModelDir());
    const bool isBundled = cleanDir(dir) == cleanDir(bundled);
    const QString name = isBundled ? tr("Bundled: %1").arg(QString::fromStdString(m.name))
                                   : QString::fromStdString(m.name);
    addModelEntry(dir, name, true);
    const QString userRoot = cleanDir(QString::fromStdString(userModelsDir()));
    if (!isBundled && !cleanDir(dir).startsWith(userRoot + QLatin1Char('/')) &&
        !m_extraModels.contains(cleanDir(dir)))
        m_extraModels << cleanDir(dir);
    m_modelLoading = true;
    m_requestedModelDir = dir;
    // Queued behind any run still finishing on the engine thread; the worker never runs two
    // things at once.
    QMetaObject::invokeMethod(
        m_worker.get(),
        [w = m_worker.get(), dir, precision = chosenPrecision()] { w->loadModel(dir, precision); },
        Qt::QueuedConnection);
    updateActions();
}

Precision MainWindow::chosenPrecision() const {
    return static_cast<Precision>(m_precisionCombo->currentData().toInt());
}

void MainWindow::setPrecision(Precision precision) {
    // The combo's change handler reloads the model, as when the user picks it.
    const int index = m_precisionCombo->findData(static_cast<int>(precision));
    if (index >= 0)
        m_precisionCombo->setCurrentIndex(index);
}

void MainWindow::onModelLoading(const QString& dir) {
    m_statusModel->setText(tr("Loading model from %1…").arg(QDir::toNativeSeparators(dir)));
    m_modelLabel->setText(tr("Loading (%1)…").arg(m_precisionCombo->currentText()));
}

void MainWindow::onModelLoaded(const ModelInfo& info) {
    m_modelInfo = info;
    m_modelReady = true;
    m_modelLoading = false;
    const QString desc = describeModel(info);
    m_modelLabel->setText(tr("%1\nloaded in %2").arg(desc, ms(info.loadMs)));
    m_modelLabel->setToolTip(tr("%1\n\n%2\n\nPackage: %3")
                                 .arg(explainModelWeights(info), importCheckpointHint(),
                                      QDir::toNativeSeparators(info.dir)));
    m_statusModel->setText(desc);
    m_maxTokensSpin->setMaximum(std::max(1, info.maxPositions));
    addModelEntry(info.dir, m_modelCombo->currentText(), true);
    statusBar()->showMessage(tr("Model loaded: %1").arg(info.name), 5000);
    updateActions();
    emit modelReady(info.name);
}

void MainWindow::onModelFailed(const QString& dir, const QString& message) {
    m_modelLoading = false;
    showMessage(
        tr("Could not load the model in %1: %2").arg(QDir::toNativeSeparators(dir), message), true);
    if (m_modelReady && cleanDir(dir) == cleanDir(m_requestedModelDir)) {
        // The model in use stays, and so does the precision it runs in.
        m_requestedModelDir = m_modelInfo.dir;
        const QSignalBlocker block(m_precisionCombo);
        m_precisionCombo->setCurrentIndex(
            m_precisionCombo->findData(static_cast<int>(m_modelInfo.precisionMode)));
    }
    if (m_modelReady) {
        m_modelLabel->setText(describeModel(m_modelInfo));
        m_statusModel->setText(describeModel(m_modelInfo));
        for (int i = 0; i < m_modelCombo->count(); ++i)
            if (cleanDir(m_modelCombo->itemData(i).toString()) == cleanDir(m_modelInfo.dir))
                m_modelCombo->setCurrentIndex(i);
    } else {
        m_modelLabel->setText(tr("No model loaded"));
        m_statusModel->setText(tr("No model"));
    }
    updateActions();
    emit modelFailed(message);
}

// ------------------------------------------------------------------------------------------
// Images

QSize MainWindow::imageSize() const {
    return m_image ? QSize(m_image->width, m_image->height) : QSize();
}

bool MainWindow::openImageFile(const QString& path) {
    RgbImage img;
    try {
        img = loadImage(path.toStdString());
    } catch (const std::exception& e) {
        // The image, task and results on screen stay as they were.
        showMessage(tr("Cannot open the image: %1").arg(QString::fromStdString(e.what())), true);
        return false;
    }
    const QFileInfo fi(path);
    m_lastFolder = fi.absolutePath();
    addRecentFile(fi.absoluteFilePath());
    setImage(std::make_shared<const RgbImage>(std::move(img)), fi.absoluteFilePath(),
             fi.fileName());
    return true;
}

bool MainWindow::openImageData(const QImage& image, const QString& name) {
    if (image.isNull()) {
        showMessage(tr("The clipboard or drop holds no readable image."), true);
        return false;
    }
    // Through PNG and the engine's decoder, so alpha and color handling match opened files.
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    image.save(&buffer, "PNG");
    RgbImage img;
    try {
        img = decodeImage(std::vector<uint8_t>(bytes.begin(), bytes.end()), name.toStdString());
    } catch (const std::exception& e) {
        showMessage(tr("Cannot use the image: %1").arg(QString::fromStdString(e.what())), true);
        return false;
    }
    setImage(std::make_shared<const RgbImage>(std::move(img)), QString(), name);
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
        m_activeCancel->store(true);
        finishRun(tr("Cancelled: another image was opened"), true);
    }
    m_image = std::move(image);
    m_imagePath = path;
    m_imageName = name;
    m_view->setImage(toQImage(*m_image));
    m_region.reset();
    m_results->clear();
    m_answer = ParsedAnswer();
    m_answerText.clear();
    m_answerImage.reset();
    m_latency->startRun();
    updateTaskInput();
    setWindowTitle(tr("%1 — Florence Studio").arg(name));
    showMessage(tr("%1: %2 × %3 pixels").arg(name).arg(m_image->width).arg(m_image->height));
    updateActions();
}

void MainWindow::paste() {
    openMimeData(QApplication::clipboard()->mimeData());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls() || event->mimeData()->hasImage())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    if (openMimeData(event->mimeData()))
        event->acceptProposedAction();
}

void MainWindow::addRecentFile(const QString& path) {
    m_recentFiles.removeAll(path);
    m_recentFiles.prepend(path);
    while (m_recentFiles.size() > kMaxRecent)
        m_recentFiles.removeLast();
    updateRecentMenu();
}

void MainWindow::updateRecentMenu() {
    m_recentMenu->clear();
    for (const QString& path : m_recentFiles) {
        QAction* a = m_recentMenu->addAction(QFileInfo(path).fileName());
        a->setToolTip(path);
        a->setStatusTip(QDir::toNativeSeparators(path));
        connect(a, &QAction::triggered, this, [this, path] { openImageFile(path); });
    }
    if (!m_recentFiles.isEmpty()) {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Clear Recent Files"), this, [this] {
            m_recentFiles.clear();
            updateRecentMenu();
        });
    }
    m_recentMenu->setEnabled(!m_recentFiles.isEmpty());
}

// ------------------------------------------------------------------------------------------
// Task and region

QString MainWindow::currentTask() const {
    return m_taskCombo->currentData().toString();
}

void MainWindow::setTask(const QString& token) {
    const int index = m_taskCombo->findData(token);
    if (index < 0) {
        showMessage(tr("Unknown task %1").arg(token), true);
        return;
    }
    m_taskCombo->setCurrentIndex(index);
}

void MainWindow::setTaskText(const QString& text) {
    m_inputEdit->setText(text);
}

void MainWindow::setRegion(const QRectF& imageRect) {
    m_region = imageRect;
    m_view->setRegion(imageRect);
    updateTaskInput();
}

void MainWindow::updateTaskInput() {
    // A named string: GCC 14 takes a reference returned for a temporary argument as dangling.
    const std::string task = currentTask().toStdString();
    const TaskInfo& info = taskInfo(task);
    const bool text = info.input == TaskInput::Text;
    const bool region = info.input == TaskInput::Region;
    m_inputEdit->setEnabled(text);
    m_inputLabel->setEnabled(text);
    m_inputLabel->setText(text ? capitalized(info.inputLabel) + QLatin1Char(':')
                               : tr("Text input:"));
    m_inputEdit->setPlaceholderText(
        text ? tr("the %1 to look for").arg(QString::fromStdString(info.inputLabel))
             : tr("not used by this task"));
    m_view->setRegionSelectionEnabled(region);
    m_regionLabel->setVisible(region);
    if (region) {
        if (m_region)
            m_regionLabel->setText(
                tr("Region: (%1, %2) – (%3, %4) px. Drag on the image to change it.")
                    .arg(qRound(m_region->left()))
                    .arg(qRound(m_region->top()))
                    .arg(qRound(m_region->right()))
                    .arg(qRound(m_region->bottom())));
        else
            m_regionLabel->setText(tr("Drag a rectangle on the image to choose the region."));
    }
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
    const QString task = currentTask();
    TaskRequest taskRequest;
    taskRequest.task = task.toStdString();
    const TaskInfo& info = taskInfo(taskRequest.task);
    if (info.input == TaskInput::Text)
        taskRequest.text = m_inputEdit->text().trimmed().toStdString();
    if (info.input == TaskInput::Region && m_region)
        taskRequest.region =
            Box{m_region->left(), m_region->top(), m_region->right(), m_region->bottom()};
    std::string prompt;
    try {
        prompt = buildPrompt(taskRequest, m_image->width, m_image->height);
    } catch (const std::exception& e) {
        showMessage(QString::fromStdString(e.what()), true);
        return false;
    }
    GenerationOptions opts = m_modelReady ? m_modelInfo.defaults : GenerationOptions{};
    opts.numBeams = m_beamsSpin->value();
    opts.maxNewTokens = m_maxTokensSpin->value();
    opts.useCache = m_cacheCheck->isChecked();
    opts.ignoreEos = m_ignoreEos;

    // One run at a time: the old one stops at its next step and its late tokens are ignored.
    if (m_activeCancel)
        m_activeCancel->store(true);

    RunRequest r;
    r.runId = ++m_lastRunId;
    r.kind = kind;
    r.task = task;
    r.prompt = prompt;
    r.image = m_image;
    r.options = opts;
    r.cancel = std::make_shared<std::atomic<bool>>(false);

    m_lastPrompt = prompt;
    m_lastOptions = opts;
    // Zero-width spaces let the label wrap between location tokens.
    m_promptLabel->setText(
        QString::fromStdString(prompt).replace(QStringLiteral("><"), QStringLiteral(">\u200B<")));
    m_activeRunId = r.runId;
    m_activeKind = kind;
    m_activeTask = task;
    m_activeCancel = r.cancel;
    m_resultsCleared = false;
    m_tokensReceived = 0;
    if (kind == RunKind::Compare) {
        m_compare->startComparison();
        m_bottomTabs->setCurrentWidget(m_compare);
    } else {
        m_bottomTabs->setCurrentWidget(m_latency);
    }
    QMetaObject::invokeMethod(
        m_worker.get(), [w = m_worker.get(), r] { w->run(r); }, Qt::QueuedConnection);

    showMessage(QString());
    m_statusRun->setText(kind == RunKind::Compare ? tr("Comparing…") : tr("Running %1…").arg(task));
    m_refreshTimer->start();
    updateActions();
    return true;
}

void MainWindow::cancelRun() {
    if (!m_activeCancel)
        return;
    m_activeCancel->store(true);
    m_statusRun->setText(tr("Cancelling…"));
}

void MainWindow::onRunStarted(quint64 runId) {
    if (runId != m_activeRunId)
        return;
    m_statusRun->setText(m_activeKind == RunKind::Compare ? tr("Comparing: KV cache on…")
                                                          : tr("Encoding the image…"));
}

void MainWindow::beginResults() {
    // Earlier results stay on screen until the new run has produced something, so a run that
    // fails before its first token loses nothing.
    m_resultsCleared = true;
    m_answerImage = m_image;
    m_answerImageName = m_imageName;
    m_answerTask = m_activeTask;
    m_answerText.clear();
    m_answer = ParsedAnswer();
    m_results->clear();
    m_view->clearAnswer();
    if (m_activeKind == RunKind::Single)
        m_latency->startRun();
}

void MainWindow::onToken(const TokenUpdate& u) {
    if (u.runId != m_activeRunId)
        return;
    if (!m_resultsCleared)
        beginResults();
    ++m_tokensReceived;
    if (m_activeKind == RunKind::Single) {
        m_latency->addStep(u.step, u.stepMs, u.elapsedMs);
        m_latency->setStages(u.preprocessMs, u.visionMs, u.textEncoderMs);
    } else
        m_compare->addStep(u.pass, u.step, u.stepMs);
    if (u.pass == 0) {
        // Parsing the partial text each token: a box appears as soon as its fourth location
        // token has arrived.
        m_answerText = u.text;
        m_answer = parseAnswer(m_answerTask.toStdString(), u.text, m_answerImage->width,
                               m_answerImage->height);
    } else {
        m_statusRun->setText(tr("Comparing: KV cache off… %1 tokens").arg(u.step + 1));
    }
    m_dirty = true;
    emit tokenArrived(u.runId, u.step);
}

void MainWindow::refreshStreaming() {
    if (!m_dirty)
        return;
    m_dirty = false;
    m_results->setRawText(m_answerText);
    m_results->setAnswer(m_answer);
    if (m_view->overlayItemCount() != static_cast<int>(m_answer.items.size()) ||
        m_answer.type == AnswerType::Polygons ||
        m_answer.type == AnswerType::DescriptionWithBboxesOrPolygons)
        m_view->setAnswer(m_answer); // polygons grow point by point, boxes only in whole
    m_latency->refresh();
    m_compare->refresh();
    if (isRunning() && m_activeKind == RunKind::Single)
        m_statusRun->setText(tr("Generating… %1 tokens").arg(m_tokensReceived));
    m_results->setSummary(tr("%1 · generating… · %2").arg(m_answerTask, itemCountText(m_answer)));
}

void MainWindow::applyAnswer(const std::string& text) {
    m_answerText = text;
    m_answer =
        parseAnswer(m_answerTask.toStdString(), text, m_answerImage->width, m_answerImage->height);
    m_results->setRawText(text);
    m_results->setAnswer(m_answer);
    m_view->setAnswer(m_answer);
    m_dirty = false;
}

void MainWindow::finishRun(const QString& status, bool cancelled) {
    Q_UNUSED(cancelled);
    m_refreshTimer->stop();
    m_activeRunId = 0;
    m_activeCancel.reset();
    m_statusRun->setText(status);
    updateActions();
}

void MainWindow::onRunFinished(const RunOutcome& o) {
    if (o.runId != m_activeRunId)
        return;
    if (!m_resultsCleared && !o.cancelled)
        beginResults();
    if (m_resultsCleared && o.pass == 0)
        applyAnswer(o.text);
    if (m_activeKind == RunKind::Compare) {
        m_compare->setPassFinished(o);
        if (o.pass == 0 && !o.cancelled)
            m_statusRun->setText(tr("Comparing: KV cache off…"));
        return; // compareFinished ends the run
    }
    if (!m_resultsCleared) {
        // Cancelled before the first token (still queued, or between the engine's stages):
        // what was shown before stays.
        finishRun(tr("Cancelled before the first token"), true);
        emit runCompleted(true);
        return;
    }
    m_latency->finishRun(o.timings, o.cancelled);
    const StepStats s = summarizeSteps(o.timings.stepMs);
    const QString summary = tr("%1 · %2 tokens · %3 · %4")
                                .arg(o.task)
                                .arg(o.generatedTokens)
                                .arg(itemCountText(m_answer), ms(o.timings.totalMs));
    m_results->setSummary(o.cancelled ? summary + tr(" · cancelled") : summary);
    finishRun(o.cancelled
                  ? tr("Cancelled after %1 tokens").arg(s.count)
                  : tr("Done: %1 tokens in %2").arg(o.generatedTokens).arg(ms(o.timings.totalMs)),
              o.cancelled);
    emit runCompleted(o.cancelled);
}

void MainWindow::onCompareFinished(const CompareOutcome& o) {
    if (o.runId != m_activeRunId)
        return;
    m_compare->setOutcome(o);
    if (m_resultsCleared)
        m_results->setSummary(tr("%1 · compared cached vs uncached").arg(o.cached.task));
    QString status = tr("Comparison cancelled");
    if (!o.cancelled) {
        const double a = o.cached.timings.totalMs, b = o.uncached.timings.totalMs;
        status = tr("Compared: %1 vs %2 (%3×), outputs %4")
                     .arg(ms(a), ms(b))
                     .arg(a > 0 ? b / a : 0.0, 0, 'f', 2)
                     .arg(o.identical ? tr("identical") : tr("different"));
    }
    finishRun(status, o.cancelled);
    emit comparisonCompleted(o.identical);
}

void MainWindow::onRunFailed(quint64 runId, const QString& message) {
    if (runId != m_activeRunId)
        return;
    if (m_activeKind == RunKind::Compare)
        m_compare->setFailed(message);
    showMessage(tr("The run failed: %1").arg(message), true);
    finishRun(tr("Failed"), false);
    emit runErrored(message);
}

void MainWindow::showAnswerText(const QString& task, const std::string& text) {
    if (!m_image)
        return;
    // A synthetic run: the same token, refresh and finish handlers a real run goes through.
    if (m_activeCancel)
        m_activeCancel->store(true);
    m_activeRunId = ++m_lastRunId;
    m_activeKind = RunKind::Single;
    m_activeTask = task;
    m_activeCancel = std::make_shared<std::atomic<bool>>(false);
    m_resultsCleared = false;
    m_tokensReceived = 0;
    TokenUpdate u;
    u.runId = m_activeRunId;
    int step = 0;
    size_t pos = 0;
    while (pos < text.size()) {
        // One "token" per special token or per word, like the real stream.
        size_t end = text[pos] == '<' ? text.find('>', pos) : text.find_first_of("< ", pos + 1);
        end = end == std::string::npos ? text.size() : (text[pos] == '<' ? end + 1 : end);
        u.step = step++;
        u.textDelta = text.substr(pos, end - pos);
        u.text = text.substr(0, end);
        u.stepMs = 1.0;
        u.elapsedMs = step;
        onToken(u);
        refreshStreaming();
        pos = end;
    }
    RunOutcome o;
    o.runId = m_activeRunId;
    o.task = task;
    o.text = text;
    o.generatedTokens = step;
    o.timings.stepMs.assign(static_cast<size_t>(step), 1.0);
    o.timings.totalMs = step;
    onRunFinished(o);
}

// ------------------------------------------------------------------------------------------
// Export

QString MainWindow::chooseFile(FileChoice choice, const QString& caption, const QString& filter) {
    QString dir = m_lastFolder;
    if (choice == FileChoice::SaveJson || choice == FileChoice::SavePng) {
        const QString base =
            QFileInfo(m_answerImageName.isEmpty() ? QStringLiteral("result") : m_answerImageName)
                .completeBaseName();
        dir = QDir(m_lastFolder.isEmpty() ? QDir::homePath() : m_lastFolder)
                  .filePath(base + (choice == FileChoice::SaveJson
                                        ? QStringLiteral(".json")
                                        : QStringLiteral("-annotated.png")));
    }
    if (m_fileChooser)
        return m_fileChooser(choice, caption, dir, filter);
    switch (choice) {
    case FileChoice::OpenImage:
        return QFileDialog::getOpenFileName(this, caption, dir, filter);
    case FileChoice::OpenModel:
        return QFileDialog::getExistingDirectory(this, caption, dir);
    case FileChoice::SaveJson:
    case FileChoice::SavePng:
        return QFileDialog::getSaveFileName(this, caption, dir, filter);
    }
    return {};
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
    if (!m_answerImage || m_answerText.empty()) {
        showMessage(tr("Nothing to export yet: run a task first."), true);
        return false;
    }
    QJsonObject root;
    root[QStringLiteral("huggingface")] = toHuggingFaceJson(m_answer);
    root[QStringLiteral("native")] = toNativeJson(m_answer);
    // COCO only where the answer has geometry; a caption has no annotations to carry.
    if (m_answer.type != AnswerType::PureText)
        root[QStringLiteral("coco")] = toCocoJson(m_answer, m_answerImageName.toStdString(),
                                                  m_answerImage->width, m_answerImage->height);
    root[QStringLiteral("rawText")] = QString::fromStdString(m_answerText);
    root[QStringLiteral("prompt")] = QString::fromStdString(m_lastPrompt);
    root[QStringLiteral("image")] = m_answerImageName;
    root[QStringLiteral("model")] = m_modelInfo.name;
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        f.write(QJsonDocument(root).toJson(QJsonDocument::Indented)) < 0) {
        showMessage(tr("Cannot write %1: %2").arg(QDir::toNativeSeparators(path), f.errorString()),
                    true);
        return false;
    }
    showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

bool MainWindow::saveAnnotatedImage(const QString& path) {
    if (!m_answerImage || m_answerText.empty()) {
        showMessage(tr("Nothing to save yet: run a task first."), true);
        return false;
    }
    try {
        florence::saveAnnotatedImage(*m_answerImage, m_answer, path.toStdString());
    } catch (const std::exception& e) {
        showMessage(tr("Cannot save the annotated image: %1").arg(QString::fromStdString(e.what())),
                    true);
        return false;
    }
    showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

void MainWindow::copyResultText() {
    QApplication::clipboard()->setText(QString::fromStdString(m_answerText));
    statusBar()->showMessage(tr("Answer text copied"), 3000);
}

// ------------------------------------------------------------------------------------------
// Messages, state, dialogs

void MainWindow::showMessage(const QString& text, bool isError) {
    m_messageLabel->setText(text);
    m_messageLabel->setProperty("isError", isError);
    // A red that reads on both light and dark window backgrounds.
    const QColor error = palette().color(QPalette::Window).lightness() < 128
                             ? QColor(0xff, 0x8a, 0x80)
                             : QColor(0xb0, 0x00, 0x20);
    QPalette p = m_messageLabel->palette();
    p.setColor(QPalette::WindowText, isError ? error : palette().color(QPalette::WindowText));
    m_messageLabel->setPalette(p);
    if (!text.isEmpty())
        statusBar()->showMessage(text, isError ? 15000 : 5000);
}

QString MainWindow::messageText() const {
    return m_messageLabel->text();
}

void MainWindow::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange && m_messageLabel)
        showMessage(m_messageLabel->text(), m_messageLabel->property("isError").toBool());
    QMainWindow::changeEvent(event);
}

void MainWindow::updateActions() {
    const bool running = isRunning();
    const bool hasAnswer = !m_answerText.empty();
    m_runAction->setEnabled(hasImage());
    m_runButton->setEnabled(hasImage());
    m_compareAction->setEnabled(hasImage());
    m_compareButton->setEnabled(hasImage());
    m_cancelAction->setEnabled(running);
    m_cancelButton->setEnabled(running);
    m_exportJsonAction->setEnabled(hasAnswer && !running);
    m_savePngAction->setEnabled(hasAnswer && !running);
    m_copyTextAction->setEnabled(hasAnswer);
}

ImportDialog* MainWindow::showImportDialog() {
    auto* dlg = new ImportDialog(this);
    dlg->setAttribute(Qt::WA_DeleteOnClose);
    connect(dlg, &ImportDialog::imported, this, [this](const QString& dir) {
        populateModels();
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
        startRun(); // queued behind the model load on the engine thread
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
    // The model paragraph comes from the manifest of the model in use (before the first load:
    // of the bundled one), so a demo model, random weights and a real checkpoint each get the
    // right expectations.
    const QString bundledDir = cleanDir(QString::fromStdString(bundledModelDir()));
    std::optional<ModelInfo> model;
    if (m_modelReady)
        model = m_modelInfo;
    else
        model = bundledModelInfo();
    QString modelParagraph = tr("<p>No model is loaded.</p>");
    if (model)
        modelParagraph = tr("<p><b>%1</b> %2</p>")
                             .arg(!bundledDir.isEmpty() && cleanDir(model->dir) == bundledDir
                                      ? tr("The bundled model:")
                                      : tr("The loaded model:"),
                                  explainModelWeights(*model).toHtmlEscaped());
    return tr("<h3>Florence Studio %1</h3>"
              "<p>A desktop studio for Microsoft's Florence-2 vision-language model: captions, "
              "detection, grounding, segmentation and OCR, with live token streaming and "
              "latency measurements.</p>"
              "<p><b>Runtime:</b> %2</p>"
              "%3"
              "<p><b>For real answers on photographs</b>, import a real checkpoint: download "
              "<code>microsoft/Florence-2-base</code> or <code>Florence-2-large</code> from "
              "Hugging Face (for example <code>git clone "
              "https://huggingface.co/microsoft/Florence-2-base</code>), then choose "
              "<i>File › Import Hugging Face Model…</i> and pick that folder. The converted "
              "package is stored in <code>%4</code> and appears in the model list. From a "
              "terminal: <code>florence-studio-cli import --hf DIR --out PKG</code>. Importing "
              "needs PyTorch for the system Python (the <code>python3-torch</code> package).</p>")
        .arg(QStringLiteral(FLORENCE_VERSION),
             QString::fromStdString(runtimeSummary()).toHtmlEscaped(), modelParagraph,
             QDir::toNativeSeparators(QString::fromStdString(userModelsDir())).toHtmlEscaped());
}

void MainWindow::showAbout() {
    QMessageBox::about(this, tr("About Florence Studio"), aboutText());
}

} // namespace florence::ui
