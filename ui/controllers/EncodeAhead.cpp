#include "controllers/EncodeAhead.h"

#include "controllers/EngineWorker.h"

#include <utility>

namespace florence::ui {

EncodeAhead::EncodeAhead(EngineWorker* worker, QObject* parent)
    : QObject(parent), m_worker(worker) {
    connect(worker, &EngineWorker::imageEncoded, this, &EncodeAhead::onEncoded);
}

EncodeAhead::~EncodeAhead() {
    cancel();
}

void EncodeAhead::cancel() {
    if (m_cancel)
        m_cancel->store(true);
    m_pending = false;
}

void EncodeAhead::modelChanging() {
    cancel();
    m_imageFirstId = m_lastId + 1; // what the old model measured is not this one's
    m_visionMs = -1;
    m_textEncoderMs = -1;
}

void EncodeAhead::request(std::shared_ptr<const RgbImage> image, const std::string& prompt) {
    if (image && image == m_image && m_skipPrompt) {
        // A new task for the image being read (the user picks one seconds after opening it): a
        // large model's vision pass takes seconds, and stopping it would start it over.
        m_skipPrompt->store(true);
        m_pending = false;
    } else {
        cancel();
    }
    if (image != m_image) {
        m_visionMs = -1; // another image: the last time measured is not its
        m_imageFirstId = m_lastId + 1;
    }
    if (image != m_image || prompt != m_prompt)
        m_textEncoderMs = -1;
    m_image = std::move(image);
    m_prompt = prompt;
    if (!m_image)
        return;
    EncodeRequest r;
    r.imageId = ++m_lastId;
    r.image = m_image;
    r.prompt = m_prompt;
    r.cancel = m_cancel = std::make_shared<std::atomic<bool>>(false);
    r.skipPrompt = m_skipPrompt = std::make_shared<std::atomic<bool>>(false);
    m_pending = true;
    QMetaObject::invokeMethod(
        m_worker, [w = m_worker, r] { w->encodeImage(r); }, Qt::QueuedConnection);
}

void EncodeAhead::onEncoded(const EncodeOutcome& outcome) {
    if (outcome.imageId != m_lastId || !m_pending) {
        // An older request for the image shown, whose prompt a newer one skipped: its vision
        // pass is the one the newer request found done.
        if (outcome.imageId >= m_imageFirstId && outcome.error.isEmpty() &&
            !outcome.encoding.alreadyEncoded && outcome.encoding.visionMs > 0)
            m_visionMs = outcome.encoding.visionMs;
        return; // an older image's, or cancelled since
    }
    m_pending = false;
    if (!outcome.error.isEmpty()) {
        emit failed(outcome.error);
        return;
    }
    if (outcome.encoding.cancelled)
        return; // no model yet: requested again once one is loaded
    // Already encoded (the same image again after a reload that found it): the time measured
    // when it was encoded stands.
    if (!outcome.encoding.alreadyEncoded)
        m_visionMs = outcome.encoding.visionMs;
    if (outcome.encoding.promptEncoded && !outcome.encoding.promptAlreadyEncoded)
        m_textEncoderMs = outcome.encoding.textEncoderMs;
    else if (!outcome.encoding.promptEncoded)
        m_textEncoderMs = -1;
    emit ready(m_visionMs, m_textEncoderMs);
}

} // namespace florence::ui
