#include "run/ImageLoader.h"

#include <QBuffer>
#include <QByteArray>
#include <QFileInfo>

#include <exception>
#include <utility>
#include <vector>

namespace florence::ui {

ImageLoader::ImageLoader(std::shared_ptr<const std::atomic<quint64>> latest, QObject* parent)
    : QObject(parent), m_latest(std::move(latest)) {}

void ImageLoader::loadFile(quint64 id, const QString& path) {
    if (superseded(id))
        return;
    const QFileInfo info(path);
    DecodedImage out;
    out.id = id;
    out.path = info.absoluteFilePath();
    out.name = info.fileName();
    try {
        out.image = std::make_shared<const RgbImage>(loadImage(path.toStdString()));
    } catch (const std::exception& e) {
        out.error = QString::fromStdString(e.what());
    }
    emit finished(out);
}

void ImageLoader::decodePasted(quint64 id, const QImage& image, const QString& name) {
    if (superseded(id))
        return;
    DecodedImage out;
    out.id = id;
    out.name = name;
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    try {
        if (!image.save(&buffer, "PNG"))
            throw ImageError(name.toStdString() + ": the image could not be converted to PNG");
        out.image = std::make_shared<const RgbImage>(
            decodeImage(std::vector<uint8_t>(bytes.begin(), bytes.end()), name.toStdString()));
    } catch (const std::exception& e) {
        out.error = QString::fromStdString(e.what());
    }
    emit finished(out);
}

} // namespace florence::ui
