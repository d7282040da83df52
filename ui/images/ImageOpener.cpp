#include "images/ImageOpener.h"

#include "images/StartupReopen.h"

#include <QFileInfo>
#include <QImage>
#include <QSettings>

#include <utility>

namespace florence::ui {

ImageOpener::ImageOpener(QObject* parent)
    : QObject(parent), m_latest(std::make_shared<std::atomic<quint64>>(0)),
      m_loader(std::make_unique<ImageDecodeWorker>(m_latest)),
      m_thread(makeWorkerThread(QStringLiteral("image"))) {
    qRegisterMetaType<DecodedImage>();
    m_loader->moveToThread(m_thread.get());
    connect(m_loader.get(), &ImageDecodeWorker::finished, this, &ImageOpener::onFinished);
    m_thread->start();
}

ImageOpener::~ImageOpener() {
    m_latest->store(0); // no request has id 0: whatever is still queued is dropped unread
}

quint64 ImageOpener::next() {
    m_pending = true;
    m_latest->store(++m_lastId);
    return m_lastId;
}

void ImageOpener::openFile(const QString& path) {
    const quint64 id = next();
    emit opening(QFileInfo(path).fileName());
    QMetaObject::invokeMethod(
        m_loader.get(),
        [l = m_loader.get(), id, path, rotate = m_exifRotate] { l->loadFile(id, path, rotate); },
        Qt::QueuedConnection);
}

void ImageOpener::openPasted(const QImage& image, const QString& name) {
    const quint64 id = next();
    emit opening(name);
    QMetaObject::invokeMethod(
        m_loader.get(), [l = m_loader.get(), id, image, name] { l->decodePasted(id, image, name); },
        Qt::QueuedConnection);
}

bool ImageOpener::openAtStartup(const QString& path) {
    QSettings settings;
    if (!mayReopenAtStartup(settings, path))
        return false;
    // Recorded before the decode starts: a freeze or crash in it leaves the record behind.
    beginStartupOpen(settings, path);
    openFile(path);
    m_startupId = m_lastId;
    return true;
}

void ImageOpener::whenSettled(std::function<void()> f) {
    if (m_pending)
        m_whenSettled.push_back(std::move(f));
    else
        f();
}

void ImageOpener::onFinished(const DecodedImage& result) {
    if (result.id == m_startupId) {
        QSettings settings;
        endStartupOpen(settings, result.error.isEmpty());
        m_startupId = 0;
    }
    if (result.id != m_lastId)
        return; // a newer request replaces this one
    m_pending = false;
    if (result.error.isEmpty())
        emit opened(result);
    else
        emit failed(result.error);
    std::vector<std::function<void()>> settled;
    settled.swap(m_whenSettled);
    for (const auto& f : settled)
        f();
}

} // namespace florence::ui
