#include "controllers/RunController.h"

#include "presentation/AnswerDisplay.h"

namespace florence::ui {

RunRequest RunController::start(RunKind kind, const QString& task, std::string prompt,
                                std::shared_ptr<const RgbImage> image, const QString& imageName,
                                GenerationOptions options, std::optional<Box> askedRegion) {
    // One run at a time: the old one stops at its next step and its late tokens are ignored.
    if (m_cancel)
        m_cancel->store(true);
    RunRequest r;
    r.runId = ++m_lastRunId;
    r.kind = kind;
    r.task = task;
    r.prompt = std::move(prompt);
    r.image = image;
    r.options = options;
    r.cancel = std::make_shared<std::atomic<bool>>(false);

    m_activeRunId = r.runId;
    m_kind = kind;
    m_task = task;
    m_image = std::move(image);
    m_imageName = imageName;
    m_askedRegion = askedRegion;
    m_cancel = r.cancel;
    m_resultsStarted = false;
    m_started = false;
    m_tokensReceived = 0;
    m_lastPrompt = r.prompt;
    m_lastOptions = r.options;
    return r;
}

void RunController::cancel() {
    if (m_cancel)
        m_cancel->store(true);
}

void RunController::finish() {
    m_activeRunId = 0;
    m_cancel.reset();
    m_image.reset();
}

void RunController::beginResults() {
    // Earlier results stay until the new run has produced something, so a run that fails or is
    // cancelled before its first token loses nothing.
    m_resultsStarted = true;
    m_answerImage = m_image;
    m_answerImageName = m_imageName;
    m_answerTask = m_task;
    m_answerAskedRegion = m_askedRegion;
    m_answerPrompt = m_lastPrompt;
    m_answerOptions = m_lastOptions;
    m_answerResult = Result();
    m_answerText.clear();
    m_answer = ParsedAnswer();
    m_shown = ParsedAnswer();
}

void RunController::setAnswerText(const std::string& text, const ParsedAnswer* scored) {
    m_answerText = text;
    m_answerResult.text = text;
    m_answer = scored ? *scored
                      : parseAnswer(m_answerTask.toStdString(), text, m_answerImage->width,
                                    m_answerImage->height);
    m_shown = displayAnswer(m_answer, m_answerAskedRegion);
}

RunController::Accepted RunController::acceptToken(const TokenUpdate& u) {
    if (!isActive(u.runId))
        return Accepted::Stale;
    const bool first = !m_resultsStarted;
    if (first)
        beginResults();
    ++m_tokensReceived;
    // Only the cached pass of a comparison is shown as the answer; both passes give the same.
    // A token brings what its step added; a pass's first step, or a beam search that switched
    // hypothesis, starts the text again.
    if (u.pass == 0) {
        const TokenEvent& e = u.event;
        setAnswerText(e.rewound || e.step == 0 ? e.textDelta : m_answerText + e.textDelta);
    }
    return first ? Accepted::FirstOfRun : Accepted::Next;
}

RunController::Accepted RunController::acceptOutcome(const RunOutcome& o) {
    if (!isActive(o.runId))
        return Accepted::Stale;
    const bool first = !m_resultsStarted && !o.cancelled();
    if (first)
        beginResults();
    if (m_resultsStarted && o.pass == 0) {
        m_answerResult = o.result;
        // A comparison's shown pass is its cached one, whatever the Generation group says.
        m_answerOptions.useCache = o.useCache;
        setAnswerText(o.result.text, o.scored ? &*o.scored : nullptr);
    }
    return first ? Accepted::FirstOfRun : Accepted::Next;
}

void RunController::showRecorded(const QString& task, const std::string& text,
                                 const ParsedAnswer& answer, std::shared_ptr<const RgbImage> image,
                                 const QString& imageName, const std::optional<Box>& askedRegion) {
    m_answerImage = std::move(image);
    m_answerImageName = imageName;
    m_answerTask = task;
    m_answerAskedRegion = askedRegion;
    m_answerText = text;
    m_answer = answer;
    m_shown = displayAnswer(m_answer, m_answerAskedRegion);
}

void RunController::clearAnswer() {
    m_answer = ParsedAnswer();
    m_shown = ParsedAnswer();
    m_answerText.clear();
    m_answerResult = Result();
    m_answerImage.reset();
}

} // namespace florence::ui
