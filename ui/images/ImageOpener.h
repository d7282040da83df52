// The image being opened. Files, pasted and dropped images are decoded by ImageDecodeWorker on a
// thread of its own, so the window stays responsive whatever the file; the newest request wins
// (an older one still queued is never read, one still decoding is ignored when it ends). The
// result comes back on the GUI thread as `opened` or `failed`.
//
//   ImageOpener opener;
//   connect(&opener, &ImageOpener::opened, window, [](const DecodedImage& d) { show(d.image); });
//   connect(&opener, &ImageOpener::failed, window, &MainWindow::showError);
//   opener.openFile("pier.png");
//   opener.whenSettled([] { startRun(); }); // after pier.png has opened (or failed)
#pragma once

#include "controllers/WorkerThread.h"
#include "images/ImageDecodeWorker.h"

#include <QObject>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

class QImage;

namespace florence::ui {

class ImageOpener : public QObject {
    Q_OBJECT

public:
    explicit ImageOpener(QObject* parent = nullptr);
    // Waits for a decode in progress (bounded by the engine's file and pixel limits); queued
    // requests are dropped unread.
    ~ImageOpener() override;

    void openFile(const QString& path);
    void openPasted(const QImage& image, const QString& name);
    // The image the last session showed, unless opening it then did not finish or failed
    // (images/StartupReopen.h): false when it is skipped.
    bool openAtStartup(const QString& path);
    // Whether files opened from now on are turned upright by their EXIF orientation (as image
    // viewers show them; off: the pixels as stored, the frame Florence-2's own processor sees).
    void setExifRotate(bool on) { m_exifRotate = on; }
    bool exifRotate() const { return m_exifRotate; }
    // An open is in progress: what the window shows is about to be replaced.
    bool isPending() const { return m_pending; }
    // Calls `f` once the newest request has ended, after `opened` or `failed` (at once when
    // nothing is pending).
    void whenSettled(std::function<void()> f);
    // Tests queue work on the decoding thread through this.
    ImageDecodeWorker* loader() const { return m_loader.get(); }

signals:
    // `name`: the file name or what the pasted image is called.
    void opening(const QString& name);
    void opened(const florence::ui::DecodedImage& result);
    // The whole message for the user, naming the file; the image on screen stays.
    void failed(const QString& message);

private:
    quint64 next();
    void onFinished(const DecodedImage& result);

    std::shared_ptr<std::atomic<quint64>> m_latest;
    quint64 m_lastId = 0;
    quint64 m_startupId = 0; // the request opening the last session's image, 0 if none
    bool m_pending = false;
    bool m_exifRotate = true;
    std::vector<std::function<void()>> m_whenSettled;
    // Declared last: the thread is stopped before the loader it runs is destroyed.
    std::unique_ptr<ImageDecodeWorker> m_loader;
    ThreadPtr m_thread;
};

} // namespace florence::ui
