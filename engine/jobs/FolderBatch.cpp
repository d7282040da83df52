#include <florence/batch.h>

#include <florence/files.h>
#include "platform/RegularFile.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStringDecoder>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

namespace florence {

namespace {

QString qstr(const std::string& s) {
    return QString::fromStdString(s);
}

bool isImageName(const QString& name) {
    static const QStringList kSuffixes = {QStringLiteral("png"),  QStringLiteral("jpg"),
                                          QStringLiteral("jpeg"), QStringLiteral("bmp"),
                                          QStringLiteral("tif"),  QStringLiteral("tiff"),
                                          QStringLiteral("webp")};
    return kSuffixes.contains(QFileInfo(name).suffix().toLower());
}

bool isCaptionTask(const std::string& task) {
    return task.find("CAPTION>") != std::string::npos &&
           taskInfo(task).answerType == AnswerType::PureText;
}

// "caption" for the caption tasks, else the task's token in lower case ("ocr").
std::string textKind(const std::string& task) {
    if (isCaptionTask(task))
        return "caption";
    QString t = qstr(task);
    return t.remove(QLatin1Char('<')).remove(QLatin1Char('>')).toLower().toStdString();
}

std::string taskFilePart(const std::string& task) {
    QString t = qstr(task);
    return t.remove(QLatin1Char('<')).remove(QLatin1Char('>')).toStdString();
}

// Sidecars are small (a few KB; many polygons make a few MB): a larger file is not ours.
constexpr int64_t kMaxSidecarBytes = 64 << 20;

// What is at a sidecar's path before the run writes it.
struct Sidecar {
    enum Kind {
        Missing, // nothing there
        Answer,  // one of our answer documents, for `task`
        Cut,     // a regular file that is not whole JSON: a write that did not finish
        Foreign, // whole JSON, but not our answer document
        NotAFile // a folder, FIFO, device, a link to one, or too large: never read or replaced
    } kind = Missing;
    std::string task;
    QJsonObject document; // Answer: the document
    std::string why;      // NotAFile: the reason, naming the file
};

bool isUtf8(const std::string& s) {
    QStringDecoder decoder(QStringDecoder::Utf8);
    const QString decoded = decoder(QByteArrayView(s.data(), qsizetype(s.size())));
    return !decoder.hasError();
}

bool existsOrLink(const std::string& path) {
    const QFileInfo fi(qstr(path));
    return fi.exists() || fi.isSymLink();
}

Sidecar readSidecar(const std::string& path) {
    Sidecar s;
    if (!existsOrLink(path))
        return s;
    QByteArray bytes;
    try {
        bytes = readSmallFile(path, kMaxSidecarBytes);
    } catch (const Error& e) {
        s.kind = Sidecar::NotAFile;
        s.why = e.what();
        return s;
    }
    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &parseError);
    if (parseError.error != QJsonParseError::NoError || !doc.isObject()) {
        s.kind = Sidecar::Cut;
        return s;
    }
    const QJsonObject o = doc.object();
    if (o.value(QStringLiteral("format")).toString() != QLatin1String("florence-studio-answer")) {
        s.kind = Sidecar::Foreign;
        return s;
    }
    s.kind = Sidecar::Answer;
    s.task = o.value(QStringLiteral("task")).toString().toStdString();
    s.document = o;
    return s;
}

// Why the run must not replace what is at `path` (a text sidecar, the COCO file), or "".
std::string notAFile(const std::string& path) {
    return path.empty() ? std::string() : whyNotARegularFile(path, kMaxSidecarBytes);
}

// How the COCO files this app writes begin: a file that does not is the user's, and kept. (The
// first versions began with the annotations.)
constexpr char kCocoStart[] =
    "{\"info\":{\"description\":\"Florence-2 answers\",\"contributor\":\"Florence Studio\"},\n";
constexpr char kEarlierCocoStart[] = "{\"annotations\":[";

bool isOurCocoFile(const std::string& path) {
    QFile f(qstr(path));
    if (!f.open(QIODevice::ReadOnly))
        return false;
    const QByteArray head = f.read(qint64(sizeof kCocoStart));
    return head.startsWith(kCocoStart) || head.startsWith(kEarlierCocoStart);
}

// The folder's COCO file, written as the images' COCO parts are added: ids renumbered across
// the folder, one category per name.
class CocoAssembly {
public:
    explicit CocoAssembly(QIODevice& out) : m_out(out) {
        m_out.write(kCocoStart);
        m_out.write("\"annotations\":[");
    }

    void add(const QJsonObject& coco, const QString& fileName) {
        QJsonObject entry = coco.value(QStringLiteral("images")).toArray().first().toObject();
        entry[QStringLiteral("id")] = ++m_imageId;
        entry[QStringLiteral("file_name")] = fileName;
        m_images += (m_images.isEmpty() ? "\n" : ",\n") +
                    QJsonDocument(entry).toJson(QJsonDocument::Compact);
        std::map<int, int> categoryOf; // this image's ids -> the folder's
        for (const QJsonValue& c : coco.value(QStringLiteral("categories")).toArray()) {
            const QString name = c[QStringLiteral("name")].toString();
            auto it = m_categories.find(name);
            if (it == m_categories.end()) {
                it = m_categories.emplace(name, static_cast<int>(m_categories.size()) + 1).first;
                m_categoryList.append(QJsonObject{{QStringLiteral("id"), it->second},
                                                  {QStringLiteral("name"), name}});
            }
            categoryOf[c[QStringLiteral("id")].toInt()] = it->second;
        }
        for (const QJsonValue& v : coco.value(QStringLiteral("annotations")).toArray()) {
            QJsonObject a = v.toObject();
            a[QStringLiteral("id")] = ++m_annotationId;
            a[QStringLiteral("image_id")] = m_imageId;
            a[QStringLiteral("category_id")] = categoryOf[a[QStringLiteral("category_id")].toInt()];
            m_out.write(m_annotationId == 1 ? "\n" : ",\n");
            m_out.write(QJsonDocument(a).toJson(QJsonDocument::Compact));
        }
    }

    // Write errors surface in commitSaveFile (QSaveFile remembers them).
    void finish() {
        m_out.write("],\n\"images\":[" + m_images + "],\n\"categories\":" +
                    QJsonDocument(m_categoryList).toJson(QJsonDocument::Compact) + "}\n");
    }

private:
    QIODevice& m_out;
    QByteArray m_images;
    std::map<QString, int> m_categories;
    QJsonArray m_categoryList;
    int m_imageId = 0, m_annotationId = 0;
};
const QRegularExpression& tagBreak() {
    static const QRegularExpression re(QStringLiteral("[,\\n]"));
    return re;
}

// prefix, the answer's tags and suffix, as captionFileText joins them.
QStringList captionTags(const std::string& answerText, const CaptionOptions& options) {
    QStringList dropped;
    for (const std::string& tag : options.dropTags)
        dropped << qstr(tag).trimmed().toLower();
    QStringList tags;
    if (!options.prefix.empty())
        tags << qstr(options.prefix);
    for (const QString& raw : qstr(readableText(answerText)).split(tagBreak())) {
        const QString tag = raw.trimmed();
        if (tag.isEmpty() || dropped.contains(tag.toLower()))
            continue;
        tags << (options.lowercase ? tag.toLower() : tag);
    }
    if (!options.suffix.empty())
        tags << qstr(options.suffix);
    return tags;
}

// The caption file's new content: when appending, the file's own text and then the tags it
// does not hold yet (so a trigger word is not repeated).
QByteArray captionFileBytes(const std::string& path, const std::string& answerText,
                            const CaptionOptions& options) {
    QStringList tags = captionTags(answerText, options);
    const QString separator = qstr(options.separator);
    if (!options.append || !QFileInfo::exists(qstr(path)))
        return tags.join(separator).toUtf8();
    std::string error; // a caption file is a few hundred bytes; a FIFO is not one
    const QString mine =
        QString::fromUtf8(detail::readRegularFile(path, 1 << 20, &error)).trimmed();
    if (!error.empty())
        throw Error("cannot append to " + path + ": " + error);
    QStringList held;
    for (const QString& tag : mine.split(tagBreak()))
        held << tag.trimmed().toLower();
    tags.erase(std::remove_if(tags.begin(), tags.end(),
                              [&](const QString& t) { return held.contains(t.toLower()); }),
               tags.end());
    QString out = mine;
    while (out.endsWith(QLatin1Char(',')))
        out.chop(1);
    if (!tags.isEmpty())
        out += (out.isEmpty() ? QString() : separator) + tags.join(separator);
    return out.toUtf8();
}

} // namespace

std::string captionFileText(const std::string& answerText, const CaptionOptions& options) {
    return captionTags(answerText, options).join(qstr(options.separator)).toStdString();
}

unsigned parseSidecarFormats(const std::string& list) {
    unsigned formats = 0;
    for (const QString& part : qstr(list).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const QString p = part.trimmed().toLower();
        if (p == QLatin1String("txt"))
            formats |= kTextSidecar;
        else if (p == QLatin1String("json"))
            formats |= kJsonSidecar;
        else if (p == QLatin1String("coco"))
            formats |= kCocoFile;
        else if (p == QLatin1String("caption"))
            formats |= kCaptionFile;
        else
            throw Error("unknown format '" + part.toStdString() +
                        "'; formats are txt, json, coco and caption");
    }
    return formats;
}

unsigned applicableFormats(const std::string& task, unsigned formats) {
    const TaskInfo& info = taskInfo(task);
    const bool text = info.answerType == AnswerType::PureText;
    unsigned out = formats & kJsonSidecar;
    if (text)
        out |= formats & (kTextSidecar | kCaptionFile);
    // A region task's answer is filed as a box on the region asked about, labelled with the
    // answer (readableAnswer), so its images have COCO parts as a detection task's do.
    const bool boxes = !text || info.input == TaskInput::Region;
    if (boxes && (formats & kCocoFile))
        out |= kCocoFile | kJsonSidecar; // the COCO file is assembled from the JSON sidecars
    return out;
}

std::vector<std::string> listImages(const std::string& dir, bool recursive) {
    const QFileInfo info(qstr(dir));
    if (!info.exists())
        throw Error("folder " + dir + " does not exist");
    if (!info.isDir())
        throw Error(dir + " is not a folder");
    // std::filesystem rather than QDirIterator: names come as the bytes on disk, so a name that
    // is not UTF-8 is listed (and refused with its reason) instead of decoded into another name.
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const bool hidden = !name.empty() && name[0] == '.';
        std::error_code entryError; // an entry that cannot be examined is listed (below)
        if (it->is_directory(entryError)) {
            if (!recursive || hidden)
                it.disable_recursion_pending();
            continue;
        }
        // Not only regular files: a FIFO, a device, a link to one, a link to nothing or a loop
        // named like an image is listed too, and refused with its reason when it is read, as
        // the help promises ("images that cannot be read are listed at the end").
        if (!hidden && isImageName(qstr(name)))
            files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

FolderBatch::FolderBatch(FolderJobParams job) : m_job(std::move(job)) {
    taskInfo(m_job.task.task); // unknown task: TaskError
    // A task missing its text fails here, before any image is read.
    if (taskInfo(m_job.task.task).input == TaskInput::Text)
        buildPrompt(m_job.task, 1000, 1000);
    if (taskInfo(m_job.task.task).input == TaskInput::Region && !m_job.task.region &&
        m_job.task.text.empty())
        throw TaskError(m_job.task.task + " needs a region");
    m_formats = applicableFormats(m_job.task.task, m_job.formats);
    if (m_formats == 0 && m_job.formats != 0)
        throw Error("none of the formats asked for applies to " + m_job.task.task +
                    " (txt, caption: text answers; coco: answers with boxes or polygons and region "
                    "tasks; json: every task)");
    m_images = m_job.files.empty() ? listImages(m_job.dir, m_job.recursive) : m_job.files;
    if (m_images.empty())
        throw Error("folder " + m_job.dir + " holds no images (PNG, JPEG, BMP, TIFF, WebP)");
    if (!m_job.outDir.empty()) {
        if (const std::string why = whyNotWritableFolder(m_job.outDir); !why.empty())
            throw Error("cannot write results to " + m_job.outDir + ": " + why);
        if (!QDir().mkpath(qstr(m_job.outDir)))
            throw Error("cannot make the output folder " + m_job.outDir);
    }
    checkExisting();
}

void FolderBatch::checkExisting() {
    if (const std::string why = notAFile(cocoPath()); !why.empty())
        throw Error(why + "; the COCO file is never written over it");
    if (!cocoPath().empty() && m_job.existing != ExistingResults::Overwrite &&
        existsOrLink(cocoPath()) && !isOurCocoFile(cocoPath()))
        throw ExistingResultsError(cocoPath() + " is not a COCO file of this app's, and is kept; " +
                                   m_job.keepHint);
    std::map<std::string, std::string> byBase; // sidecar base → the image that has it
    size_t existing = 0;
    for (const std::string& image : m_images) {
        if (!isUtf8(image)) {
            m_refused.emplace_back(image, "its name is not valid UTF-8, so its results cannot be "
                                          "named after it; rename it");
            continue;
        }
        const auto [it, fresh] = byBase.emplace(sidecarBase(image), image);
        if (!fresh) {
            m_refused.emplace_back(image, "its results would have the same names as " + it->second +
                                              "'s; rename one of them");
            continue;
        }
        if (const std::string why = refusal(image); !why.empty()) {
            m_refused.emplace_back(image, why);
            continue;
        }
        if (hasResult(image)) {
            ++existing;
            if (m_job.existing == ExistingResults::Skip)
                continue;
        }
        m_pending.push_back(image);
    }
    if (existing > 0 && m_job.existing == ExistingResults::Refuse)
        throw ExistingResultsError(std::to_string(existing) + " of the " +
                                   std::to_string(m_images.size()) +
                                   " images already have results: " + m_job.existingHint);
    if (m_job.existing == ExistingResults::Skip)
        m_skipped = existing;
}

std::string FolderBatch::refusal(const std::string& image) const {
    // A FIFO, a device or a link to one where a result goes is neither read nor replaced, even
    // with Overwrite: the rename would put a file in the device's place.
    for (const std::string& path : {textPath(image), jsonPath(image)})
        if (const std::string why = notAFile(path); !why.empty())
            return why + "; results are never written over it";
    const std::string json = jsonPath(image);
    if (json.empty() || m_job.existing == ExistingResults::Overwrite)
        return {};
    // An empty or cut sidecar (a write that did not finish) is redone; another task's answer
    // or a file that is not an answer document is the user's, and kept.
    const Sidecar s = readSidecar(json);
    if (s.kind == Sidecar::Foreign)
        return json + " is not an answer document; " + m_job.keepHint;
    if (s.kind == Sidecar::Answer && s.task != m_job.task.task)
        return json + " holds " + (s.task.empty() ? "another task" : s.task) + "'s answer; " +
               m_job.keepHint;
    if (s.kind == Sidecar::Answer || s.kind == Sidecar::Cut) // a cut one: this app was writing
        return {};
    // No answer document beside it: a text file in a sidecar's place is not one this app wrote
    // (the document is written first), but the user's own caption or transcript.
    const std::string caption = m_job.caption.append ? std::string() : captionPath(image);
    for (const std::string& path : {textPath(image), caption})
        if (!path.empty() && existsOrLink(path))
            return path + " is not a result of this run (it has no " + json + "), and is kept; " +
                   m_job.keepHint;
    return {};
}

std::string FolderBatch::sidecarBase(const std::string& image) const {
    const QFileInfo fi(qstr(image));
    QString folder = fi.path();
    if (!m_job.outDir.empty()) {
        // Both absolute: QDir("pics").relativeFilePath("pics") is "pics" (the second taken as
        // inside the first), which put a relative folder's results in OUT/pics/.
        QString relative =
            QDir(QFileInfo(qstr(m_job.dir)).absoluteFilePath()).relativeFilePath(fi.absolutePath());
        if (relative.startsWith(QLatin1String(".."))) // outside the root: by file name
            relative = QStringLiteral(".");
        folder = QDir(qstr(m_job.outDir)).filePath(relative);
    }
    return QDir::cleanPath(QDir(folder).filePath(fi.completeBaseName())).toStdString();
}

std::string FolderBatch::textPath(const std::string& image) const {
    if (!(m_formats & kTextSidecar))
        return {};
    return sidecarBase(image) + "." + textKind(m_job.task.task) + ".txt";
}

std::string FolderBatch::captionPath(const std::string& image) const {
    if (!(m_formats & kCaptionFile))
        return {};
    return sidecarBase(image) + ".txt";
}

std::string FolderBatch::jsonPath(const std::string& image) const {
    if (!(m_formats & kJsonSidecar))
        return {};
    return sidecarBase(image) + ".florence.json";
}

std::string FolderBatch::cocoPath() const {
    if (!(m_formats & kCocoFile))
        return {};
    const std::string folder = m_job.outDir.empty() ? m_job.dir : m_job.outDir;
    return QDir(qstr(folder))
        .filePath(qstr(taskFilePart(m_job.task.task) + ".coco.json"))
        .toStdString();
}

bool FolderBatch::hasResult(const std::string& image) const {
    const std::string json = jsonPath(image);
    const std::string text = textPath(image);
    const std::string caption = captionPath(image);
    if (json.empty() && text.empty() && caption.empty())
        return false; // nothing is written (--jsonl only): nothing to resume from
    if (!json.empty()) {
        const Sidecar s = readSidecar(json);
        if (s.kind != Sidecar::Answer || s.task != m_job.task.task)
            return false;
    }
    // Appending: an existing caption file is the user's, to be added to, not a result.
    if (!caption.empty() && (m_job.caption.append || !QFileInfo::exists(qstr(caption))))
        return false;
    return text.empty() || QFileInfo::exists(qstr(text));
}

std::string FolderBatch::captionFileContent(const std::string& image,
                                            const ParsedAnswer& answer) const {
    return captionFileBytes(sidecarBase(image) + ".txt", answer.text, m_job.caption).toStdString();
}

void FolderBatch::writeResult(const std::string& image, const ParsedAnswer& answer,
                              const QJsonObject& document) const {
    // The JSON first: a run killed before the text leaves an image that is not done (its text is
    // missing) and a text file without its JSON is never this app's, so it is not replaced.
    const std::string json = jsonPath(image);
    if (!json.empty())
        writeFileAtomically(json, QJsonDocument(document).toJson(QJsonDocument::Indented));
    const std::string text = textPath(image);
    if (!text.empty())
        writeFileAtomically(text, QByteArray::fromStdString(readableText(answer.text)));
    if (!captionPath(image).empty())
        writeFileAtomically(captionPath(image),
                            QByteArray::fromStdString(captionFileContent(image, answer)));
}

void FolderBatch::writeCoco() const {
    const std::string path = cocoPath();
    if (path.empty())
        return;
    QSaveFile out(qstr(path));
    if (!out.open(QIODevice::WriteOnly))
        throw Error("cannot write " + path + ": " + out.errorString().toStdString());
    // Annotations stream out as the sidecars are read, one at a time; only the small image
    // entries and the category names wait for the end (JSON keys may come in any order).
    CocoAssembly coco(out);
    // Relative to the COCO file's folder, whatever the folder given was relative to.
    const QDir root(QFileInfo(qstr(path)).absolutePath());
    for (const std::string& image : m_images) {
        const Sidecar s = readSidecar(jsonPath(image));
        if (s.kind != Sidecar::Answer || s.task != m_job.task.task)
            continue;
        coco.add(s.document.value(QStringLiteral("coco")).toObject(),
                 root.relativeFilePath(QFileInfo(qstr(image)).absoluteFilePath()));
    }
    coco.finish();
    QString why;
    if (!commitSaveFile(out, &why))
        throw Error("cannot write " + path + ": " + why.toStdString());
}

std::string BatchProgress::summary() const {
    char buf[160];
    if (etaSeconds < 0) {
        std::snprintf(buf, sizeof buf, "%zu/%zu", done, total);
        return buf;
    }
    const long eta = std::lround(etaSeconds);
    std::snprintf(buf, sizeof buf, "%zu/%zu  %.2f images/s  ETA %ld:%02ld", done, total,
                  imagesPerSecond, eta / 60, eta % 60);
    return buf;
}

BatchProgress batchProgress(size_t done, size_t total, double elapsedSeconds) {
    BatchProgress p;
    p.done = done;
    p.total = total;
    p.elapsedSeconds = elapsedSeconds;
    if (done > 0 && elapsedSeconds > 0) {
        p.imagesPerSecond = static_cast<double>(done) / elapsedSeconds;
        p.etaSeconds = static_cast<double>(total - std::min(done, total)) / p.imagesPerSecond;
    }
    return p;
}

} // namespace florence
