// Encode on open (issue 17): whenever the image shown or the model changes, the engine worker
// runs the vision encoder ahead of Run, so a run's first token does not wait for it. A run is
// queued behind the encode on the engine thread, so it waits for it and reuses its features
// rather than starting a second encode. A newer image or model cancels an older request (one
// still queued is skipped; one already in the encoder finishes and is ignored).
//
//   ImageEncoder encoder(worker);
//   connect(&encoder, &ImageEncoder::ready, window, [](double ms) { say("image ready"); });
//   encoder.request(image);   // after opening it, and again after a model (re)load
#pragma once

#include "run/WorkerTypes.h"

#include <QObject>

#include <atomic>
#include <memory>

namespace florence::ui {

class EngineWorker;

class ImageEncoder : public QObject {
    Q_OBJECT

public:
    explicit ImageEncoder(EngineWorker* worker, QObject* parent = nullptr);
    ~ImageEncoder() override;

    // Cancels the previous request and queues `image` (nothing for a null image).
    void request(std::shared_ptr<const RgbImage> image);
    // The model is about to change: what the worker encodes now would be thrown away.
    void cancel();
    bool isPending() const { return m_pending; }
    // The vision encoder's time for the image last requested, measured ahead of Run; < 0 until
    // known.
    double visionMs() const { return m_visionMs; }

signals:
    // The features of the image last requested are ready for Run.
    void ready(double visionMs);
    void failed(const QString& message);

private:
    void onEncoded(const florence::ui::EncodeOutcome& outcome);

    EngineWorker* m_worker;
    std::shared_ptr<const RgbImage> m_image;
    quint64 m_lastId = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    bool m_pending = false;
    double m_visionMs = -1;
};

} // namespace florence::ui
