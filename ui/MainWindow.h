// Florence Studio's main window: image, task, generation settings, streamed answer with overlays,
// live latency and the cached/uncached comparison. All model work happens in EngineWorker on
// the window's "engine" thread; this class only sends requests and shows what comes back.
//
//   florence::ui::MainWindow w;
//   w.openModelPackage(QString::fromStdString(florence::bundledModelDir()));
//   w.openImageFile("pier.png");   // decoded off the GUI thread; imageOpened() when shown
//   w.setTask("<OD>");
//   w.afterImageOpens([&] { w.startRun(); }); // tokens stream in; runCompleted() at the end
//
// Tests drive the same public slots the menus use, and replace the file dialogs with
// setFileChooser(). Run bookkeeping is RunController's, preferences Settings', the model list
// ModelCatalog's, the actions MainActions', the right-hand panel ControlPanel's, the image on
// its way in (opened, encoded ahead of Run) WindowImage's; this class lays them out and wires
// them together.
#pragma once

#include "FileDialogs.h"
#include "controllers/WorkerThread.h"
#include "controllers/WorkerTypes.h"

#include <florence/answer.h>

#include <QMainWindow>
#include <QPointer>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <string>

class QMimeData;
class QSplitter;
class QTabWidget;

namespace florence::ui {

class CompareView;
class ControlPanel;
class EngineWorker;
class History;
class HistoryDock;
class HistoryPanel;
class ImageView;
class ImportDialog;
class ProcessFolderDialog;
class LatencyChart;
class ModelCatalog;
class ModelController;
class ResultsPanel;
class RunController;
class RecentFiles;
class RunView;
class WindowImage;
struct MainActions;
struct StatusLabels;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    using FileChoice = FileDialogs::Choice;
    // Returns the chosen path, or "" when the user cancelled. Replaces the modal file dialogs.
    using FileChooser = FileDialogs::Chooser;

    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    void setFileChooser(FileChooser chooser) { m_files->setChooser(std::move(chooser)); }

    bool hasImage() const { return static_cast<bool>(m_image); }
    // An image is being decoded (off the GUI thread); it replaces the one shown when it opens.
    bool isOpeningImage() const;
    // The encoders started on the image shown (and the task's prompt) still run.
    bool isEncodingImage() const;
    // Calls `f` once the image being opened is shown or has failed (at once when none is).
    void afterImageOpens(std::function<void()> f);
    QString imagePath() const { return m_imagePath; }
    QSize imageSize() const;
    bool isRunning() const;
    bool isModelReady() const;
    const ModelInfo& modelInfo() const;
    QString currentTask() const;
    // The prompt of the last request sent to the engine (region tasks: with its <loc_N> tokens).
    QString lastPrompt() const;
    const GenerationOptions& lastOptions() const;
    // The parser's answer (what exports carry); the table, overlay and copied text show it
    // without the model's special tokens.
    const ParsedAnswer& answer() const;
    QString messageText() const;
    int tokensReceived() const;
    QStringList recentFiles() const;
    QString aboutText() const;
    // Help › Keyboard Shortcuts, as plain text.
    QString shortcutsText() const;
    // The precision chosen in the Generation group (the model in use may still be loading it).
    // nullopt: Automatic.
    std::optional<Precision> chosenPrecision() const;
    std::optional<QRectF> region() const { return m_region; }
    // The image a first start shows: the first PNG of `samplesDir`/scenes (sample scenes the
    // bundled demo model understands) when that folder has one, else `samplesDir`/pier.png;
    // "" when neither exists.
    static QString firstRunImage(const QString& samplesDir);
    // First start: opens firstRunImage(samplesDir) and, when it is a sample scene, captions it,
    // so the first thing a user sees is the bundled model's answer streaming in (once the image
    // has opened). False when there is no sample; one that cannot be opened leaves the window
    // empty, with a message.
    bool openFirstRunSample(const QString& samplesDir);
    // Shrinks and moves the window so it lies within the available area of its screen.
    void fitToScreen();

    ImageView* imageView() const { return m_view; }
    ResultsPanel* resultsPanel() const { return m_results; }
    LatencyChart* latencyChart() const { return m_latency; }
    CompareView* compareView() const { return m_compare; }
    History* history() const;
    HistoryPanel* historyPanel() const;

public slots:
    // These start opening an image and return at once (false only when there is nothing to
    // open); the image replaces the one shown on imageOpened(), or imageFailed() says why not.
    bool openImageFile(const QString& path);
    bool openImageData(const QImage& image, const QString& name);
    bool openMimeData(const QMimeData* mime);
    // false when the folder is refused at once (not a model package: the message says why).
    bool openModelPackage(const QString& dir);
    void loadDefaultModel();
    // The model a start asks for (--model): when it is refused or fails to load, the bundled
    // model loads in its place and the panel then says which folder failed, and why.
    void openStartModel(const QString& dir);
    bool setTask(const QString& token); // false (saying so) when the model has no such task
    void setTaskText(const QString& text);
    void setRegion(const QRectF& imageRect);
    void clearRegion();
    // Reloads the current model with `precision` (cancelling a run in flight).
    void setPrecision(florence::Precision precision);
    // The Generation group's "Max new tokens" (clamped to what the model allows).
    void setMaxNewTokens(int n);
    int maxNewTokens() const;
    // The Generation group's "Beams" (1 = greedy).
    void setBeams(int n);
    bool startRun();
    bool startComparison();
    void cancelRun();
    bool exportJson(const QString& path);
    bool saveAnnotatedImage(const QString& path);
    void copyResultText();
    void showMessage(const QString& text, bool isError = false);
    // A message no action of the user's asked for (a model finished loading): an error as
    // showMessage shows it, a report only in the status bar while the panel shows an error, so
    // "loaded" does not replace why the image given on the command line could not be opened.
    void showBackgroundMessage(const QString& text, bool isError);
    // Opens the import dialog (window-modal, not blocking); the imported package is loaded.
    ImportDialog* showImportDialog();
    // Shows history entry `row` (0 = newest) again: its image, task, answer and latency, with
    // a note when its image file is gone. Nothing is rerun.
    void showHistoryEntry(int row);
    // File › Process Folder… (not modal: the window stays usable; Run waits until it ends).
    ProcessFolderDialog* showProcessFolderDialog();
    bool isProcessingFolder() const;

signals:
    void imageOpened(const QString& name);
    void imageFailed(const QString& message);
    // The vision encoder has run on the image shown, ahead of Run (encode on open),
    // and the text encoder on the chosen task's prompt (textEncoderMs < 0: no prompt encoded).
    void imageReady(double visionMs, double textEncoderMs);
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
    void showEvent(QShowEvent* event) override;

private:
    void connectActions();
    void createCentral();
    // The image opened off the GUI thread and encoded ahead of Run, shown when it arrives.
    void connectImages();
    void restoreSettings();
    void saveSettings() const;
    void onTaskInputChanged();
    void updateActions();
    std::optional<std::string> currentPrompt(QString* error) const;
    // What the encoder runs ahead of Run with the image: the prompt Run would send now, or ""
    // while the task lacks its input.
    std::string promptToEncode() const;
    bool startRequest(RunKind kind);
    void setImage(std::shared_ptr<const RgbImage> image, const QString& path, const QString& name);
    void recordRun(const RunOutcome& outcome);

    // Widgets (owned by Qt parents).
    ImageView* m_view = nullptr;
    ControlPanel* m_panel = nullptr;
    ResultsPanel* m_results = nullptr;
    LatencyChart* m_latency = nullptr;
    CompareView* m_compare = nullptr;
    QTabWidget* m_bottomTabs = nullptr;
    QSplitter* m_mainSplit = nullptr;
    QSplitter* m_topSplit = nullptr;
    std::unique_ptr<StatusLabels> m_status;
    RunView* m_runView = nullptr;         // how runs show in the widgets above
    HistoryDock* m_historyDock = nullptr; // the runs remembered across restarts
    RecentFiles* m_recent = nullptr;
    ModelController* m_modelCtl = nullptr; // the model in use
    WindowImage* m_images = nullptr;       // opened off the GUI thread, encoded ahead of Run
    std::unique_ptr<MainActions> m_actions;

    // Image and region.
    std::shared_ptr<const RgbImage> m_image;
    QString m_imagePath; // "" for pasted images
    QString m_imageName; // for titles and export file names
    std::optional<QRectF> m_region;
    QString m_runTaskText; // the task's text input when the run in flight started

    // The run in flight and the answer on screen; the model list.
    std::unique_ptr<RunController> m_run;
    std::unique_ptr<ModelCatalog> m_models;

    std::unique_ptr<FileDialogs> m_files; // and the folders they start in
    QPointer<ProcessFolderDialog> m_folderDialog;

    // Declared last so they are destroyed first: the thread is stopped (after the run in flight
    // was cancelled) before the worker it runs, and both before the members above.
    std::unique_ptr<EngineWorker> m_worker;
    ThreadPtr m_thread;

    // Tests reach the engine thread and synthetic answers through this (tests/ui only).
    friend class MainWindowTester;
    QString m_shownModel; // the model whose answers are on screen
};

} // namespace florence::ui
