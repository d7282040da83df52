#include "images/ImageDecodeWorker.h"

#include "images/ImageFiles.h"

#include <QFileInfo>

#include <utility>

namespace florence::ui {

namespace {

DecodedImage decoded(quint64 id, const OpenedImage& o, const QString& path) {
    DecodedImage out;
    out.id = id;
    out.path = o.image ? o.path : QFileInfo(path).absoluteFilePath();
    out.name = o.image || path.isEmpty() ? o.name : QFileInfo(path).fileName();
    out.image = o.image;
    out.error = o.error;
    return out;
}

} // namespace

ImageDecodeWorker::ImageDecodeWorker(std::shared_ptr<const std::atomic<quint64>> latest, QObject* parent)
    : QObject(parent), m_latest(std::move(latest)) {}

void ImageDecodeWorker::loadFile(quint64 id, const QString& path, bool exifRotate) {
    if (superseded(id))
        return;
    DecodeOptions options;
    options.exifRotate = exifRotate;
    emit finished(decoded(id, readImageFile(path, options), path));
}

void ImageDecodeWorker::decodePasted(quint64 id, const QImage& image, const QString& name) {
    if (superseded(id))
        return;
    emit finished(decoded(id, readImageData(image, name), QString()));
}

} // namespace florence::ui
