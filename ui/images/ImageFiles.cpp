#include "images/ImageFiles.h"

#include <QBuffer>
#include <QDir>
#include <QFileInfo>
#include <QObject>

#include <exception>
#include <vector>

namespace florence::ui {

OpenedImage readImageFile(const QString& path, const DecodeOptions& options) {
    OpenedImage o;
    try {
        o.image = std::make_shared<const RgbImage>(loadImage(path.toStdString(), options));
    } catch (const std::exception& e) {
        o.error = QObject::tr("Cannot open the image: %1").arg(QString::fromStdString(e.what()));
        return o;
    }
    const QFileInfo fi(path);
    o.path = fi.absoluteFilePath();
    o.name = fi.fileName();
    return o;
}

OpenedImage readImageData(const QImage& image, const QString& name) {
    OpenedImage o;
    o.name = name;
    if (image.isNull()) {
        o.error = QObject::tr("The clipboard or drop holds no readable image.");
        return o;
    }
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    image.save(&buffer, "PNG");
    try {
        o.image = std::make_shared<const RgbImage>(
            decodeImage(std::vector<uint8_t>(bytes.begin(), bytes.end()), name.toStdString()));
    } catch (const std::exception& e) {
        o.error = QObject::tr("Cannot use the image: %1").arg(QString::fromStdString(e.what()));
    }
    return o;
}

QImage toQImage(const RgbImage& img) {
    const QImage view(img.pixels.data(), img.width, img.height, img.width * 3,
                      QImage::Format_RGB888);
    return view.copy();
}

QString firstRunImage(const QString& samplesDir) {
    if (samplesDir.isEmpty())
        return {};
    const QDir samples(samplesDir);
    const QDir scenes(samples.filePath(QStringLiteral("scenes")));
    if (scenes.exists()) {
        const QStringList pngs =
            scenes.entryList({QStringLiteral("*.png")}, QDir::Files | QDir::Readable, QDir::Name);
        if (!pngs.isEmpty())
            return scenes.filePath(pngs.constFirst());
    }
    const QString pier = samples.filePath(QStringLiteral("pier.png"));
    return QFileInfo::exists(pier) ? pier : QString();
}

bool isSampleScene(const QString& path) {
    return QFileInfo(path).dir().dirName() == QLatin1String("scenes");
}

} // namespace florence::ui
