#include "Batch.h"

#include "Common.h"

#include <florence/batch.h>
#include <florence/folder_job.h>
#include <florence/tasks.h>

#include <QFile>
#include <QFileInfo>

#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace florence::cli {

namespace {

// One line redrawn in place on a terminal: a bar, the count, images/s, the time left and the
// current file. Silent when stderr is not a terminal (a log gets the summary at the end).
class ProgressLine {
public:
    ProgressLine() : m_tty(isatty(2)) {}
    void show(const BatchProgress& p, const std::string& file) {
        if (!m_tty)
            return;
        const int width = 24;
        const int filled = p.total ? static_cast<int>(width * p.done / p.total) : width;
        std::string bar(filled, '#');
        bar.resize(width, ' ');
        const std::string name = QFileInfo(QString::fromStdString(file)).fileName().toStdString();
        std::fprintf(stderr, "\r[%s] %s  %-24.24s", bar.c_str(), p.summary().c_str(), name.c_str());
        std::fflush(stderr);
    }
    void clear() {
        if (m_tty)
            std::fprintf(stderr, "\r%100s\r", "");
    }

private:
    bool m_tty;
};

const char* kHelp = R"(usage: florence-studio-cli batch --dir DIR --task TOKEN [OPTIONS]

Runs one task on every image of a folder, one image at a time, writing each answer as it
completes. Images that cannot be read are listed at the end and never stop the run.

  --dir DIR           the folder of images (PNG, JPEG, BMP, TIFF, WebP)
  --files LIST        only the images listed in LIST, one path a line (relative to the
                      current folder); --dir, when given, is the root their results mirror
  --recursive         also the images of DIR's sub-folders
  --task TOKEN        task token, e.g. "<CAPTION>"; --text STR / --region X1,Y1,X2,Y2 its input
  --prompt TEXT       a free prompt instead of a task: sent as it is, answered as text
  --out OUT           write the results under OUT (same sub-folders); default: beside each image
  --format LIST       txt,json,coco,jsonl (default txt,json,coco; each where it applies):
                        txt   NAME.caption.txt (caption tasks), NAME.ocr.txt, … : the answer text
                        json  NAME.florence.json: the answer document (docs/answer-json.md)
                        coco  TASK.coco.json for the folder (tasks with boxes or polygons,
                              and region tasks: a box on the region, labelled with the answer)
                        jsonl one JSON line per image on stdout (same as --jsonl)
  --jsonl             print one JSON line per image on stdout as it completes
  --format caption    NAME.txt beside NAME.png, a training set's caption file, shaped by:
                        --separator comma|newline   between tags (default comma: ", ")
                        --prefix TEXT, --suffix TEXT   first and last tag (a trigger word)
                        --lowercase     the answer's tags in lower case
                        --drop-tags LIST   comma-separated tags left out (any letter case)
                        --append        add to an existing NAME.txt (tags it has are not
                                        repeated) instead of replacing it
                        --preview       answer the first image and print its file; write nothing
  --resume            skip images whose results exist (default: refuse to run over them)
  --overwrite         process every image again and replace its results
  --model PKG, --beams N, --max-new-tokens N, --no-cache, --threads N, --precision P
  --batch-size N      images decoded and run together (default 1)
  --no-exif-rotate    answer on the pixels as stored, ignoring a photo's EXIF orientation
                      (as Florence-2's Python processor does; default: turned upright)
  --quiet             no progress bar, and no summary unless some image failed

Results are written whole or not at all: a full disk leaves each file as it was, and the
image is listed as failed. An empty or cut NAME.florence.json is answered again.

Exit code: 0 all answered, 3 some images failed or their results could not be written (listed
on stderr), 130 interrupted (Ctrl+C; what was written stays, --resume continues), 1 an error
that stopped the run (the COCO file or stdout could not be written), 2 wrong arguments.
)";

std::vector<std::string> readFileList(const std::string& path) {
    constexpr int64_t kMaxListBytes = 256 << 20; // a million long paths
    QByteArray text;
    try {
        text = readSmallFile(path, kMaxListBytes);
    } catch (const florence::Error& e) {
        throw std::runtime_error("cannot read the file list: " + std::string(e.what()));
    }
    std::vector<std::string> files;
    for (const QByteArray& raw : text.split('\n')) {
        const QString line = QString::fromUtf8(raw).trimmed();
        if (!line.isEmpty())
            files.push_back(line.toStdString());
    }
    if (files.empty())
        throw std::runtime_error("the file list " + path + " names no images");
    return files;
}

// --separator, --prefix, --suffix, --lowercase, --drop-tags, --append, --preview: the caption
// file's shape, for --format caption only.
void captionOptions(const Args& a, FolderJobParams& job) {
    const bool asked = a.has("separator") || a.has("prefix") || a.has("suffix") ||
                       a.has("lowercase") || a.has("drop-tags") || a.has("append") ||
                       a.has("preview");
    if (asked && !(job.formats & florence::kCaptionFile))
        throw UsageError("--separator, --prefix, --suffix, --lowercase, --drop-tags, --append "
                         "and --preview shape caption files: add --format caption");
    const std::string separator = a.get("separator", "comma");
    if (separator != "comma" && separator != "newline")
        throw UsageError("--separator takes comma or newline, not '" + separator + "'");
    job.caption.separator = separator == "comma" ? ", " : "\n";
    job.caption.prefix = a.get("prefix");
    job.caption.suffix = a.get("suffix");
    job.caption.lowercase = a.has("lowercase");
    for (const QString& tag : QString::fromStdString(a.get("drop-tags")).split(','))
        if (!tag.trimmed().isEmpty())
            job.caption.dropTags.push_back(tag.trimmed().toStdString());
    job.caption.append = a.has("append");
}

FolderJobParams batchJob(const Args& a, bool* jsonl) {
    if (!a.positional.empty())
        throw UsageError("unexpected argument '" + a.positional[0] + "'");
    if (!a.has("dir") && !a.has("files"))
        throw UsageError("batch needs --dir DIR (or --files LIST)");
    if (a.has("resume") && a.has("overwrite"))
        throw UsageError("--resume and --overwrite exclude each other");
    FolderJobParams job;
    job.dir = a.get("dir", ".");
    job.recursive = a.has("recursive");
    if (a.has("files"))
        job.files = readFileList(a.get("files"));
    job.outDir = a.get("out");
    job.task = taskRequest(a);
    if (a.has("region"))
        job.task.region = regionOption(a);
    std::string formats = a.get("format", "txt,json,coco");
    *jsonl = a.has("jsonl");
    QStringList parts = QString::fromStdString(formats).split(',', Qt::SkipEmptyParts);
    if (parts.removeAll(QStringLiteral("jsonl")) > 0)
        *jsonl = true;
    try {
        job.formats = parseSidecarFormats(parts.join(',').toStdString());
    } catch (const florence::Error& e) {
        // The engine lists its own formats; the command line takes jsonl as well.
        throw UsageError(std::string("--format: ") + e.what() + " (and jsonl here)");
    }
    if (job.formats == 0 && !*jsonl)
        throw UsageError("--format names nothing to write");
    captionOptions(a, job);
    // How a user goes on from a refusal, in the command line's words.
    job.keepHint = "pass --overwrite to replace it, or --out DIR to write elsewhere";
    job.existingHint = "--resume skips them, --overwrite answers them again";
    job.existing = a.has("resume")      ? ExistingResults::Skip
                   : a.has("overwrite") ? ExistingResults::Overwrite
                                        : ExistingResults::Refuse;
    checkRunNumbers(a);
    job.settings = generationSettings(a);
    job.batchSize = a.getInt("batch-size", 1);
    if (job.batchSize < 1)
        throw UsageError("--batch-size must be at least 1");
    job.decode = decodeOptions(a);
    return job;
}

// What the CLI adds to the job's result: --jsonl could not be written, and the run stopped.
struct BatchOutput {
    bool jsonl = false;
    std::string stdoutError;
};

// One image's --jsonl line. False (stdout lost) stops the run.
bool printJsonl(const FolderImageReport& report, BatchOutput& out) {
    if (!out.jsonl)
        return true;
    std::cout << jsonLine(report.document ? *report.document : failureJson(report.outcome));
    try {
        flushStdout();
    } catch (const florence::Error& e) {
        out.stdoutError = std::string(e.what()) + "; the run stopped (--resume continues)";
        return false;
    }
    return true;
}

void printSummary(const FolderJob& job, const FolderJobResult& r, const BatchOutput& out,
                  bool quiet) {
    if (!quiet || !r.failures.empty() || !out.stdoutError.empty()) {
        std::cerr << "batch: " << r.answered << " answered, " << r.skipped
                  << " skipped (results exist), " << r.failures.size() << " failed"
                  << (r.unwritten
                          ? " (" + std::to_string(r.unwritten) + " answered but not written)"
                          : std::string())
                  << (r.cancelled ? ", interrupted (--resume continues)" : "") << "\n";
        for (const auto& [path, why] : r.failures) // the engine's messages mostly name the file
            std::cerr << "  " << (why.find(path) == std::string::npos ? path + ": " : "") << why
                      << "\n";
        if (!out.stdoutError.empty())
            std::cerr << "batch: " << out.stdoutError << "\n";
    }
    if (!quiet && !job.folder().cocoPath().empty())
        std::cerr << "batch: COCO file " << job.folder().cocoPath() << "\n";
}

FolderJobResult answerPending(const Args& a, const FolderJob& job, BatchOutput& out) {
    auto model = loadModel(a);
    Session session(model);
    installCancelHandler();
    ProgressLine progress;
    FolderJobHooks hooks;
    hooks.cancel = &g_cancel;
    hooks.onImageDone = [&](const FolderImageReport& report) {
        const std::string note =
            report.outcome.error.empty()
                ? clippedRegionNote(job.params().task, report.outcome.path, report.outcome.width,
                                    report.outcome.height)
                : std::string();
        if (!note.empty()) {
            progress.clear(); // the note takes a line of its own; the bar comes back below it
            std::cerr << note;
        }
        const bool go = printJsonl(report, out);
        progress.show(report.progress, report.outcome.path);
        return go;
    };
    FolderJobResult result = job.run(&session, hooks);
    progress.clear();
    return result;
}

// --preview: the first image's caption file as the run would write it; nothing is written.
int previewCaption(const Args& a, const FolderJob& job) {
    if (job.folder().pendingImages().empty())
        throw std::runtime_error("no image to preview: every image is skipped");
    Session session(loadModel(a));
    const std::string content = job.previewCaption(session);
    std::cerr << job.folder().captionPath(job.folder().pendingImages().front()) << " would hold:\n";
    std::cout << content << "\n";
    return 0;
}

} // namespace

int runBatch(int argc, char** argv) {
    for (int i = 2; i < argc; ++i)
        if (std::string(argv[i]) == "--help") {
            std::cout << kHelp;
            return 0;
        }
    const Args a = parseArgs(argc, argv, 2,
                             {"dir", "files", "task", "text", "prompt", "region", "out", "format",
                              "model", "beams", "max-new-tokens", "threads", "precision",
                              "batch-size", "separator", "prefix", "suffix", "drop-tags"},
                             {"recursive", "resume", "overwrite", "jsonl", "no-cache", "quiet",
                              "no-exif-rotate", "lowercase", "append", "preview"});
    BatchOutput out;
    const FolderJob job = [&] {
        try {
            return FolderJob(batchJob(a, &out.jsonl));
        } catch (const ExistingResultsError& e) {
            // Nothing was touched; the message says which way to go on (the job's hints).
            throw UsageError(e.what());
        }
    }();
    if (out.jsonl) { // every image that is not skipped gets its line, the refused ones too
        for (const auto& [path, why] : job.folder().refused()) {
            ImageOutcome refused;
            refused.path = path;
            refused.error = why;
            std::cout << jsonLine(failureJson(refused));
        }
        flushStdout();
    }
    if (a.has("preview"))
        return previewCaption(a, job);
    // Nothing pending (all resumed): no model is loaded; the COCO file is still written.
    const FolderJobResult result =
        job.folder().pendingImages().empty() ? job.run(nullptr) : answerPending(a, job, out);
    printSummary(job, result, out, a.has("quiet"));
    if (!result.cocoError.empty())
        std::cerr << "florence-studio-cli: error: " << result.cocoError << "\n";
    if (result.cancelled)
        return 130;
    if (!out.stdoutError.empty() || !result.cocoError.empty())
        return 1;
    return result.failures.empty() ? 0 : 3;
}

} // namespace florence::cli
