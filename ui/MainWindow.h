// Florence Studio's main window: image, task, generation settings, streamed answer with overlays,
// live latency and the cached/uncached comparison. All model work happens in EngineWorker on
// the window's "engine" thread; this class only sends requests and shows what comes back.
//
//   florence::ui::MainWindow w;
//   w.openModelPackage(QString::fromStdString(florence::bundledModelDir()));
//   w.openImageFile("pier.png");
//   w.setTask("<OD>");
//   w.startRun();                                     // tokens stream in; runCompleted() at the
//   end
//
// Tests drive the same public slots the menus use, and replace the file dialogs with
// setFileChooser(). Run bookkeeping is RunController's, preferences Settings', the model list
// ModelCatalog's; this class lays out the widgets and wires them to those.
#pragma once

#include "run/WorkerThread.h"
#include "run/WorkerTypes.h"

#include <florence/answer.h>

#include <QMainWindow>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <string>

class QAction;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QMimeData;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTabWidget;
class QTimer;

namespace florence::ui {

class EngineWorker;
class ImageView;
class ResultsPanel;
class LatencyChart;
class CompareView;
class ImportDialog;
class ModelCatalog;
class RunController;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    enum class FileChoice { OpenImage, OpenModel, SaveJson, SavePng };
    // Returns the chosen path, or "" when the user cancelled. Replaces the modal file dialogs.
    using FileChooser = std::function<QString(FileChoice choice, const QString& caption,
                                              const QString& dir, const QString& filter)>;

    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    void setFileChooser(FileChooser chooser) { m_fileChooser = std::move(chooser); }

    bool hasImage() const { return static_cast<bool>(m_image); }
    QString imagePath() const { return m_imagePath; }
    QSize imageSize() const;
    bool isRunning() const;
    bool isModelReady() const { return m_modelReady; }
    const ModelInfo& modelInfo() const { return m_modelInfo; }
    QString currentTask() const;
    // The prompt of the last request sent to the engine (region tasks: with its <loc_N> tokens).
    QString lastPrompt() const;
    const GenerationOptions& lastOptions() const;
    const ParsedAnswer& answer() const;
    QString messageText() const;
    int tokensReceived() const;
    QStringList recentFiles() const { return m_recentFiles; }
    QString aboutText() const;
    // The precision chosen in the Generation group (the model in use may still be loading it).
    Precision chosenPrecision() const;
    // The image a first start shows: the first PNG of `samplesDir`/scenes (sample scenes the
    // bundled demo model understands) when that folder has one, else `samplesDir`/pier.png;
    // "" when neither exists.
    static QString firstRunImage(const QString& samplesDir);
    // First start: opens firstRunImage(samplesDir) and, when it is a sample scene, captions it,
    // so the first thing a user sees is the bundled model's answer streaming in. False when
    // there is no sample or it could not be opened (the window then stays empty, with a message).
    bool openFirstRunSample(const QString& samplesDir);

    ImageView* imageView() const { return m_view; }
    ResultsPanel* resultsPanel() const { return m_results; }
    LatencyChart* latencyChart() const { return m_latency; }
    CompareView* compareView() const { return m_compare; }

public slots:
    bool openImageFile(const QString& path);
    bool openImageData(const QImage& image, const QString& name);
    bool openMimeData(const QMimeData* mime);
    void openModelPackage(const QString& dir);
    void loadDefaultModel();
    void setTask(const QString& token);
    void setTaskText(const QString& text);
    void setRegion(const QRectF& imageRect);
    // Reloads the current model with `precision` (cancelling a run in flight).
    void setPrecision(florence::Precision precision);
    // The Generation group's "Max new tokens" (clamped to what the model allows).
    void setMaxNewTokens(int n);
    int maxNewTokens() const;
    bool startRun();
    bool startComparison();
    void cancelRun();
    bool exportJson(const QString& path);
    bool saveAnnotatedImage(const QString& path);
    void copyResultText();
    void showMessage(const QString& text, bool isError = false);
    // Opens the import dialog (window-modal, not blocking); the imported package is loaded.
    ImportDialog* showImportDialog();

signals:
    void modelReady(const QString& name);
    void modelFailed(const QString& message);
    void tokenArrived(quint64 runId, int step);
    void runCompleted(bool cancelled);
    void comparisonCompleted(bool identical);
    void runErrored(const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void createActions();
    void createMenus();
    void createToolBar();
    void createCentral();
    void connectWorker();
    void restoreSettings();
    void saveSettings() const;
    void selectModel(const QString& dir, const QString& manifestName);
    void updateTaskInput();
    void updateActions();
    void updateRecentMenu();
    void addRecentFile(const QString& path);
    QString chooseFile(FileChoice choice, const QString& caption, const QString& filter);
    bool startRequest(RunKind kind);
    void setImage(std::shared_ptr<const RgbImage> image, const QString& path, const QString& name);
    void clearResultViews();
    void refreshStreaming();
    void showFinalAnswer();
    // Ends the run in flight with `status`; a single run then reports runCompleted(cancelled).
    void finishRun(const QString& status, bool cancelled);
    void endRun(const QString& status);
    void showAbout();
    void chooseAndOpenImage();
    void chooseAndOpenModel();
    void chooseAndExportJson();
    void chooseAndSavePng();
    void paste();

    void onModelLoading(const QString& dir);
    void onModelLoaded(const florence::ui::ModelInfo& info);
    void onModelFailed(const QString& dir, const QString& message);
    void onRunStarted(quint64 runId);
    void onToken(const florence::ui::TokenUpdate& update);
    void onRunFinished(const florence::ui::RunOutcome& outcome);
    void onCompareFinished(const florence::ui::CompareOutcome& outcome);
    void onRunFailed(quint64 runId, const QString& message);

    // Widgets (owned by Qt parents).
    ImageView* m_view = nullptr;
    ResultsPanel* m_results = nullptr;
    LatencyChart* m_latency = nullptr;
    CompareView* m_compare = nullptr;
    QTabWidget* m_bottomTabs = nullptr;
    QSplitter* m_mainSplit = nullptr;
    QSplitter* m_topSplit = nullptr;
    QComboBox* m_modelCombo = nullptr;
    QLabel* m_modelLabel = nullptr;
    QComboBox* m_taskCombo = nullptr;
    QLabel* m_inputLabel = nullptr;
    QLineEdit* m_inputEdit = nullptr;
    QLabel* m_regionLabel = nullptr;
    QLabel* m_promptLabel = nullptr;
    QSpinBox* m_beamsSpin = nullptr;
    QSpinBox* m_maxTokensSpin = nullptr;
    QCheckBox* m_cacheCheck = nullptr;
    QComboBox* m_precisionCombo = nullptr;
    QPushButton* m_runButton = nullptr;
    QPushButton* m_cancelButton = nullptr;
    QPushButton* m_compareButton = nullptr;
    QLabel* m_messageLabel = nullptr;
    QLabel* m_statusModel = nullptr;
    QLabel* m_statusZoom = nullptr;
    QLabel* m_statusRun = nullptr;
    QMenu* m_recentMenu = nullptr;
    QTimer* m_refreshTimer = nullptr;

    QAction* m_openAction = nullptr;
    QAction* m_pasteAction = nullptr;
    QAction* m_openModelAction = nullptr;
    QAction* m_importAction = nullptr;
    QAction* m_exportJsonAction = nullptr;
    QAction* m_savePngAction = nullptr;
    QAction* m_copyTextAction = nullptr;
    QAction* m_quitAction = nullptr;
    QAction* m_runAction = nullptr;
    QAction* m_cancelAction = nullptr;
    QAction* m_compareAction = nullptr;
    QAction* m_zoomInAction = nullptr;
    QAction* m_zoomOutAction = nullptr;
    QAction* m_fitAction = nullptr;
    QAction* m_aboutAction = nullptr;

    // Image and answer.
    std::shared_ptr<const RgbImage> m_image;
    QString m_imagePath; // "" for pasted images
    QString m_imageName; // for titles and COCO export
    std::optional<QRectF> m_region;
    bool m_dirty = false; // the answer changed since the widgets last showed it

    // The run in flight and the answer on screen; the model list.
    std::unique_ptr<RunController> m_run;
    std::unique_ptr<ModelCatalog> m_models;

    // Model.
    QString m_requestedModelDir; // the package last sent to the worker; "" before the first
    ModelInfo m_modelInfo;
    bool m_modelReady = false;
    bool m_modelLoading = false;

    QString m_lastFolder;
    QStringList m_recentFiles;
    FileChooser m_fileChooser;

    // Declared last so they are destroyed first: the thread is stopped (after the run in flight
    // was cancelled) before the worker it runs, and both before the members above.
    std::unique_ptr<EngineWorker> m_worker;
    ThreadPtr m_thread;

    // Tests reach the engine thread and synthetic answers through this (tests/ui only).
    friend class MainWindowTester;
};

} // namespace florence::ui
