// Plain values of a folder run (File › Process Folder…) exchanged between the dialog (GUI
// thread) and EngineWorker::processFolder (engine thread) by queued signals.
//
//   florence::ui::registerFolderTypes();             // once, before the first connection
//   FolderRequest r;
//   r.job.dir = "/photos";
//   r.job.task = {"<CAPTION>", "", std::nullopt};
//   r.cancel = std::make_shared<std::atomic<bool>>(false);
//   QMetaObject::invokeMethod(worker, [=] { worker->processFolder(r); }, Qt::QueuedConnection);
#pragma once

#include <florence/batch.h>

#include <QImage>
#include <QMetaType>
#include <QString>

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

namespace florence::ui {

struct FolderRequest {
    FolderJobParams job; // its settings: what the window's panel changed from the defaults
    // Set by the GUI thread to stop the run after the image being answered (which is dropped).
    std::shared_ptr<std::atomic<bool>> cancel;
};

// Sent once when the images are listed (done 0) and once per image as it completes.
struct FolderProgress {
    size_t done = 0;  // images answered or failed so far
    size_t total = 0; // images to process (those with results skipped)
    size_t skipped = 0;
    double elapsedSeconds = 0;
    QString path;  // the image just completed ("" in the first)
    QString error; // why it has no answer; "" when answered
};

struct FolderOutcome {
    size_t answered = 0;
    size_t skipped = 0;                                // had results already
    std::vector<std::pair<QString, QString>> failures; // image, reason
    QString error;    // what stopped the run before it started (no model, missing folder, …)
    QString cocoPath; // the folder's COCO file, "" when not written
    bool cancelled = false;
};

// Registers the types above for queued connections.
void registerFolderTypes();

} // namespace florence::ui

Q_DECLARE_METATYPE(florence::ui::FolderRequest)
Q_DECLARE_METATYPE(florence::ui::FolderProgress)
Q_DECLARE_METATYPE(florence::ui::FolderOutcome)
