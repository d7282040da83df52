#include "Batch.h"

#include "Common.h"

#include <florence/batch.h>
#include <florence/tasks.h>

#include <QElapsedTimer>
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
                        coco  TASK.coco.json for the folder (tasks with boxes or polygons)
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
  --quiet             no progress bar

Exit code: 0 all answered, 3 some images failed (listed on stderr), 130 interrupted (Ctrl+C;
what was written stays, --resume continues), 1 an error that stopped the run, 2 wrong arguments.
)";

std::vector<std::string> readFileList(const std::string& path) {
    QFile f(QString::fromStdString(path));
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
        throw std::runtime_error("cannot read the file list " + path + ": " +
                                 f.errorString().toStdString());
    std::vector<std::string> files;
    while (!f.atEnd()) {
        const QString line = QString::fromUtf8(f.readLine()).trimmed();
        if (!line.isEmpty())
            files.push_back(line.toStdString());
    }
    if (files.empty())
        throw std::runtime_error("the file list " + path + " names no images");
    return files;
}

// --separator, --prefix, --suffix, --lowercase, --drop-tags, --append, --preview: the caption
// file's shape, for --format caption only.
void captionOptions(const Args& a, FolderJob& job) {
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

FolderJob batchJob(const Args& a, bool* jsonl) {
    if (!a.positional.empty())
        throw UsageError("unexpected argument '" + a.positional[0] + "'");
    if (!a.has("dir") && !a.has("files"))
        throw UsageError("batch needs --dir DIR (or --files LIST)");
    if (a.has("resume") && a.has("overwrite"))
        throw UsageError("--resume and --overwrite exclude each other");
    FolderJob job;
    job.dir = a.get("dir", ".");
    job.recursive = a.has("recursive");
    if (a.has("files"))
        job.files = readFileList(a.get("files"));
    job.outDir = a.get("out");
    job.task = taskRequest(a);
    if (a.has("region")) {
        try {
            job.task.region = florence::parseRegion(a.get("region"));
        } catch (const florence::TaskError&) {
            throw UsageError("--region takes four numbers X1,Y1,X2,Y2 in pixels, not '" +
                             a.get("region") + "'");
        }
    }
    std::string formats = a.get("format", "txt,json,coco");
    *jsonl = a.has("jsonl");
    QStringList parts = QString::fromStdString(formats).split(',', Qt::SkipEmptyParts);
    if (parts.removeAll(QStringLiteral("jsonl")) > 0)
        *jsonl = true;
    try {
        job.formats = parseSidecarFormats(parts.join(',').toStdString());
    } catch (const florence::Error& e) {
        throw UsageError(std::string("--format: ") + e.what());
    }
    if (job.formats == 0 && !*jsonl)
        throw UsageError("--format names nothing to write");
    captionOptions(a, job);
    job.existing = a.has("resume")      ? ExistingResults::Skip
                   : a.has("overwrite") ? ExistingResults::Overwrite
                                        : ExistingResults::Refuse;
    return job;
}

// --preview: the first image's caption file as the run would write it; nothing is written.
int previewCaption(const Args& a, const FolderBatch& folder) {
    if (folder.pendingImages().empty())
        throw std::runtime_error("no image to preview: every image is skipped");
    const std::string image = folder.pendingImages().front();
    auto model = loadModel(a);
    GenerationOptions opts = runOptions(a, *model);
    Session session(model);
    std::string content, error;
    runImages(session, {image}, folder.job().task, opts, 1, [&](const ImageOutcome& o) {
        error = o.error;
        if (o.error.empty())
            content = folder.captionFileContent(o.path, o.answer);
        return true;
    });
    if (!error.empty())
        throw std::runtime_error(error);
    std::cerr << folder.captionPath(image) << " would hold:\n";
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
                              "lowercase", "append", "preview"});
    bool jsonl = false;
    const FolderBatch folder(batchJob(a, &jsonl));
    const int batchSize = a.getInt("batch-size", 1);
    if (batchSize < 1)
        throw UsageError("--batch-size must be at least 1");
    const std::vector<std::string>& pending = folder.pendingImages();
    std::vector<std::pair<std::string, std::string>> failures = folder.refused();
    if (jsonl) // every image that is not skipped gets its line, the refused ones too
        for (const auto& [path, why] : failures) {
            ImageOutcome refused;
            refused.path = path;
            refused.error = why;
            std::cout << jsonLine(failureJson(refused));
        }
    if (a.has("preview"))
        return previewCaption(a, folder);
    size_t answered = 0;
    if (!pending.empty()) {
        auto model = loadModel(a);
        GenerationOptions opts = runOptions(a, *model);
        opts.reuseFeatures = false; // every image is another one
        Session session(model);
        installCancelHandler();
        ProgressLine progress;
        QElapsedTimer clock;
        clock.start();
        size_t done = 0;
        runImages(
            session, pending, folder.job().task, opts, batchSize,
            [&](const ImageOutcome& o) {
                if (o.error.empty()) {
                    const QJsonObject doc =
                        resultJson(o.path, o.prompt, o.result, o.answer, opts, *model);
                    try {
                        folder.writeResult(o.path, o.answer, doc);
                        ++answered;
                    } catch (const florence::Error& e) {
                        failures.emplace_back(o.path, e.what());
                    }
                    if (jsonl)
                        std::cout << jsonLine(doc) << std::flush;
                } else {
                    failures.emplace_back(o.path, o.error);
                    if (jsonl)
                        std::cout << jsonLine(failureJson(o)) << std::flush;
                }
                progress.show(batchProgress(++done, pending.size(), clock.elapsed() / 1000.0),
                              o.path);
                return true;
            },
            &g_cancel);
        progress.clear();
    }
    folder.writeCoco();
    if (!a.has("quiet") || !failures.empty()) {
        std::cerr << "batch: " << answered << " answered, " << folder.skippedCount()
                  << " skipped (results exist), " << failures.size() << " failed"
                  << (g_cancel ? ", interrupted (--resume continues)" : "") << "\n";
        for (const auto& [path, why] : failures) // the engine's messages mostly name the file
            std::cerr << "  " << (why.find(path) == std::string::npos ? path + ": " : "") << why
                      << "\n";
    }
    if (!a.has("quiet") && !folder.cocoPath().empty())
        std::cerr << "batch: COCO file " << folder.cocoPath() << "\n";
    return g_cancel ? 130 : failures.empty() ? 0 : 3;
}

} // namespace florence::cli
