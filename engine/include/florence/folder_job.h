// A folder run as one job: a task answered on every image of a folder, each image's sidecars
// written as it completes, the folder's COCO file at the end. The CLI's `batch` and the app's
// File › Process Folder… both run this and only observe it (as qBittorrent's TorrentCreator:
// params, hooks for progress and interruption, a result).
//
//   florence::FolderJobParams params;
//   params.dir = "photos";
//   params.task = {"<CAPTION>", "", std::nullopt};
//   params.existing = florence::ExistingResults::Skip;      // resume
//   params.settings.beams = 1;                              // else the package's defaults
//   florence::FolderJob job(params);                         // lists the images; throws Error
//   florence::FolderJobHooks hooks;
//   hooks.cancel = &stopFlag;
//   hooks.onImageDone = [](const florence::FolderImageReport& r) {
//       std::cerr << r.progress.summary() << "\n";
//       return true;                                         // false stops the run
//   };
//   florence::Session session(model);
//   const florence::FolderJobResult result = job.run(&session, hooks);
#pragma once

#include <florence/batch.h>
#include <florence/engine.h>

#include <QJsonObject>

#include <atomic>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace florence {

// One image as the job finished it.
struct FolderImageReport {
    const ImageOutcome& outcome;
    // The answer document written as its JSON sidecar; null when the image has no answer.
    const QJsonObject* document = nullptr;
    // Why the image has no result: the outcome's error, or why its sidecars could not be
    // written (answered, but a full disk); "" when answered and written.
    std::string error;
    BatchProgress progress; // counts after this image
};

struct FolderJobHooks {
    // Set from another thread (or a signal handler) to stop after the image being answered,
    // which is dropped and answered again by a resumed run.
    const std::atomic<bool>* cancel = nullptr;
    // Before an image is answered, with its decoded pixels (for a thumbnail).
    ImageStartCallback onImageStarted;
    // After each image, in list order; false stops the run.
    std::function<bool(const FolderImageReport&)> onImageDone;
};

struct FolderJobResult {
    size_t answered = 0;  // answered and written
    size_t unwritten = 0; // answered, but a sidecar could not be written
    size_t skipped = 0;   // had results already (resume)
    // Every image without a result and why, in order: those the folder refused first
    // (FolderBatch::refused), then those that failed.
    std::vector<std::pair<std::string, std::string>> failures;
    std::string cocoPath;   // the folder's COCO file, "" when the job writes none
    std::string cocoError;  // why it could not be written ("" when it was, or is not written)
    bool cancelled = false; // the cancel flag stopped the run
    bool stopped = false;   // onImageDone returned false
};

class FolderJob {
public:
    // Lists the images and checks which already have results (FolderBatch); throws Error as
    // FolderBatch does, before any model is needed.
    explicit FolderJob(FolderJobParams params);

    const FolderJobParams& params() const { return m_params; }
    const FolderBatch& folder() const { return m_folder; }

    // Answers the pending images with `session`'s model, writes their sidecars and the COCO
    // file. An image that cannot be read or written is a failure in the result, never an
    // exception; an engine error that stops every image fails each of them. `session` may be
    // null when no image is pending (a resumed run with nothing left: no model is needed).
    FolderJobResult run(Session* session, const FolderJobHooks& hooks = {}) const;

    // What the first pending image's caption file would hold (kCaptionFile), answered with
    // `session` and written nowhere. Throws Error when no image is pending or it fails.
    std::string previewCaption(Session& session) const;

private:
    void answerPending(Session& session, const FolderJobHooks& hooks,
                       FolderJobResult& result) const;

    FolderJobParams m_params;
    FolderBatch m_folder;
};

} // namespace florence
