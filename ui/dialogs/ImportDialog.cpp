#include "dialogs/ImportDialog.h"

#include <florence/checkpoints.h>
#include <florence/paths.h>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace florence::ui {

ImportDialog::ImportDialog(QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("importDialog"));
    setWindowTitle(tr("Import a Florence-2 model"));

    auto* intro = new QLabel(
        tr("Converts a Hugging Face Florence-2 checkpoint folder (config.json, model.safetensors "
           "or "
           "pytorch_model.bin, tokenizer files), for example a clone of "
           "<i>huggingface.co/microsoft/Florence-2-base</i>, or a name in the Hugging Face cache "
           "(<i>microsoft/Florence-2-base</i>), into a model package this app runs. "
           "It takes a few minutes for the large model."),
        this);
    intro->setWordWrap(true);

    m_fromHf = new QRadioButton(tr("Hugging Face folder:"), this);
    m_fromHf->setChecked(true);
    m_hfDir = new QLineEdit(this);
    m_hfDir->setObjectName(QStringLiteral("hfDirEdit"));
    m_hfDir->setPlaceholderText(tr("folder with config.json and the weights, or ORG/NAME"));
    m_browse = new QPushButton(tr("Browse…"), this);
    auto* hfRow = new QHBoxLayout();
    hfRow->addWidget(m_hfDir, 1);
    hfRow->addWidget(m_browse);

    m_fromRandom = new QRadioButton(
        tr("Speed demo (random weights, answers are noise):"), this);
    m_fromRandom->setObjectName(QStringLiteral("randomRadio"));
    m_fromHf->setObjectName(QStringLiteral("hfRadio"));
    m_randomSize = new QComboBox(this);
    m_randomSize->addItems(
        {QStringLiteral("tiny"), QStringLiteral("base"), QStringLiteral("large")});
    m_seed = new QSpinBox(this);
    m_seed->setRange(0, 1'000'000);
    m_seed->setValue(1234);
    m_seed->setPrefix(tr("seed "));
    auto* randomRow = new QHBoxLayout();
    randomRow->addWidget(m_randomSize);
    randomRow->addWidget(m_seed);
    randomRow->addStretch(1);

    m_name = new QLineEdit(this);
    m_name->setObjectName(QStringLiteral("packageNameEdit"));
    m_outLabel = new QLabel(this);
    m_outLabel->setWordWrap(true);
    m_outLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_found = new QTreeWidget(this);
    m_found->setObjectName(QStringLiteral("foundCheckpoints"));
    m_found->setHeaderLabels(
        {tr("Found on this computer"), tr("Size"), tr("Layout"), tr("Revision"), tr("Where")});
    m_found->setRootIsDecorated(false);
    m_found->setMaximumHeight(130);
    m_found->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    connect(m_found, &QTreeWidget::itemSelectionChanged, this, &ImportDialog::useFound);

    auto* form = new QFormLayout();
    form->addRow(m_found);
    form->addRow(m_fromHf, hfRow);
    form->addRow(m_fromRandom, randomRow);
    form->addRow(tr("Package name:"), m_name);
    form->addRow(tr("Written to:"), m_outLabel);

    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("importProgress"));
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("importMessage"));
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* buttons = new QDialogButtonBox(this);
    m_start = buttons->addButton(tr("Import"), QDialogButtonBox::AcceptRole);
    m_start->setObjectName(QStringLiteral("importStartButton"));
    m_cancel = buttons->addButton(QDialogButtonBox::Cancel);
    m_cancel->setObjectName(QStringLiteral("importCancelButton"));
    connect(m_start, &QPushButton::clicked, this, &ImportDialog::startFromForm);
    // While exporting, Cancel stops the job and keeps the dialog open to show the outcome.
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (isRunning())
            cancelImport();
        else
            reject();
    });

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(m_progress);
    layout->addWidget(m_message);
    layout->addStretch(1);
    layout->addWidget(buttons);
    resize(620, 360);

    connect(m_browse, &QPushButton::clicked, this, &ImportDialog::browse);
    // A name is suggested from the source; the user may still type another.
    auto suggestName = [this] {
        if (m_fromHf->isChecked())
            m_name->setText(QFileInfo(QDir::cleanPath(m_hfDir->text())).fileName());
        else
            m_name->setText(QStringLiteral("florence2-%1-random-%2")
                                .arg(m_randomSize->currentText())
                                .arg(m_seed->value()));
    };
    connect(m_fromHf, &QRadioButton::toggled, this, suggestName);
    connect(m_hfDir, &QLineEdit::textChanged, this, suggestName);
    connect(m_randomSize, &QComboBox::currentTextChanged, this, suggestName);
    connect(m_seed, qOverload<int>(&QSpinBox::valueChanged), this, suggestName);
    connect(m_fromHf, &QRadioButton::toggled, this, &ImportDialog::updateForm);
    connect(m_name, &QLineEdit::textChanged, this, &ImportDialog::updateForm);
    listFound();
    updateForm();
}

void ImportDialog::listFound() {
    m_found->clear();
    for (const FoundCheckpoint& c : findCheckpoints()) {
        const QString layout = c.layout == "native"     ? tr("transformers")
                               : c.layout == "original" ? tr("original")
                                                        : tr("unknown");
        auto* item = new QTreeWidgetItem(
            m_found,
            {QString::fromStdString(c.name), locale().formattedDataSize(c.weightBytes), layout,
             QString::fromStdString(c.revision).left(12), QString::fromStdString(c.where)});
        item->setData(0, Qt::UserRole, QString::fromStdString(c.dir));
        item->setToolTip(0, QString::fromStdString(c.dir));
    }
    if (m_found->topLevelItemCount() == 0)
        m_found->hide(); // nothing in the cache or ~/Downloads: the folder field is the way
}

void ImportDialog::useFound() {
    const QList<QTreeWidgetItem*> chosen = m_found->selectedItems();
    if (chosen.isEmpty() || isRunning())
        return;
    m_fromHf->setChecked(true);
    m_hfDir->setText(chosen.first()->data(0, Qt::UserRole).toString());
    // A snapshot folder is named by its revision: the package is named after the model.
    m_name->setText(chosen.first()->text(0).section(QLatin1Char('/'), -1));
}

ImportDialog::~ImportDialog() = default; // the job cancels the exporter and waits

void ImportDialog::browse() {
    const QString dir = QFileDialog::getExistingDirectory(
        this, tr("Hugging Face Florence-2 folder"), m_hfDir->text());
    if (!dir.isEmpty())
        m_hfDir->setText(dir);
}

void ImportDialog::updateForm() {
    const bool hf = m_fromHf->isChecked();
    m_hfDir->setEnabled(hf && !isRunning());
    m_browse->setEnabled(hf && !isRunning());
    m_randomSize->setEnabled(!hf && !isRunning());
    m_seed->setEnabled(!hf && !isRunning());
    m_name->setEnabled(!isRunning());
    if (!isRunning()) { // while running, m_outDir is the job's folder
        const QString name = m_name->text().trimmed();
        m_outDir = name.isEmpty() ? QString()
                                  : QDir(QString::fromStdString(userModelsDir())).filePath(name);
    }
    m_outLabel->setText(m_outDir.isEmpty() ? tr("(enter a name)") : m_outDir);
    m_start->setEnabled(!isRunning() && !m_outDir.isEmpty() &&
                        (!hf || !m_hfDir->text().trimmed().isEmpty()));
}

void ImportDialog::startFromForm() {
    ImportJobParams job;
    if (m_fromHf->isChecked()) {
        const QString given = m_hfDir->text().trimmed();
        try {
            // A folder, or a name in the Hugging Face cache ("microsoft/Florence-2-base").
            job.hfDir = resolveCheckpoint(QDir::cleanPath(given).toStdString());
        } catch (const std::exception& e) {
            m_message->setText(QString::fromStdString(e.what()));
            return;
        }
        if (!QFileInfo(QString::fromStdString(job.hfDir)).isDir()) {
            m_message->setText(tr("%1 is not a folder.").arg(given));
            return;
        }
    } else {
        job.randomInit = m_randomSize->currentText().toStdString();
        job.seed = m_seed->value();
    }
    if (QFileInfo::exists(m_outDir)) {
        m_message->setText(tr("%1 already exists: choose another package name.").arg(m_outDir));
        return;
    }
    job.outDir = m_outDir.toStdString();
    startImport(job);
}

void ImportDialog::startImport(const ImportJobParams& params) {
    if (isRunning())
        return;
    m_outDir = QString::fromStdString(params.outDir);
    m_progress->setValue(0);
    m_message->setText(tr("Starting the exporter…"));
    QDir().mkpath(QFileInfo(m_outDir).absolutePath());
    m_job = std::make_unique<ImportJob>(params);
    connect(m_job.get(), &ImportJob::progressed, this, &ImportDialog::onProgress);
    connect(m_job.get(), &ImportJob::finished, this, &ImportDialog::onFinished);
    m_job->start();
    m_start->setEnabled(false);
    updateForm();
}

void ImportDialog::cancelImport() {
    if (!isRunning())
        return;
    m_job->cancel();
    m_message->setText(tr("Cancelling…"));
}

void ImportDialog::reject() {
    if (isRunning()) {
        // Close once the exporter has stopped and cleaned up its temporary folder.
        m_closeWhenDone = true;
        cancelImport();
        return;
    }
    QDialog::reject();
}

void ImportDialog::onProgress(int percent, const QString& message) {
    m_progress->setValue(percent);
    m_message->setText(message);
}

void ImportDialog::onFinished(const ImportJobResult& result) {
    updateForm();
    if (result.ok) {
        m_progress->setValue(100);
        m_message->setText(tr("Imported to %1").arg(m_outDir));
        emit imported(m_outDir);
        accept();
        return;
    }
    m_progress->setValue(0);
    m_message->setText(result.cancelled
                           ? tr("Import cancelled.")
                           : tr("Import failed: %1").arg(QString::fromStdString(result.error)));
    if (m_closeWhenDone)
        QDialog::reject();
}

QString ImportDialog::lastMessage() const {
    return m_message->text();
}

} // namespace florence::ui
