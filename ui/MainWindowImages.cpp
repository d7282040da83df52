// The window's images: opening files, pasted and dropped images on the image thread
// (images/ImageOpener.h), showing the one that arrives, and running the vision encoder on it ahead
// of Run (controllers/EncodeAhead.h). The layout and the rest of the wiring are in MainWindow.cpp.
#include "MainWindow.h"

#include "FileDialogs.h"
#include "RecentFiles.h"
#include "RunView.h"
#include "controllers/EncodeAhead.h"
#include "controllers/EngineWorker.h"
#include "controllers/ModelController.h"
#include "controllers/RunController.h"
#include "images/ImageFiles.h"
#include "images/ImageOpener.h"
#include "widgets/ImageView.h"
#include "widgets/LatencyChart.h"

#include <florence/stats.h>

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QMimeData>
#include <QStatusBar>
#include <QTimer>
#include <QUrl>

namespace florence::ui {

void MainWindow::connectImageOpener() {
    m_opener = new ImageOpener(this);
    connect(m_opener, &ImageOpener::opening, this, [this](const QString& name) {
        statusBar()->showMessage(tr("Opening %1…").arg(name));
        updateActions();
    });
    connect(m_opener, &ImageOpener::opened, this, [this](const DecodedImage& d) {
        if (!d.path.isEmpty()) {
            m_files->setLastFolder(QFileInfo(d.path).absolutePath());
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

void MainWindow::connectEncodeAhead() {
    m_encoder = new EncodeAhead(m_worker.get(), this);
    // A new model has a new session without the features: encode again once it is loaded,
    // unless the image was opened during the load (its encode, queued behind the load, is for
    // the new model already; asking again would cancel it after a run was queued behind it).
    connect(m_modelCtl, &ModelController::switching, m_encoder, &EncodeAhead::modelChanging);
    connect(m_modelCtl, &ModelController::ready, this, [this] {
        if (!m_encoder->isPending())
            m_encoder->request(m_image, promptToEncode());
    });
    connect(m_encoder, &EncodeAhead::ready, this, [this](double visionMs, double textMs) {
        m_latency->setEncodedBeforeRun(visionMs, textMs);
        const auto ms = [](double v) { return QString::fromStdString(florence::formatMs(v)); };
        QString message = tr("Image ready");
        if (visionMs > 0 && textMs >= 0)
            message = tr("Image and task ready (vision encoder: %1, text encoder: %2)")
                          .arg(ms(visionMs), ms(textMs));
        else if (textMs >= 0)
            message = tr("Image and task ready (text encoder: %1)").arg(ms(textMs));
        else if (visionMs > 0)
            message = tr("Image ready (vision encoder: %1)").arg(ms(visionMs));
        statusBar()->showMessage(message, 8000);
        // A run queued behind this encode goes on to the next stage.
        if (m_runView->awaitingFirstToken() && m_run->kind() == RunKind::Single)
            m_runView->setPhase(waitingPhase(RunKind::Single, m_run->lastPrompt()));
        emit imageReady(visionMs, textMs);
    });
    // A new task, text or region: its prompt is encoded once the input has been still for a
    // moment (not on every key), unless it is the one encoded already.
    m_promptEncodeTimer = new QTimer(this);
    m_promptEncodeTimer->setSingleShot(true);
    m_promptEncodeTimer->setInterval(400);
    connect(m_promptEncodeTimer, &QTimer::timeout, this, [this] {
        const std::string prompt = promptToEncode();
        if (m_image && prompt != m_encoder->prompt())
            m_encoder->request(m_image, prompt);
    });
}

std::string MainWindow::promptToEncode() const {
    QString error;
    const std::optional<std::string> prompt = currentPrompt(&error);
    return prompt ? *prompt : std::string();
}

QString MainWindow::waitingPhase(RunKind kind, const std::string& prompt) const {
    if (!isModelReady())
        return tr("Waiting for the model to load…");
    // A comparison encodes the image again in every pass, so each measures the same work.
    if (kind == RunKind::Compare || m_encoder->visionMs() < 0)
        return tr("Reading the image (vision encoder)…");
    if (m_encoder->isPending() || m_encoder->prompt() != prompt || m_encoder->textEncoderMs() < 0)
        return tr("Reading the task (text encoder)…");
    return tr("Writing the first word…");
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
    m_latency->setEncodedBeforeRun(-1, -1);
    m_region.reset();
    m_encoder->request(m_image, promptToEncode()); // queued behind a model load, ahead of any run
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

} // namespace florence::ui
