// Encode on open: whenever the image shown or the model changes, the engine worker
// runs the vision encoder ahead of Run, so a run's first token does not wait for it; with the
// prompt of the task chosen (and again when the task changes) the text encoder too, so a run of
// that task starts decoding at once. A run is
// queued behind the encode on the engine thread, so it waits for it and reuses its features
// rather than starting a second encode. A newer image or model cancels an older request (one
// still queued is skipped; one in an encoder stops at the encoder's next operator). A newer
// prompt for the same image skips only the older request's prompt: its vision pass goes on, and
// the newer request finds the features.
//
//   EncodeAhead encoder(worker);
//   connect(&encoder, &EncodeAhead::ready, window, [](double visionMs, double textMs) { … });
//   encoder.request(image, prompt);   // after opening it, after a model (re)load, a new task
#pragma once

#include "controllers/WorkerTypes.h"

#include <QObject>

#include <atomic>
#include <memory>

namespace florence::ui {

class EngineWorker;

class EncodeAhead : public QObject {
    Q_OBJECT

public:
    explicit EncodeAhead(EngineWorker* worker, QObject* parent = nullptr);
    ~EncodeAhead() override;

    // Cancels the previous request and queues `image` with `prompt` (may be empty; nothing
    // for a null image).
    void request(std::shared_ptr<const RgbImage> image, const std::string& prompt = {});
    // Cancels the request in flight (a newer one follows).
    void cancel();
    // The model is about to change: what the worker encodes now would be thrown away, and the
    // times measured were the old model's.
    void modelChanging();
    bool isPending() const { return m_pending; }
    // The vision encoder's time for the image last requested, measured ahead of Run; < 0 until
    // known.
    double visionMs() const { return m_visionMs; }
    // The prompt last requested, and the text encoder's time for it ahead of Run (< 0 until
    // known, or without a prompt).
    const std::string& prompt() const { return m_prompt; }
    double textEncoderMs() const { return m_textEncoderMs; }

signals:
    // The features of the image last requested (and its prompt's encoding, textEncoderMs >= 0)
    // are ready for Run.
    void ready(double visionMs, double textEncoderMs);
    void failed(const QString& message);

private:
    void onEncoded(const florence::ui::EncodeOutcome& outcome);

    EngineWorker* m_worker;
    std::shared_ptr<const RgbImage> m_image;
    std::string m_prompt;
    quint64 m_lastId = 0;
    // The first request for m_image with the current model: an older request of that image
    // whose prompt a newer one skipped still measured its vision pass.
    quint64 m_imageFirstId = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::shared_ptr<std::atomic<bool>> m_skipPrompt; // the request in flight's
    bool m_pending = false;
    double m_visionMs = -1;
    double m_textEncoderMs = -1;
};

} // namespace florence::ui
