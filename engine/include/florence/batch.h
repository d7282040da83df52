// Many images, one at a time: a folder's images with their sidecar files (what `batch` and the
// app's File › Process Folder write), and the loop that decodes, answers and hands back one
// image after another so memory stays bounded whatever the folder holds. FolderJob
// (<florence/folder_job.h>) puts the two together; use these parts directly only for
// something else (the CLI's `run` over many images prints instead of writing sidecars).
//
//   florence::FolderJobParams params;
//   params.dir = "photos";
//   params.task = {"<CAPTION>", "", std::nullopt};
//   params.formats = florence::kTextSidecar | florence::kJsonSidecar;
//   params.existing = florence::ExistingResults::Skip;     // resume
//   florence::FolderBatch folder(params);                   // throws florence::Error
//   florence::Session session(model);
//   florence::ImageRunHooks hooks;
//   hooks.onImageDone = [&](const florence::ImageOutcome& o) {
//       if (o.error.empty())
//           folder.writeResult(o.path, o.answer, documentFor(o));  // temp file + rename
//       return true;                                               // false stops
//   };
//   opts.cancel = &stopFlag;                                       // stops between images too
//   florence::runImages(session, folder.pendingImages(), params.task, opts, 1, hooks);
//   folder.writeCoco();
#pragma once

#include <florence/answer.h>
#include <florence/engine.h>
#include <florence/files.h> // writeFileAtomically, used with the sidecars
#include <florence/generation_settings.h>
#include <florence/tasks.h>

#include <QJsonObject>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace florence {

// Sidecar formats, or-ed together. Each applies only where it makes sense: text to answers
// that are text (captions, OCR, region descriptions), COCO to answers with geometry and to
// region tasks (a box on the region asked about, labelled with the answer).
enum SidecarFormat : unsigned {
    kTextSidecar = 1, // photo.caption.txt (caption tasks), photo.ocr.txt, …: readableText()
    kJsonSidecar = 2, // photo.florence.json: the answer document of <florence/answer_json.h>
    kCocoFile = 4,    // one COCO file for the folder, <OUT>/<TASK>.coco.json, e.g. OD.coco.json
    kCaptionFile = 8, // photo.txt, a training set's caption file: captionFileText()
};

// How the caption files of a training set are written (kohya_ss, OneTrainer and TagGUI read
// photo.txt beside photo.jpg).
struct CaptionOptions {
    std::string separator = ", ";      // between tags: ", " or "\n"
    std::string prefix;                // first tag, e.g. a trigger word ("" = none)
    std::string suffix;                // last tag ("" = none)
    bool lowercase = false;            // the answer's tags in lower case (not prefix/suffix)
    std::vector<std::string> dropTags; // tags left out, compared without letter case
    // An existing photo.txt gets the new tags after its own (the separator between) instead of
    // being replaced; the image is then answered even when resuming.
    bool append = false;
};

// A caption file's text: the answer without model tokens (readableText), split into tags at
// commas and line breaks, each trimmed, empty and dropped ones left out, lower-cased if asked,
// then prefix, tags and suffix joined by the separator.
std::string captionFileText(const std::string& answerText, const CaptionOptions& options);

// "txt,json,coco,caption" → formats; throws Error naming an unknown entry.
unsigned parseSidecarFormats(const std::string& list);
// The formats of `formats` that apply to `task`'s answers.
unsigned applicableFormats(const std::string& task, unsigned formats);

// What to do with an image whose result already exists.
enum class ExistingResults {
    Refuse,    // FolderBatch throws ExistingResultsError, naming how many
    Skip,      // resume: only images without a result are processed
    Overwrite, // every image is processed again and its sidecars replaced
};

// What the run would replace and is refused: images with results under ExistingResults::Refuse
// (the message ends with FolderJobParams::existingHint), or a COCO file this app did not write
// (it ends with FolderJobParams::keepHint).
class ExistingResultsError : public Error {
public:
    using Error::Error;
};

struct FolderJobParams {
    std::string dir;        // the folder of images
    bool recursive = false; // also the images in its sub-folders
    // When not empty, these images instead of the folder's (a shard of a larger set); `dir` is
    // then the root their results mirror under outDir (images outside it: by file name).
    std::vector<std::string> files;
    std::string outDir; // "" = sidecars next to the images; else the same tree under it
    TaskRequest task;   // the task and its text (or region) for every image
    unsigned formats = kTextSidecar | kJsonSidecar | kCocoFile; // kCocoFile implies kJsonSidecar
    ExistingResults existing = ExistingResults::Refuse;
    // How the caller's user keeps a file the run will not replace, ending the refusal's message
    // ("NAME.florence.json holds <OD>'s answer; choose Overwrite or another output folder").
    std::string keepHint = "choose Overwrite or another output folder";
    // How the caller's user chooses for images that have results under ExistingResults::Refuse,
    // ending that refusal's message ("3 of the 5 images already have results: …").
    std::string existingHint = "skip them or answer them again";
    CaptionOptions caption; // for kCaptionFile
    // How the images are answered (FolderJob; FolderBatch does not read these).
    GenerationSettings settings; // applied to the model's defaults
    int batchSize = 1;           // images decoded and run together
    DecodeOptions decode;        // e.g. whether a photo's EXIF orientation is applied
};

// Image files a folder holds (PNG, JPEG, BMP, TIFF, WebP by name, any letter case), sorted by
// path. Throws Error when `dir` is not a folder.
std::vector<std::string> listImages(const std::string& dir, bool recursive);

// A folder's images and where their results go. Holds the list of paths only, never images or
// answers. Every file is written to a temporary name beside it and renamed, so a cancelled or
// killed run leaves each sidecar either whole or absent.
class FolderBatch {
public:
    // Lists the images and checks which already have a result. Throws Error: the folder is
    // missing or holds no images, the task is unknown or lacks its text, the output folder
    // cannot be made, or results exist and `existing` is Refuse.
    explicit FolderBatch(FolderJobParams job);

    const FolderJobParams& job() const { return m_job; }
    unsigned formats() const { return m_formats; } // those that apply to the task
    const std::vector<std::string>& images() const { return m_images; }
    // The images to process: all of them, or those without a result when resuming.
    const std::vector<std::string>& pendingImages() const { return m_pending; }
    size_t skippedCount() const { return m_skipped; }
    // The images that cannot be processed and why (two images whose sidecars would have the
    // same name; a result of another task, a file that is not an answer document, a FIFO or a
    // device in the way), reported with the run's failures. An empty or cut JSON sidecar (a
    // write that did not finish) is not in the way: the image is processed again.
    const std::vector<std::pair<std::string, std::string>>& refused() const { return m_refused; }

    // Sidecar paths of one image ("" when that format is not written).
    std::string textPath(const std::string& image) const;
    std::string captionPath(const std::string& image) const; // photo.txt (kCaptionFile)
    std::string jsonPath(const std::string& image) const;
    // The folder's COCO file ("" when not written).
    std::string cocoPath() const;
    // Whether every sidecar the job writes exists for `image` (the JSON one for this task).
    bool hasResult(const std::string& image) const;

    // What writeResult writes to the image's caption file (kCaptionFile), for a preview: the
    // answer's tags, after the file's own when appending. Throws Error naming a file it cannot
    // read.
    std::string captionFileContent(const std::string& image, const ParsedAnswer& answer) const;
    // Writes the sidecars of one answered image. Throws Error naming the file it cannot write.
    void writeResult(const std::string& image, const ParsedAnswer& answer,
                     const QJsonObject& document) const;
    // Assembles the COCO file from the JSON sidecars of every listed image that has one, so a
    // resumed run's file covers the earlier runs' images too; file names are relative to the
    // COCO file's folder. Reads one sidecar at a time. Throws Error naming the COCO file when it
    // cannot be written whole (the old one is then kept). Does nothing unless the job writes
    // COCO.
    void writeCoco() const;

private:
    std::string sidecarBase(const std::string& image) const;
    void checkExisting();
    // Why `image` cannot be processed (a device where a result goes, a sidecar that is not
    // ours), or "".
    std::string refusal(const std::string& image) const;

    FolderJobParams m_job;
    unsigned m_formats = 0;
    std::vector<std::string> m_images;
    std::vector<std::string> m_pending;
    size_t m_skipped = 0;
    std::vector<std::pair<std::string, std::string>> m_refused;
};

// Counts, rate and time left of a run over many images.
struct BatchProgress {
    size_t done = 0;  // images answered or failed so far
    size_t total = 0; // images to process
    double elapsedSeconds = 0;
    double imagesPerSecond = 0; // done / elapsed (0 before the first)
    double etaSeconds = -1;     // (total - done) / rate; -1 before the first image
    // "12/200  3.4 images/s  ETA 0:56"
    std::string summary() const;
};
BatchProgress batchProgress(size_t done, size_t total, double elapsedSeconds);

// One image of runImages: answered (error empty) or not (decode or engine error).
struct ImageOutcome {
    size_t index = 0; // position in the list
    std::string path;
    std::string error;  // why the image has no answer; "" when answered
    std::string prompt; // the text fed to the model
    Result result;
    ParsedAnswer answer;
    int width = 0, height = 0;
    bool orientationApplied = false; // the image's EXIF orientation was applied (RgbImage)
};
// Called before an image is answered, with the decoded image (e.g. for a thumbnail).
using ImageStartCallback =
    std::function<void(size_t index, const std::string& path, const RgbImage& image)>;
// Called once per image as it completes, in list order; return false to stop.
using ImageDoneCallback = std::function<bool(const ImageOutcome& outcome)>;

// What runImages reports; it stops at the options' cancel (GenerationOptions::cancel).
struct ImageRunHooks {
    ImageStartCallback onImageStarted; // optional
    ImageDoneCallback onImageDone;     // optional
};

// Answers `task` on each image: decodes `batchSize` images, runs them (generateBatch), hands
// each answer to hooks.onImageDone and drops the images before the next ones are decoded. An
// image that cannot be read, or whose prompt cannot be built, is reported with its error and
// never stops the run. Stops between images, and mid-generation, when options.cancel is set;
// the image interrupted mid-generation is not reported. options.onToken hears each image's
// steps, TokenEvent::index being the image's position in `paths`. Returns the number of images
// reported.
size_t runImages(Session& session, const std::vector<std::string>& paths, const TaskRequest& task,
                 const GenerationOptions& options, int batchSize, const ImageRunHooks& hooks,
                 const DecodeOptions& decode = {});

} // namespace florence
