// Test-only access to MainWindow (its friend): the engine worker and synthetic answers, neither
// of which the shipped window offers.
//
//   florence::ui::MainWindowTester t(window);
//   t.showAnswerText("<OD>", "</s><s>car<loc_52><loc_333><loc_932><loc_774></s>");
#pragma once

#include "MainWindow.h"
#include "RunView.h"
#include "controllers/EngineWorker.h"
#include "controllers/RunController.h"
#include "controllers/TaskPrompt.h"
#include "images/ImageOpener.h"
#include "images/WindowImage.h"

#include <string>

namespace florence::ui {

class MainWindowTester {
public:
    explicit MainWindowTester(MainWindow* w) : m_w(w) {}

    // For tests that must act on the engine thread at a precise moment (e.g. between
    // runStarted and the first stage).
    EngineWorker* engineWorker() const { return m_w->m_worker.get(); }
    // The object decoding images on their own thread (to hold that thread, as a slow decode does).
    ImageDecodeWorker* imageLoader() const { return m_w->m_images->opener()->loader(); }

    // Shows `text` as if a run of `task` had generated it: the same token, refresh and finish
    // handlers a real run goes through (parse, table, overlay), without the model.
    void showAnswerText(const QString& task, const std::string& text) const {
        if (!m_w->m_image)
            return;
        // The region asked about, as a real run of a region task sends it.
        const RunRequest r =
            m_w->m_run->start(RunKind::Single, task, m_w->m_run->lastPrompt(), m_w->m_image,
                              m_w->m_imageName, {}, taskRegion(task, m_w->m_region));
        TokenUpdate u;
        u.runId = r.runId;
        int step = 0;
        size_t pos = 0;
        while (pos < text.size()) {
            // One "token" per special token or per word, like the real stream.
            size_t end = text[pos] == '<' ? text.find('>', pos) : text.find_first_of("< ", pos + 1);
            end = end == std::string::npos ? text.size() : (text[pos] == '<' ? end + 1 : end);
            u.event.step = step++;
            u.event.textDelta = text.substr(pos, end - pos);
            u.event.stepMs = 1.0;
            u.elapsedMs = step;
            m_w->m_runView->onToken(u);
            m_w->m_runView->refresh();
            pos = end;
        }
        RunOutcome o;
        o.runId = r.runId;
        o.task = task;
        o.result.text = text;
        o.result.generatedIds.assign(static_cast<size_t>(step) + 1, 0);
        o.result.timings.stepMs.assign(static_cast<size_t>(step), 1.0);
        o.result.timings.totalMs = step;
        m_w->m_runView->onRunFinished(o);
    }

private:
    MainWindow* m_w;
};

} // namespace florence::ui
