#include "dialogs/ProcessFolderDialog.h"

#include "Settings.h"
#include "controllers/EngineWorker.h"

#include <florence/tasks.h>

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QUrl>
#include <QVBoxLayout>

namespace florence::ui {

namespace {

// A format the chosen task's answers do not have (COCO for captions) shows unticked and greyed:
// ticked and greyed read as "will be written". The user's tick comes back with a task that has
// it, and is what the settings keep.
void showFormat(QCheckBox* box, bool applies) {
    const QVariant before = box->property("formatApplies");
    const bool applied = !before.isValid() || before.toBool();
    if (applied && !applies) {
        box->setProperty("formatWanted", box->isChecked());
        box->setChecked(false);
    } else if (!applied && applies) {
        box->setChecked(box->property("formatWanted").toBool());
    }
    box->setProperty("formatApplies", applies);
    box->setEnabled(applies);
}

void setWantedFormat(QCheckBox* box, bool wanted) {
    const QVariant applies = box->property("formatApplies");
    if (!applies.isValid() || applies.toBool())
        box->setChecked(wanted);
    else
        box->setProperty("formatWanted", wanted);
}

bool wantedFormat(const QCheckBox* box) {
    const QVariant applies = box->property("formatApplies");
    return !applies.isValid() || applies.toBool() ? box->isChecked()
                                                  : box->property("formatWanted").toBool();
}

// A line edit with a Browse… button beside it.
QWidget* withBrowse(QWidget* parent, QLineEdit* edit, QPushButton* browse) {
    auto* row = new QWidget(parent);
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(edit, 1);
    layout->addWidget(browse);
    return row;
}

// "sub/a.jpg: not an image in a supported format …": the image relative to the folder, and the
// reason without the full path the engine's message starts with.
QString failureText(const QString& folder, const QString& path, const QString& why) {
    QString reason = why;
    if (reason.startsWith(path + QStringLiteral(": ")))
        reason.remove(0, path.size() + 2);
    const QString name = folder.isEmpty() ? path : QDir(folder).relativeFilePath(path);
    return QStringLiteral("%1: %2").arg(QDir::toNativeSeparators(name), reason);
}

} // namespace

ProcessFolderDialog::ProcessFolderDialog(EngineWorker* worker, QWidget* parent)
    : QDialog(parent), m_worker(worker) {
    setObjectName(QStringLiteral("processFolderDialog"));
    setWindowTitle(tr("Process Folder"));
    registerFolderTypes();
    buildForm();
    buildRunArea();
    const FolderPreferences p = Settings::loadFolder();
    m_folder->setText(p.folder);
    m_recursive->setChecked(p.recursive);
    (p.besideImages ? m_beside : m_elsewhere)->setChecked(true);
    m_outFolder->setText(p.outFolder);
    setWantedFormat(m_formatText, p.formats & kTextSidecar);
    setWantedFormat(m_formatJson, p.formats & kJsonSidecar);
    setWantedFormat(m_formatCoco, p.formats & kCocoFile);
    setWantedFormat(m_formatCaption, p.formats & kCaptionFile);
    connect(worker, &EngineWorker::folderProgress, this, &ProcessFolderDialog::onProgress);
    connect(worker, &EngineWorker::folderImageStarted, this, &ProcessFolderDialog::onImageStarted);
    connect(worker, &EngineWorker::folderFinished, this, &ProcessFolderDialog::onFinished);
    updateForm();
}

ProcessFolderDialog::~ProcessFolderDialog() {
    cancelRun();
}

void ProcessFolderDialog::buildForm() {
    m_form = new QWidget(this);
    auto* form = new QFormLayout(m_form);
    // One label column for every row, right-aligned as the platform style may not do it: rows
    // of the form and of the caption options line up.
    form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_model = new QLabel(tr("no model loaded"), m_form);
    m_model->setObjectName(QStringLiteral("folderModelLabel"));
    m_model->setTextFormat(Qt::PlainText);
    m_model->setWordWrap(true);
    m_model->setToolTip(tr("The model loaded in the main window answers every image, with the "
                           "beams and token limit set there"));
    form->addRow(tr("Model:"), m_model);
    m_folder = new QLineEdit(m_form);
    m_folder->setObjectName(QStringLiteral("folderEdit"));
    m_folder->setPlaceholderText(tr("the folder of images"));
    auto* folderBrowse = new QPushButton(tr("Browse…"), m_form);
    connect(folderBrowse, &QPushButton::clicked, this,
            [this] { browse(m_folder, tr("Folder of Images")); });
    form->addRow(tr("Folder:"), withBrowse(m_form, m_folder, folderBrowse));
    m_recursive = new QCheckBox(tr("Include sub-folders"), m_form);
    m_recursive->setObjectName(QStringLiteral("recursiveCheck"));
    form->addRow(QString(), m_recursive);

    m_task = new QComboBox(m_form);
    m_task->setObjectName(QStringLiteral("folderTaskCombo"));
    for (const TaskInfo& t : allTasks())
        if (t.input != TaskInput::Region) // a region belongs to one image
            m_task->addItem(QString::fromStdString(t.name), QString::fromStdString(t.token));
    form->addRow(tr("Task:"), m_task);
    m_text = new QLineEdit(m_form);
    m_text->setObjectName(QStringLiteral("folderTextEdit"));
    form->addRow(tr("Text:"), m_text);

    m_beside = new QRadioButton(tr("Next to each image"), m_form);
    m_beside->setObjectName(QStringLiteral("besideRadio"));
    m_elsewhere = new QRadioButton(tr("In this folder (same sub-folders):"), m_form);
    m_elsewhere->setObjectName(QStringLiteral("elsewhereRadio"));
    m_outFolder = new QLineEdit(m_form);
    m_outFolder->setObjectName(QStringLiteral("outFolderEdit"));
    m_outBrowse = new QPushButton(tr("Browse…"), m_form);
    connect(m_outBrowse, &QPushButton::clicked, this,
            [this] { browse(m_outFolder, tr("Folder for the Results")); });
    // Both choices in the field column: a radio button as a row's label would widen the label
    // column and push every field out of line with the rows above.
    auto* elsewhereRow = withBrowse(m_form, m_outFolder, m_outBrowse);
    static_cast<QHBoxLayout*>(elsewhereRow->layout())->insertWidget(0, m_elsewhere);
    // Apart in the layout, the two are no longer siblings: a group keeps them exclusive.
    auto* where = new QButtonGroup(m_form);
    where->addButton(m_beside);
    where->addButton(m_elsewhere);
    form->addRow(tr("Results:"), m_beside);
    form->addRow(QString(), elsewhereRow);

    m_formatText = new QCheckBox(tr("Text: NAME.caption.txt (captions), NAME.ocr.txt, …"), m_form);
    m_formatText->setObjectName(QStringLiteral("formatTextCheck"));
    m_formatJson = new QCheckBox(tr("JSON: NAME.florence.json, the whole answer"), m_form);
    m_formatJson->setObjectName(QStringLiteral("formatJsonCheck"));
    m_formatCoco = new QCheckBox(tr("COCO: one file for the folder (boxes and polygons)"), m_form);
    m_formatCoco->setObjectName(QStringLiteral("formatCocoCheck"));
    m_formatCaption = new QCheckBox(tr("Caption file for training sets: NAME.txt (tags)"), m_form);
    m_formatCaption->setObjectName(QStringLiteral("formatCaptionCheck"));
    m_formatCaption->setToolTip(tr("One NAME.txt beside each image, as kohya_ss, OneTrainer and "
                                   "TagGUI read them: the answer's tags, with the options below"));
    form->addRow(tr("Formats:"), m_formatText);
    form->addRow(QString(), m_formatJson);
    form->addRow(QString(), m_formatCoco);
    form->addRow(QString(), m_formatCaption);
    form->addRow(QString(), buildCaptionOptions());
    m_overwrite = new QCheckBox(tr("Overwrite existing results (otherwise those images are "
                                   "skipped, so a cancelled run resumes)"),
                                m_form);
    m_overwrite->setObjectName(QStringLiteral("overwriteCheck"));
    form->addRow(QString(), m_overwrite);
    connect(m_elsewhere, &QRadioButton::toggled, this, &ProcessFolderDialog::updateForm);
    connect(m_task, qOverload<int>(&QComboBox::currentIndexChanged), this,
            &ProcessFolderDialog::updateForm);
}

QWidget* ProcessFolderDialog::buildCaptionOptions() {
    m_captionBox = new QWidget(m_form);
    auto* grid = new QFormLayout(m_captionBox);
    grid->setContentsMargins(20, 0, 0, 0);
    m_separator = new QComboBox(m_captionBox);
    m_separator->setObjectName(QStringLiteral("captionSeparatorCombo"));
    m_separator->addItem(tr("comma: tag, tag"), QStringLiteral(", "));
    m_separator->addItem(tr("one tag per line"), QStringLiteral("\n"));
    m_prefix = new QLineEdit(m_captionBox);
    m_prefix->setObjectName(QStringLiteral("captionPrefixEdit"));
    m_prefix->setPlaceholderText(tr("first tag, e.g. a trigger word"));
    m_suffix = new QLineEdit(m_captionBox);
    m_suffix->setObjectName(QStringLiteral("captionSuffixEdit"));
    m_suffix->setPlaceholderText(tr("last tag"));
    m_dropTags = new QLineEdit(m_captionBox);
    m_dropTags->setObjectName(QStringLiteral("captionDropEdit"));
    m_dropTags->setPlaceholderText(tr("tags to leave out, comma-separated"));
    m_lowercase = new QCheckBox(tr("Lower-case the answer's tags"), m_captionBox);
    m_lowercase->setObjectName(QStringLiteral("captionLowercaseCheck"));
    m_append = new QCheckBox(tr("Append to an existing NAME.txt (new tags only)"), m_captionBox);
    m_append->setObjectName(QStringLiteral("captionAppendCheck"));
    m_captionPreview = new QLabel(m_captionBox);
    m_captionPreview->setObjectName(QStringLiteral("captionPreview"));
    m_captionPreview->setTextFormat(Qt::PlainText);
    m_captionPreview->setWordWrap(true);
    m_captionPreview->setTextInteractionFlags(Qt::TextSelectableByMouse);
    grid->addRow(tr("Separator:"), m_separator);
    grid->addRow(tr("Prefix:"), m_prefix);
    grid->addRow(tr("Suffix:"), m_suffix);
    grid->addRow(tr("Leave out:"), m_dropTags);
    grid->addRow(QString(), m_lowercase);
    grid->addRow(QString(), m_append);
    grid->addRow(tr("Preview:"), m_captionPreview);
    for (QLineEdit* e : {m_prefix, m_suffix, m_dropTags})
        connect(e, &QLineEdit::textChanged, this, &ProcessFolderDialog::updateCaptionPreview);
    for (QCheckBox* c : {m_lowercase, m_formatCaption})
        connect(c, &QCheckBox::toggled, this, &ProcessFolderDialog::updateForm);
    connect(m_separator, qOverload<int>(&QComboBox::currentIndexChanged), this,
            &ProcessFolderDialog::updateCaptionPreview);
    return m_captionBox;
}

CaptionOptions ProcessFolderDialog::captionOptions() const {
    CaptionOptions o;
    o.separator = m_separator->currentData().toString().toStdString();
    o.prefix = m_prefix->text().trimmed().toStdString();
    o.suffix = m_suffix->text().trimmed().toStdString();
    o.lowercase = m_lowercase->isChecked();
    o.append = m_append->isChecked();
    for (const QString& tag : m_dropTags->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        if (!tag.trimmed().isEmpty())
            o.dropTags.push_back(tag.trimmed().toStdString());
    return o;
}

void ProcessFolderDialog::updateCaptionPreview() {
    // What the options make of an answer, before a whole folder is written with them.
    static const char* kExample = "</s><s>A Red Car, street, trees, blue sky</s>";
    const QString text = QString::fromStdString(captionFileText(kExample, captionOptions()));
    m_captionPreview->setText(
        tr("for the answer \"A Red Car, street, trees, blue sky\":\n%1").arg(text));
}

void ProcessFolderDialog::buildRunArea() {
    m_thumbnail = new QLabel(this);
    m_thumbnail->setObjectName(QStringLiteral("folderThumbnail"));
    m_thumbnail->setFixedSize(160, 160);
    m_thumbnail->setAlignment(Qt::AlignCenter);
    m_current = new QLabel(this);
    m_current->setTextFormat(Qt::PlainText);
    m_current->setWordWrap(true);
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("folderProgress"));
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("folderStatus"));
    m_status->setTextFormat(Qt::PlainText);
    m_status->setWordWrap(true);
    m_failed = new QListWidget(this);
    m_failed->setObjectName(QStringLiteral("failedList"));
    m_failed->setToolTip(tr("Images that could not be answered, and why"));
    m_failed->hide();

    m_start = new QPushButton(tr("Start"), this);
    m_start->setObjectName(QStringLiteral("folderStartButton"));
    m_start->setDefault(true);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setObjectName(QStringLiteral("folderCancelButton"));
    m_close = new QPushButton(tr("Close"), this);
    m_close->setObjectName(QStringLiteral("folderCloseButton"));
    connect(m_start, &QPushButton::clicked, this, &ProcessFolderDialog::start);
    connect(m_cancel, &QPushButton::clicked, this, &ProcessFolderDialog::cancelRun);
    connect(m_close, &QPushButton::clicked, this, &ProcessFolderDialog::reject);

    auto* progressRow = new QHBoxLayout;
    progressRow->addWidget(m_thumbnail);
    auto* progressText = new QVBoxLayout;
    progressText->addWidget(m_current);
    progressText->addWidget(m_progress);
    progressText->addWidget(m_status);
    progressText->addStretch(1);
    progressRow->addLayout(progressText, 1);
    m_openResults = new QPushButton(tr("Open Results Folder"), this);
    m_openResults->setObjectName(QStringLiteral("folderOpenButton"));
    m_openResults->setEnabled(false);
    connect(m_openResults, &QPushButton::clicked, this, [this] {
        const QString dir =
            m_elsewhere->isChecked() ? m_outFolder->text().trimmed() : m_folder->text().trimmed();
        QDesktopServices::openUrl(QUrl::fromLocalFile(dir));
    });
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_openResults);
    buttons->addStretch(1);
    buttons->addWidget(m_start);
    buttons->addWidget(m_cancel);
    buttons->addWidget(m_close);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_form);
    layout->addLayout(progressRow);
    layout->addWidget(m_failed, 1);
    layout->addLayout(buttons);
}

void ProcessFolderDialog::setTask(const QString& token, const QString& text) {
    const int index = m_task->findData(token);
    if (index >= 0)
        m_task->setCurrentIndex(index);
    m_text->setText(text);
}

void ProcessFolderDialog::setModelName(const QString& name) {
    m_model->setText(name.isEmpty() ? tr("no model loaded") : name);
}

void ProcessFolderDialog::setFolder(const QString& folder) {
    m_folder->setText(folder);
}

void ProcessFolderDialog::updateForm() {
    const std::string task = m_task->currentData().toString().toStdString();
    const bool needsText = taskInfo(task).input == TaskInput::Text;
    m_text->setEnabled(needsText && !m_running);
    m_text->setPlaceholderText(needsText ? QString::fromStdString(taskInfo(task).inputLabel)
                                         : tr("(not used)"));
    // Only the formats this task's answers have.
    const unsigned applies =
        applicableFormats(task, kTextSidecar | kJsonSidecar | kCocoFile | kCaptionFile);
    showFormat(m_formatText, applies & kTextSidecar);
    showFormat(m_formatCoco, applies & kCocoFile);
    showFormat(m_formatCaption, applies & kCaptionFile);
    m_captionBox->setVisible(m_formatCaption->isChecked());
    m_captionBox->setEnabled(applies & kCaptionFile);
    updateCaptionPreview();
    m_outFolder->setEnabled(m_elsewhere->isChecked());
    m_outBrowse->setEnabled(m_elsewhere->isChecked());
    m_form->setEnabled(!m_running);
    m_start->setEnabled(!m_running);
    m_cancel->setEnabled(m_running);
}

void ProcessFolderDialog::browse(QLineEdit* edit, const QString& caption) {
    const QString dir = edit->text().isEmpty() ? QDir::homePath() : edit->text();
    const QString chosen =
        m_chooser ? m_chooser(caption, dir) : QFileDialog::getExistingDirectory(this, caption, dir);
    if (!chosen.isEmpty())
        edit->setText(chosen);
}

unsigned ProcessFolderDialog::chosenFormats() const {
    return (wantedFormat(m_formatText) ? kTextSidecar : 0u) |
           (wantedFormat(m_formatJson) ? kJsonSidecar : 0u) |
           (wantedFormat(m_formatCoco) ? kCocoFile : 0u) |
           (wantedFormat(m_formatCaption) ? kCaptionFile : 0u);
}

bool ProcessFolderDialog::jobFromForm(FolderJobParams* job, QString* error) const {
    job->dir = m_folder->text().trimmed().toStdString();
    job->recursive = m_recursive->isChecked();
    // The text only for a task that takes one: what the field kept from an earlier task (greyed
    // out, "not used") must not reach a task that refuses text, as in the main window.
    const std::string task = m_task->currentData().toString().toStdString();
    const bool takesText = taskInfo(task).input == TaskInput::Text;
    job->task = {task, takesText ? m_text->text().toStdString() : std::string(), std::nullopt};
    job->outDir = m_elsewhere->isChecked() ? m_outFolder->text().trimmed().toStdString() : "";
    const unsigned formats = applicableFormats(job->task.task, chosenFormats());
    job->formats = formats;
    job->caption = captionOptions();
    job->existing = m_overwrite->isChecked() ? ExistingResults::Overwrite : ExistingResults::Skip;
    if (job->dir.empty())
        *error = tr("Choose the folder of images.");
    else if (m_elsewhere->isChecked() && job->outDir.empty())
        *error = tr("Choose the folder for the results, or keep them next to the images.");
    else if (formats == 0)
        *error = tr("Choose at least one format this task's answers can be written in.");
    else if (taskInfo(job->task.task).input == TaskInput::Text && job->task.text.empty())
        *error = tr("%1 needs a %2: type it in Text.")
                     .arg(m_task->currentText(),
                          QString::fromStdString(taskInfo(job->task.task).inputLabel));
    return error->isEmpty();
}

bool ProcessFolderDialog::start() {
    if (m_running)
        return false;
    FolderRequest request;
    QString error;
    if (!jobFromForm(&request.job, &error)) {
        m_status->setText(error);
        return false;
    }
    savePreferences();
    request.job.settings = m_settings;
    request.job.decode = m_decode;
    m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
    request.cancel = m_cancelFlag;
    m_outcome = FolderOutcome{};
    m_failed->clear();
    m_failed->hide();
    m_progress->setRange(0, 0); // busy until the images are listed
    m_status->setText(tr("Listing the images…"));
    m_current->clear();
    m_thumbnail->clear();
    setRunning(true);
    QMetaObject::invokeMethod(
        m_worker, [w = m_worker, request] { w->processFolder(request); }, Qt::QueuedConnection);
    return true;
}

void ProcessFolderDialog::cancelRun() {
    if (!m_running || !m_cancelFlag)
        return;
    m_cancelFlag->store(true);
    m_status->setText(tr("Cancelling after the current image…"));
}

void ProcessFolderDialog::reject() {
    // Closing while it runs cancels the run; the dialog closes when the worker has stopped.
    if (m_running) {
        m_closeWhenDone = true;
        cancelRun();
        return;
    }
    QDialog::reject();
}

void ProcessFolderDialog::setRunning(bool running) {
    m_running = running;
    updateForm();
    emit runningChanged(running);
}

void ProcessFolderDialog::onProgress(const FolderProgress& p) {
    if (!m_running)
        return;
    m_progress->setRange(0, static_cast<int>(std::max<size_t>(p.total, 1)));
    m_progress->setValue(static_cast<int>(p.done));
    QString text =
        QString::fromStdString(batchProgress(p.done, p.total, p.elapsedSeconds).summary());
    if (p.skipped > 0)
        text += tr("  (%n skipped: results exist)", nullptr, static_cast<int>(p.skipped));
    m_status->setText(text);
    if (!p.error.isEmpty()) {
        m_failed->addItem(failureText(m_folder->text().trimmed(), p.path, p.error));
        m_failed->item(m_failed->count() - 1)->setToolTip(p.error);
        m_failed->show();
    }
}

void ProcessFolderDialog::onImageStarted(const QString& path, const QImage& thumbnail) {
    if (!m_running)
        return;
    m_current->setText(QDir::toNativeSeparators(path));
    m_thumbnail->setPixmap(QPixmap::fromImage(thumbnail));
}

void ProcessFolderDialog::onFinished(const FolderOutcome& outcome) {
    if (!m_running)
        return;
    m_outcome = outcome;
    setRunning(false);
    if (!outcome.cancelled) { // a cancelled run's bar stays where it stopped
        m_progress->setRange(0, 1);
        m_progress->setValue(outcome.error.isEmpty() ? 1 : 0);
    }
    m_openResults->setEnabled(outcome.error.isEmpty());
    m_failed->clear();
    for (const auto& [path, why] : outcome.failures) {
        m_failed->addItem(failureText(m_folder->text().trimmed(), path, why));
        m_failed->item(m_failed->count() - 1)->setToolTip(why);
    }
    m_failed->setVisible(!outcome.failures.empty());
    QString text;
    if (!outcome.error.isEmpty())
        text = tr("Not started: %1").arg(outcome.error);
    else
        text = tr("%1 answered, %2 skipped (results exist), %3 failed%4.")
                   .arg(outcome.answered)
                   .arg(outcome.skipped)
                   .arg(outcome.failures.size())
                   .arg(outcome.cancelled ? tr("; cancelled: Start again resumes") : QString());
    if (!outcome.cocoPath.isEmpty())
        text +=
            QLatin1Char('\n') + tr("COCO file: %1").arg(QDir::toNativeSeparators(outcome.cocoPath));
    m_status->setText(text);
    emit finished(outcome);
    if (m_closeWhenDone)
        QDialog::reject();
}

void ProcessFolderDialog::savePreferences() const {
    FolderPreferences p;
    p.folder = m_folder->text().trimmed();
    p.recursive = m_recursive->isChecked();
    p.besideImages = m_beside->isChecked();
    p.outFolder = m_outFolder->text().trimmed();
    p.formats = chosenFormats();
    Settings::saveFolder(p);
}

} // namespace florence::ui
