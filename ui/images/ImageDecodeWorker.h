// Decodes images on a thread of its own, so a large or hostile file never freezes the window.
// Requests come in as queued slot calls, results go out as one signal; a request that a newer
// one has superseded by the time its turn comes is dropped without being read.
//
//   auto latest = std::make_shared<std::atomic<quint64>>(0);
//   auto loader = std::make_unique<ImageDecodeWorker>(latest);
//   loader->moveToThread(thread.get());
//   connect(loader.get(), &ImageDecodeWorker::finished, opener, &ImageOpener::onFinished);
//   latest->store(7);
//   QMetaObject::invokeMethod(loader.get(), [l = loader.get()] { l->loadFile(7, "a.png"); },
//                             Qt::QueuedConnection);
#pragma once

#include <florence/image.h>

#include <QImage>
#include <QMetaType>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

namespace florence::ui {

// One finished request: the image, or the message saying why there is none.
struct DecodedImage {
    quint64 id = 0;
    QString path; // "" for a pasted or dropped image
    QString name; // the file name, or what the pasted image is called
    std::shared_ptr<const RgbImage> image;
    QString error; // non-empty when the image could not be read: the window's whole message
};

class ImageDecodeWorker : public QObject {
    Q_OBJECT

public:
    // `latest`: the id of the newest request, set by the requester before queueing it.
    explicit ImageDecodeWorker(std::shared_ptr<const std::atomic<quint64>> latest,
                               QObject* parent = nullptr);

public slots:
    // `exifRotate`: turn a photo upright by its EXIF orientation (DecodeOptions::exifRotate).
    void loadFile(quint64 id, const QString& path, bool exifRotate = true);
    // A pasted or dropped image goes through PNG and the engine's decoder, so alpha and colour
    // handling match opened files.
    void decodePasted(quint64 id, const QImage& image, const QString& name);

signals:
    void finished(const florence::ui::DecodedImage& result);

private:
    bool superseded(quint64 id) const { return id != m_latest->load(); }

    std::shared_ptr<const std::atomic<quint64>> m_latest;
};

} // namespace florence::ui

Q_DECLARE_METATYPE(florence::ui::DecodedImage)
