// File › Process Folder…: one task on every image of a folder, run by EngineWorker on the engine
// thread while the window stays usable. The form picks the folder (with sub-folders or not),
// the task and its text, where the results go and in which formats (remembered), and whether
// existing results are overwritten (else those images are skipped, so a cancelled run resumes).
// While it runs: count, images/s, time left, the current image's thumbnail and Cancel; at the
// end, the images that failed and why.
//
//   auto* dlg = new ProcessFolderDialog(worker, window);
//   dlg->setTask("<CAPTION>", QString());
//   dlg->setSettings(settings);                // what the window changed from the defaults
//   dlg->setModelName("florence2-demo-shapes"); // the model loaded in the window
//   connect(dlg, &ProcessFolderDialog::runningChanged, window, &MainWindow::updateActions);
//   dlg->show();
#pragma once

#include "controllers/FolderTypes.h"

#include <QDialog>

#include <atomic>
#include <functional>
#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QRadioButton;

namespace florence::ui {

class EngineWorker;

class ProcessFolderDialog : public QDialog {
    Q_OBJECT

public:
    // Returns the chosen folder, or "" when the user cancelled. Replaces the folder dialogs.
    using FolderChooser = std::function<QString(const QString& caption, const QString& dir)>;

    ProcessFolderDialog(EngineWorker* worker, QWidget* parent = nullptr);
    ~ProcessFolderDialog() override;

    void setFolderChooser(FolderChooser chooser) { m_chooser = std::move(chooser); }
    // The task the form starts with (a region task is not offered: it needs a region per image).
    void setTask(const QString& token, const QString& text);
    // What the window's settings change from the model's defaults (beams, token limit, cache).
    void setSettings(const GenerationSettings& settings) { m_settings = settings; }
    // The model the run will use (the window's), named at the top of the form.
    void setModelName(const QString& name);
    // How the images are decoded (the window's View › Turn Photos Upright).
    void setDecodeOptions(const DecodeOptions& decode) { m_decode = decode; }
    void setFolder(const QString& folder);

    bool isRunning() const { return m_running; }
    // The job the form describes; `error` says what is missing when it returns false.
    bool jobFromForm(FolderJobParams* job, QString* error) const;
    const FolderOutcome& lastOutcome() const { return m_outcome; }

public slots:
    // Starts the run the form describes (the Start button); false with a message when the form
    // is incomplete.
    bool start();
    // Stops after the image being answered; what was written stays.
    void cancelRun();
    void reject() override;

signals:
    void runningChanged(bool running);
    void finished(const florence::ui::FolderOutcome& outcome);

private:
    void buildForm();
    QLabel* m_model = nullptr;
    void buildRunArea(); // progress, failures, buttons, and the layout of both
    void updateForm();
    void browse(QLineEdit* edit, const QString& caption);
    QWidget* buildCaptionOptions();
    CaptionOptions captionOptions() const;
    void updateCaptionPreview();
    unsigned chosenFormats() const;
    void setRunning(bool running);
    void onProgress(const FolderProgress& progress);
    void onImageStarted(const QString& path, const QImage& thumbnail);
    void onFinished(const FolderOutcome& outcome);
    void savePreferences() const;

    EngineWorker* m_worker;
    GenerationSettings m_settings;
    DecodeOptions m_decode;
    FolderChooser m_chooser;
    QLineEdit* m_folder = nullptr;
    QCheckBox* m_recursive = nullptr;
    QComboBox* m_task = nullptr;
    QLineEdit* m_text = nullptr;
    QRadioButton* m_beside = nullptr;
    QRadioButton* m_elsewhere = nullptr;
    QLineEdit* m_outFolder = nullptr;
    QPushButton* m_outBrowse = nullptr;
    QCheckBox* m_formatText = nullptr;
    QCheckBox* m_formatJson = nullptr;
    QCheckBox* m_formatCoco = nullptr;
    QCheckBox* m_formatCaption = nullptr;
    QPushButton* m_openResults = nullptr;
    // A training set's caption files: how the tags are written.
    QWidget* m_captionBox = nullptr;
    QComboBox* m_separator = nullptr;
    QLineEdit* m_prefix = nullptr;
    QLineEdit* m_suffix = nullptr;
    QLineEdit* m_dropTags = nullptr;
    QCheckBox* m_lowercase = nullptr;
    QCheckBox* m_append = nullptr;
    QLabel* m_captionPreview = nullptr;
    QCheckBox* m_overwrite = nullptr;
    QWidget* m_form = nullptr;
    QLabel* m_thumbnail = nullptr;
    QLabel* m_current = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    QListWidget* m_failed = nullptr;
    QPushButton* m_start = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_close = nullptr;
    bool m_running = false;
    bool m_closeWhenDone = false;
    std::shared_ptr<std::atomic<bool>> m_cancelFlag;
    FolderOutcome m_outcome;
};

} // namespace florence::ui
