// Where the window's image comes from: a file, or image data pasted or dropped. Every way in is
// decoded by the engine (format from the signature, size checked before decoding), so alpha and
// colour are handled the same whatever the source. The window calls these on the image thread
// (images/ImageDecodeWorker.h), never on its own.
//
//   florence::ui::OpenedImage o = florence::ui::readImageFile("pier.png");
//   if (!o.image)
//       showMessage(o.error, true);   // "Cannot open the image: …"
#pragma once

#include <florence/image.h>

#include <QImage>
#include <QString>

#include <memory>

namespace florence::ui {

struct OpenedImage {
    std::shared_ptr<const RgbImage> image; // null when it could not be used
    QString path;                          // absolute file path; "" for image data
    QString name;                          // file name, or what the data is called
    QString error;                         // why not, worded for the window
};

// With the EXIF orientation applied unless `options` says not to (<florence/image.h>).
OpenedImage readImageFile(const QString& path, const DecodeOptions& options = {});
// Through PNG and the engine's decoder, as a file would be.
OpenedImage readImageData(const QImage& image, const QString& name);

// The engine's pixels as a QImage of their own.
QImage toQImage(const RgbImage& image);

// The image a first start shows: the first PNG of `samplesDir`/scenes (sample scenes the
// bundled demo model understands) when that folder has one, else `samplesDir`/pier.png; "" when
// neither exists.
QString firstRunImage(const QString& samplesDir);
// Whether `path` is one of those sample scenes (a photograph would get a caption of shapes).
bool isSampleScene(const QString& path);

} // namespace florence::ui
