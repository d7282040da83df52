// Imports a Hugging Face Florence-2 folder (or makes a package with random weights) by running
// the exporter on a background thread, with progress and Cancel. Lists the Florence-2
// checkpoints already on the disk (the Hugging Face cache, ~/Downloads) to pick from. Emits
// imported() with the new package folder on success.
//
//   auto* dlg = new ImportDialog(window);
//   dlg->setAttribute(Qt::WA_DeleteOnClose);
//   connect(dlg, &ImportDialog::imported, window, &MainWindow::openModelPackage);
//   dlg->open();
#pragma once

#include "controllers/WorkerThread.h"
#include <florence/importer.h>

#include <QDialog>

#include <atomic>

class QLineEdit;
class QRadioButton;
class QComboBox;
class QSpinBox;
class QProgressBar;
class QLabel;
class QPushButton;
class QTreeWidget;

namespace florence::ui {

class ImportDialog : public QDialog {
    Q_OBJECT

public:
    explicit ImportDialog(QWidget* parent = nullptr);
    ~ImportDialog() override;

    bool isRunning() const { return static_cast<bool>(m_thread); }
    QString lastMessage() const;

    // Starts the exporter for this job (the dialog's Import button builds one from the form).
    void startImport(const florence::ImportJob& job);

public slots:
    void cancelImport();
    void reject() override;

signals:
    void imported(const QString& packageDir);

private:
    void browse();
    void listFound();
    void useFound();
    void startFromForm();
    void updateForm();
    void onProgress(int percent, const QString& message);
    void onFinished(bool ok, const QString& message);

    QRadioButton* m_fromHf = nullptr;
    QRadioButton* m_fromRandom = nullptr;
    QLineEdit* m_hfDir = nullptr;
    QTreeWidget* m_found = nullptr; // checkpoints in the Hugging Face cache and ~/Downloads
    QPushButton* m_browse = nullptr;
    QComboBox* m_randomSize = nullptr;
    QSpinBox* m_seed = nullptr;
    QLineEdit* m_name = nullptr;
    QLabel* m_outLabel = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_message = nullptr;
    QPushButton* m_start = nullptr;
    QPushButton* m_cancel = nullptr;
    QString m_outDir;
    bool m_closeWhenDone = false;
    std::atomic<bool> m_cancelFlag{false};
    ThreadPtr m_thread; // last member: stopped before the flag it reads is destroyed
};

} // namespace florence::ui
