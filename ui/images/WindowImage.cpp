#include "images/WindowImage.h"

#include "controllers/EncodeAhead.h"
#include "controllers/ModelController.h"
#include "images/ImageOpener.h"

#include <florence/stats.h>

#include <QImage>
#include <QMimeData>
#include <QTimer>
#include <QUrl>

namespace florence::ui {

WindowImage::WindowImage(EngineWorker* worker, ModelController* models, CurrentInput current,
                         QObject* parent)
    : QObject(parent), m_opener(new ImageOpener(this)), m_encoder(new EncodeAhead(worker, this)),
      m_promptTimer(new QTimer(this)), m_current(std::move(current)) {
    connect(m_opener, &ImageOpener::opening, this, &WindowImage::opening);
    connect(m_opener, &ImageOpener::opened, this, &WindowImage::opened);
    connect(m_opener, &ImageOpener::failed, this, &WindowImage::failed);
    // A new model has a new session without the features: encode again once it is loaded,
    // unless the image was opened during the load (its encode, queued behind the load, is for
    // the new model already; asking again would cancel it after a run was queued behind it).
    connect(models, &ModelController::switching, m_encoder, &EncodeAhead::modelChanging);
    connect(models, &ModelController::ready, this, [this] {
        if (!m_encoder->isPending())
            encode();
    });
    connect(m_encoder, &EncodeAhead::ready, this, &WindowImage::encoded);
    m_promptTimer->setSingleShot(true);
    m_promptTimer->setInterval(400);
    connect(m_promptTimer, &QTimer::timeout, this, [this] {
        const EncodeInput in = m_current();
        if (in.image && in.prompt != m_encoder->prompt())
            m_encoder->request(in.image, in.prompt);
    });
}

WindowImage::~WindowImage() = default;

bool WindowImage::openFile(const QString& path) {
    if (path.isEmpty())
        return false;
    m_opener->openFile(path);
    return true;
}

bool WindowImage::openData(const QImage& image, const QString& name, QString* why) {
    if (image.isNull()) {
        *why = tr("The clipboard or drop holds no readable image.");
        return false;
    }
    m_opener->openPasted(image, name);
    return true;
}

bool WindowImage::openMime(const QMimeData* mime, QString* why) {
    if (!mime)
        return false;
    if (mime->hasUrls()) {
        for (const QUrl& url : mime->urls())
            if (url.isLocalFile())
                return openFile(url.toLocalFile());
    }
    if (mime->hasImage())
        return openData(qvariant_cast<QImage>(mime->imageData()), tr("pasted image"), why);
    *why = tr("Nothing to open: drop or paste an image or an image file.");
    return false;
}

void WindowImage::openAtStartup(const QString& path) {
    m_opener->openAtStartup(path);
}

void WindowImage::setExifRotate(bool on) {
    m_opener->setExifRotate(on);
}

bool WindowImage::isOpening() const {
    return m_opener->isPending();
}

bool WindowImage::isEncoding() const {
    return m_encoder->isPending();
}

void WindowImage::afterOpens(std::function<void()> f) {
    m_opener->whenSettled(std::move(f));
}

void WindowImage::encode() {
    const EncodeInput in = m_current();
    m_encoder->request(in.image, in.prompt);
}

void WindowImage::promptChanged(const std::string& prompt) {
    if (prompt != m_encoder->prompt())
        m_promptTimer->start();
}

QString WindowImage::waitingPhase(bool modelReady, RunKind kind, const std::string& prompt) const {
    if (!modelReady)
        return tr("Waiting for the model to load…");
    // A comparison encodes the image again in every pass, so each measures the same work.
    if (kind == RunKind::Compare || m_encoder->visionMs() < 0)
        return tr("Reading the image (vision encoder)…");
    if (m_encoder->isPending() || m_encoder->prompt() != prompt || m_encoder->textEncoderMs() < 0)
        return tr("Reading the task (text encoder)…");
    return tr("Writing the first word…");
}

QString WindowImage::readyMessage(double visionMs, double textMs) {
    const auto ms = [](double v) { return QString::fromStdString(florence::formatMs(v)); };
    if (visionMs > 0 && textMs >= 0)
        return tr("Image and task ready (vision encoder: %1, text encoder: %2)")
            .arg(ms(visionMs), ms(textMs));
    if (textMs >= 0)
        return tr("Image and task ready (text encoder: %1)").arg(ms(textMs));
    if (visionMs > 0)
        return tr("Image ready (vision encoder: %1)").arg(ms(visionMs));
    return tr("Image ready");
}

} // namespace florence::ui
