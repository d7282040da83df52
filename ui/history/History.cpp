#include "history/History.h"

#include "presentation/AnswerDisplay.h"

#include <florence/answer_json.h>
#include <florence/files.h>
#include <florence/image.h>
#include <florence/stats.h>
#include <florence/tasks.h>

#include <QBuffer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLocale>
#include <QLockFile>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTimer>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <sys/stat.h>

namespace florence::ui {

namespace {

const QString kFormat = QStringLiteral("florence-studio-history");
constexpr int kFormatVersion = 1;
// Bounds on what a history file may hold, so a damaged or hostile file cannot make the app
// allocate without limit: far above what 200 real runs write.
constexpr qint64 kMaxFileBytes = 64ll << 20;
// How long a window waits for another one that is saving the history.
constexpr int kLockWaitMs = 5000;
// The longest time a document may record (a day): a larger one is damage.
constexpr double kMaxRecordedMs = 86'400'000;
// follow(): how long the folder must be quiet before the file is read again (a save writes a
// lock file, a temporary file and renames it: one read for all of it).
constexpr int kRereadDelayMs = 150;

// Why `lock` (the history's PATH.lock) was not taken: another window holds it, or it could not
// be made at all (a full disk, a folder that is not writable), which is not another window's doing.
QString whyNotLocked(const QLockFile& lock, const QString& path) {
    const QString file = QDir::toNativeSeparators(path + QStringLiteral(".lock"));
    if (lock.error() == QLockFile::LockFailedError)
        return History::tr("another window keeps it locked (%1)").arg(file);
    return History::tr("cannot make the lock file %1 (is the disk full, or the folder not "
                       "writable?)")
        .arg(file);
}
constexpr int kMaxTextChars = 1 << 20;
constexpr int kMaxSteps = 100'000;
constexpr int kMaxThumbnailChars = 256 * 1024;
constexpr int kThumbnailSide = 96;

QImage toQImage(const RgbImage& img) {
    const QImage view(img.pixels.data(), img.width, img.height, img.width * 3,
                      QImage::Format_RGB888);
    return view.copy();
}

RgbImage toRgbImage(const QImage& image) {
    const QImage rgb = image.convertToFormat(QImage::Format_RGB888);
    RgbImage out;
    out.width = rgb.width();
    out.height = rgb.height();
    out.pixels.resize(static_cast<size_t>(out.width) * out.height * 3);
    for (int y = 0; y < out.height; ++y)
        std::copy_n(rgb.constScanLine(y), out.width * 3,
                    out.pixels.begin() + static_cast<ptrdiff_t>(y) * out.width * 3);
    return out;
}

QString thumbnailBase64(const RgbImage& image) {
    if (image.empty())
        return {};
    const QImage small = toQImage(image).scaled(kThumbnailSide, kThumbnailSide, Qt::KeepAspectRatio,
                                                Qt::SmoothTransformation);
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    small.save(&buffer, "JPEG", 85);
    return QString::fromLatin1(bytes.toBase64());
}

QJsonArray boxJson(const Box& b) {
    return QJsonArray{b.x1, b.y1, b.x2, b.y2};
}

bool isKnownTask(const QString& token) {
    for (const TaskInfo& t : allTasks())
        if (QString::fromStdString(t.token) == token)
            return true;
    return false;
}

// Reads fields of one document, keeping the first problem met.
class Reader {
public:
    QString error;

    bool fail(const QString& what) {
        if (error.isEmpty())
            error = what;
        return false;
    }
    QJsonObject object(const QJsonObject& o, const char* key, bool required = true) {
        const QJsonValue v = o.value(QLatin1String(key));
        if (v.isObject())
            return v.toObject();
        if (required || !v.isUndefined())
            fail(QStringLiteral("\"%1\" is not an object").arg(QLatin1String(key)));
        return {};
    }
    QString string(const QJsonObject& o, const char* key, bool required = true) {
        const QJsonValue v = o.value(QLatin1String(key));
        if (v.isString() && v.toString().size() <= kMaxTextChars)
            return v.toString();
        if (required || !v.isUndefined())
            fail(QStringLiteral("\"%1\" is not a string of at most %2 characters")
                     .arg(QLatin1String(key))
                     .arg(kMaxTextChars));
        return {};
    }
    double number(const QJsonObject& o, const char* key, double lo, double hi, double fallback = 0,
                  bool required = true) {
        const QJsonValue v = o.value(QLatin1String(key));
        if (v.isDouble() && std::isfinite(v.toDouble()) && v.toDouble() >= lo && v.toDouble() <= hi)
            return v.toDouble();
        if (required || !v.isUndefined())
            fail(QStringLiteral("\"%1\" is not a number in [%2, %3]")
                     .arg(QLatin1String(key))
                     .arg(lo)
                     .arg(hi));
        return fallback;
    }
    std::vector<double> numbers(const QJsonObject& o, const char* key, int maxCount) {
        const QJsonValue v = o.value(QLatin1String(key));
        std::vector<double> out;
        if (!v.isArray() || v.toArray().size() > maxCount) {
            fail(QStringLiteral("\"%1\" is not a list of at most %2 numbers")
                     .arg(QLatin1String(key))
                     .arg(maxCount));
            return out;
        }
        for (const QJsonValue& x : v.toArray()) {
            if (!x.isDouble() || !std::isfinite(x.toDouble())) {
                fail(QStringLiteral("\"%1\" holds something that is not a number")
                         .arg(QLatin1String(key)));
                return {};
            }
            out.push_back(x.toDouble());
        }
        return out;
    }
};

Timings readTimings(Reader& r, const QJsonObject& doc) {
    const QJsonObject t = r.object(doc, "timings");
    Timings out;
    out.preprocessMs = r.number(t, "preprocess_ms", 0, kMaxRecordedMs);
    out.visionMs = r.number(t, "vision_ms", 0, kMaxRecordedMs);
    out.textEncoderMs = r.number(t, "text_encoder_ms", 0, kMaxRecordedMs);
    out.firstTokenMs = r.number(t, "first_token_ms", 0, kMaxRecordedMs);
    out.decodeMs = r.number(t, "decode_ms", 0, kMaxRecordedMs);
    out.totalMs = r.number(t, "total_ms", 0, kMaxRecordedMs);
    out.featuresReused = t.value(QLatin1String("features_reused")).toBool();
    out.promptReused = t.value(QLatin1String("prompt_reused")).toBool();
    out.stepMs = r.numbers(t, "step_ms", kMaxSteps);
    for (double ms : out.stepMs)
        if (ms < 0 || ms > kMaxRecordedMs)
            r.fail(QStringLiteral("\"step_ms\" holds a negative or huge time"));
    return out;
}

// The run's scores, written by toNativeJson, put back on the answer parsed from its text.
void readScores(Reader& r, const QJsonObject& doc, ParsedAnswer* answer) {
    const QJsonObject native = r.object(doc, "native");
    answer->score = r.number(native, "score", 0, 1, -1, false);
    const QJsonArray items = native.value(QLatin1String("items")).toArray();
    if (items.size() != static_cast<qsizetype>(answer->items.size()))
        return; // written by another parser: the items have no scores then
    for (qsizetype i = 0; i < items.size(); ++i)
        answer->items[static_cast<size_t>(i)].score =
            r.number(items[i].toObject(), "score", 0, 1, -1, false);
}

void readHistoryObject(Reader& r, const QJsonObject& doc, HistoryEntry* e) {
    const QJsonObject h = r.object(doc, "history");
    e->time = QDateTime::fromString(r.string(h, "time"), Qt::ISODateWithMs);
    if (!e->time.isValid())
        r.fail(QStringLiteral("\"time\" is not an ISO 8601 date and time"));
    e->imagePath = r.string(h, "image_path");
    e->imageName = r.string(h, "image_name");
    e->taskText = r.string(h, "task_text");
    if (h.contains(QLatin1String("region"))) {
        const std::vector<double> b = r.numbers(h, "region", 4);
        if (b.size() == 4)
            e->region = Box{b[0], b[1], b[2], b[3]};
        else
            r.fail(QStringLiteral("\"region\" is not four numbers"));
    }
    e->visionBeforeRunMs = r.number(h, "vision_before_run_ms", 0, kMaxRecordedMs, -1, false);
    e->textEncoderBeforeRunMs =
        r.number(h, "text_encoder_before_run_ms", 0, kMaxRecordedMs, -1, false);
    e->waitedForEncodersMs = r.number(h, "waited_for_encoders_ms", 0, kMaxRecordedMs, 0, false);
    const QString thumb = h.value(QLatin1String("thumbnail")).toString();
    if (!thumb.isEmpty() && thumb.size() <= kMaxThumbnailChars) {
        const QImage t = QImage::fromData(QByteArray::fromBase64(thumb.toLatin1()), "JPEG");
        if (t.width() <= kThumbnailSide * 2 && t.height() <= kThumbnailSide * 2)
            e->thumbnail = t;
    }
}

} // namespace

QString HistoryEntry::firstWords() const {
    const QString clean = QString::fromStdString(cleanAnswerText(rawText));
    constexpr int kChars = 60;
    if (clean.size() <= kChars)
        return clean;
    const int cut = clean.lastIndexOf(QLatin1Char(' '), kChars);
    return clean.left(cut > 20 ? cut : kChars) + QStringLiteral("…");
}

QJsonObject makeHistoryDocument(const HistoryRecord& record) {
    const std::string imageFile =
        (record.imagePath.isEmpty() ? record.imageName : record.imagePath).toStdString();
    QJsonObject doc = answerJson(
        record.answer, record.outcome->result,
        describeRun(record.model, record.options, imageFile, record.prompt,
                    record.image ? std::optional<bool>(record.image->orientationApplied)
                                 : std::nullopt));
    QJsonObject h{{"time", record.time.toUTC().toString(Qt::ISODateWithMs)},
                  {"image_path", record.imagePath},
                  {"image_name", record.imageName},
                  {"task_text", record.taskText}};
    if (record.region)
        h[QStringLiteral("region")] = boxJson(*record.region);
    // Replayed, the latency chart says the encoders ran before Run and how long they took.
    const Timings& t = record.outcome->result.timings;
    if (t.featuresReused && record.visionBeforeRunMs >= 0)
        h[QStringLiteral("vision_before_run_ms")] = record.visionBeforeRunMs;
    if (t.promptReused && record.textEncoderBeforeRunMs >= 0)
        h[QStringLiteral("text_encoder_before_run_ms")] = record.textEncoderBeforeRunMs;
    if ((t.featuresReused || t.promptReused) && record.waitedForEncodersMs > 0)
        h[QStringLiteral("waited_for_encoders_ms")] = record.waitedForEncodersMs;
    if (record.image)
        h[QStringLiteral("thumbnail")] = thumbnailBase64(*record.image);
    doc[QStringLiteral("history")] = h;
    return doc;
}

std::optional<HistoryEntry> entryFromDocument(const QJsonObject& doc, QString* error) {
    Reader r;
    HistoryEntry e;
    e.document = doc;
    if (doc.value(QLatin1String("format")).toString() != QLatin1String("florence-studio-answer"))
        r.fail(QStringLiteral("not an answer document (\"format\")"));
    e.task = r.string(doc, "task");
    if (r.error.isEmpty() && !isKnownTask(e.task))
        r.fail(QStringLiteral("unknown task %1").arg(e.task));
    e.rawText = r.string(doc, "raw_text").toStdString();
    e.prompt = r.string(doc, "prompt", false).toStdString();
    e.model = r.string(doc, "model", false);
    const QJsonObject image = r.object(doc, "image");
    e.imageWidth = static_cast<int>(r.number(image, "width", 1, 1e6));
    e.imageHeight = static_cast<int>(r.number(image, "height", 1, 1e6));
    if (r.error.isEmpty() && double(e.imageWidth) * e.imageHeight > double(kMaxImagePixels))
        r.fail(QStringLiteral("the image is larger than %1 pixels").arg(kMaxImagePixels));
    if (const QJsonValue turned = image.value(QLatin1String("orientation_applied"));
        turned.isBool())
        e.orientationApplied = turned.toBool();
    const QJsonObject generation = r.object(doc, "generation", false);
    e.beams = static_cast<int>(r.number(generation, "beams", 1, 64, 0, false));
    e.precision = r.string(generation, "precision", false);
    e.timings = readTimings(r, doc);
    readHistoryObject(r, doc, &e);
    if (!r.error.isEmpty()) {
        if (error)
            *error = r.error;
        return std::nullopt;
    }
    e.answer = parseAnswer(e.task.toStdString(), e.rawText, e.imageWidth, e.imageHeight);
    readScores(r, doc, &e.answer);
    if (!r.error.isEmpty()) {
        if (error)
            *error = r.error;
        return std::nullopt;
    }
    return e;
}

RecordedImage recordedImage(const HistoryEntry& e) {
    RecordedImage out;
    const QString path = QDir::toNativeSeparators(e.imagePath);
    if (e.imagePath.isEmpty()) {
        out.note = QObject::tr("This run's image was pasted, not opened from a file: showing "
                               "its thumbnail.");
    } else if (!QFileInfo::exists(e.imagePath)) {
        out.note = QObject::tr("The image file %1 is gone (moved or deleted): showing the run's "
                               "thumbnail. Open the image again to run on it.")
                       .arg(path);
    } else {
        try {
            // In the frame the run saw (an entry from before the field: upright, as then).
            DecodeOptions frame;
            frame.exifRotate = e.orientationApplied.value_or(true);
            RgbImage img = loadImage(e.imagePath.toStdString(), frame);
            if (img.width == e.imageWidth && img.height == e.imageHeight) {
                out.image = std::make_shared<const RgbImage>(std::move(img));
                out.fromFile = true;
                return out;
            }
            out.note = QObject::tr("The image file %1 has changed since this run (%2 × %3 "
                                   "pixels, then %4 × %5): showing the run's thumbnail.")
                           .arg(path)
                           .arg(img.width)
                           .arg(img.height)
                           .arg(e.imageWidth)
                           .arg(e.imageHeight);
        } catch (const std::exception& ex) {
            out.note = QObject::tr("Cannot open the image file %1 (%2): showing the run's "
                                   "thumbnail.")
                           .arg(path, QString::fromStdString(ex.what()));
        }
    }
    // At the recorded size, so the answer's pixel coordinates still fall where they did.
    QImage standIn(e.imageWidth, e.imageHeight, QImage::Format_RGB888);
    if (e.thumbnail.isNull())
        standIn.fill(Qt::gray);
    else
        standIn = e.thumbnail.scaled(e.imageWidth, e.imageHeight, Qt::IgnoreAspectRatio,
                                     Qt::SmoothTransformation);
    out.image = std::make_shared<const RgbImage>(toRgbImage(standIn));
    return out;
}

// ------------------------------------------------------------------------------------------

History::History(QString path, int maxEntries, QObject* parent)
    : QAbstractListModel(parent), m_path(std::move(path)), m_maxEntries(std::max(1, maxEntries)) {
    setObjectName(QStringLiteral("history"));
}

namespace {
QString& defaultPathOverride() {
    static QString path;
    return path;
}
} // namespace

QString History::defaultPath() {
    if (!defaultPathOverride().isEmpty())
        return defaultPathOverride();
    return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation))
        .filePath(QStringLiteral("history.json"));
}

void History::setDefaultPath(const QString& path) {
    defaultPathOverride() = path;
}

// What the history file holds: its entries' documents, or why it cannot be used.
struct HistoryFile {
    bool exists = false;
    QByteArray bytes;
    QJsonArray docs;
    QString problem; // "" when the file is a history of this version
};

namespace {

HistoryFile readHistoryFile(const QString& path) {
    HistoryFile file;
    const QFileInfo info(path);
    file.exists = info.exists() || info.isSymLink();
    if (!file.exists)
        return file;
    try {
        // A regular file of bounded size only: a FIFO would hang the start, /dev/zero fill
        // the memory.
        file.bytes = readSmallFile(path.toStdString(), kMaxFileBytes);
    } catch (const Error& e) {
        file.problem = QString::fromStdString(e.what());
        return file;
    }
    QJsonParseError parseError{};
    const QJsonDocument json = QJsonDocument::fromJson(file.bytes, &parseError);
    const QJsonObject root = json.object();
    if (parseError.error != QJsonParseError::NoError)
        file.problem = History::tr("not JSON: %1").arg(parseError.errorString());
    else if (root.value(QLatin1String("format")).toString() != kFormat ||
             root.value(QLatin1String("format_version")).toInt() != kFormatVersion ||
             !root.value(QLatin1String("entries")).isArray())
        file.problem = History::tr("not a history file of this version");
    else
        file.docs = root.value(QLatin1String("entries")).toArray();
    return file;
}

// Renames `path` to "<path>.bad" (a link or FIFO itself, never what it leads to).
bool setAside(const QString& path) {
    const QString aside = path + QStringLiteral(".bad");
    QFile::remove(aside);
    return ::rename(QFile::encodeName(path).constData(), QFile::encodeName(aside).constData()) == 0;
}

// The note for entries that could not be decoded; the file as it was is kept beside it.
QString damagedNote(const QString& path, int damaged, const QString& firstError, bool copied) {
    const QString shown = QDir::toNativeSeparators(path);
    QString note = damaged == 1 ? History::tr("A damaged entry of the history file %1 was skipped "
                                              "(%2).")
                                      .arg(shown, firstError)
                                : History::tr("%1 damaged entries of the history file %2 were "
                                              "skipped (the first: %3).")
                                      .arg(damaged)
                                      .arg(shown, firstError);
    if (copied)
        note += QLatin1Char(' ') + History::tr("The file as it was is kept as %1.")
                                       .arg(QDir::toNativeSeparators(path + ".bad"));
    return note;
}

} // namespace

std::vector<std::unique_ptr<HistoryEntry>> History::decode(const HistoryFile& file, QString* note,
                                                           bool keepBadCopy) const {
    std::vector<std::unique_ptr<HistoryEntry>> entries;
    int damaged = 0;
    QString firstError;
    for (const QJsonValue& v : file.docs) {
        if (static_cast<int>(entries.size()) >= m_maxEntries)
            break;
        const QJsonObject doc = v.toObject();
        if (const HistoryEntry* known = find(doc)) { // decoded before: not again
            entries.push_back(std::make_unique<HistoryEntry>(*known));
            continue;
        }
        QString error;
        std::optional<HistoryEntry> e = entryFromDocument(doc, &error);
        if (!e) {
            if (damaged++ == 0)
                firstError = error.isEmpty() ? tr("not an object") : error;
            continue;
        }
        entries.push_back(std::make_unique<HistoryEntry>(std::move(*e)));
    }
    if (damaged > 0) {
        // Not silently dropped: the next save leaves them out, so the file is kept as it was.
        bool copied = false;
        if (keepBadCopy) {
            try {
                writeFileAtomically((m_path + ".bad").toStdString(), file.bytes);
                copied = true;
            } catch (const Error&) {
            }
        }
        *note = damagedNote(m_path, damaged, firstError, copied);
    }
    return entries;
}

const HistoryEntry* History::find(const QJsonObject& document) const {
    for (const auto& e : m_entries)
        if (e->document == document)
            return e.get();
    return nullptr;
}

bool History::load() {
    beginResetModel();
    m_entries.clear();
    m_loadMessage.clear();
    const HistoryFile file = readHistoryFile(m_path);
    if (!file.exists) {
        endResetModel();
        return true; // the first start
    }
    if (!file.problem.isEmpty()) {
        const QString shown = QDir::toNativeSeparators(m_path);
        m_loadMessage =
            setAside(m_path)
                ? tr("The history file %1 could not be read (%2); it was set aside as %3 and "
                     "the history starts empty.")
                      .arg(shown, file.problem, QDir::toNativeSeparators(m_path + ".bad"))
                : tr("The history file %1 could not be read (%2); the history starts empty.")
                      .arg(shown, file.problem);
        endResetModel();
        return false;
    }
    m_entries = decode(file, &m_loadMessage, true);
    endResetModel();
    m_seenStamp = fileStamp();
    return m_loadMessage.isEmpty();
}

void History::follow() {
    if (m_reread)
        return;
    m_reread = new QTimer(this);
    m_reread->setSingleShot(true);
    m_reread->setInterval(kRereadDelayMs);
    connect(m_reread, &QTimer::timeout, this, &History::rereadIfChanged);
    // The folder, not the file: every save replaces the file by a rename, which ends a watch on
    // the file itself.
    const QString folder = QFileInfo(m_path).absolutePath();
    QDir().mkpath(folder);
    auto* watcher = new QFileSystemWatcher(this);
    watcher->addPath(folder);
    connect(watcher, &QFileSystemWatcher::directoryChanged, m_reread, qOverload<>(&QTimer::start));
}

QString History::fileStamp() const {
    struct stat st {};
    if (::stat(QFile::encodeName(m_path).constData(), &st) != 0)
        return {};
    // The change time too: a save of the same size within the file system's time resolution
    // may reuse the inode of the file it replaced.
    return QStringLiteral("%1:%2:%3.%4:%5.%6")
        .arg(st.st_ino)
        .arg(st.st_size)
        .arg(st.st_mtim.tv_sec)
        .arg(st.st_mtim.tv_nsec)
        .arg(st.st_ctim.tv_sec)
        .arg(st.st_ctim.tv_nsec);
}

void History::rereadIfChanged() {
    const QString stamp = fileStamp();
    if (stamp == m_seenStamp)
        return; // this window's own save, or a file beside it
    // Saves are whole-file renames: what is read is one window's complete save, no lock needed.
    // Only read: a file this window cannot use (damaged, or another version's) is left as it
    // is for the next save, which decides under the lock.
    const HistoryFile file = readHistoryFile(m_path);
    if (!file.exists || !file.problem.isEmpty())
        return;
    QString note;
    std::vector<std::unique_ptr<HistoryEntry>> onDisk = decode(file, &note, false);
    if (!note.isEmpty())
        return;
    m_seenStamp = stamp;
    replaceEntries(std::move(onDisk));
}

void History::replaceEntries(std::vector<std::unique_ptr<HistoryEntry>> entries) {
    const auto same = [&](size_t disk, size_t shown) {
        return entries[disk]->document == m_entries[shown]->document;
    };
    // Runs recorded elsewhere come in at the top and the oldest may go at the bottom: as rows
    // inserted and removed, so the list keeps its selection and scroll position.
    size_t added = 0;
    while (added < entries.size() && (m_entries.empty() || !same(added, 0)))
        ++added;
    const size_t kept = entries.size() - added;
    bool onTop = kept <= m_entries.size();
    for (size_t i = 0; onTop && i < kept; ++i)
        onTop = same(added + i, i);
    if (!onTop) {
        beginResetModel();
        m_entries = std::move(entries);
        endResetModel();
        return;
    }
    // Inserted first, then the oldest removed, as add() does: a view that has just lost rows
    // has no layout until it lays them out again, and could not tell which row it shows.
    const size_t before = m_entries.size();
    if (added > 0) {
        beginInsertRows(QModelIndex(), 0, int(added) - 1);
        m_entries.insert(m_entries.begin(), std::make_move_iterator(entries.begin()),
                         std::make_move_iterator(entries.begin() + std::ptrdiff_t(added)));
        endInsertRows();
    }
    if (kept < before) {
        beginRemoveRows(QModelIndex(), int(added + kept), count() - 1);
        m_entries.resize(added + kept);
        endRemoveRows();
    }
}

int History::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : count();
}

QVariant History::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() < 0 || index.row() >= count())
        return {};
    const HistoryEntry& e = entry(index.row());
    const QDateTime local = e.time.toLocalTime();
    const QString when = local.date() == QDate::currentDate()
                             ? QLocale().toString(local.time(), QLocale::ShortFormat)
                             : QLocale().toString(local, QLocale::ShortFormat);
    switch (role) {
    case Qt::DisplayRole:
        // Which model answered: runs of several models (a fine-tune beside the original, or
        // another precision) look alike otherwise.
        return tr("%1 · %2\n%3\n%4")
            .arg(taskDisplayName(e.task), when,
                 QStringList{e.model, e.precision}.filter(QRegularExpression(".")).join(" · "),
                 e.firstWords());
    case Qt::DecorationRole:
        return e.thumbnail;
    case Qt::ToolTipRole:
        return tr("%1 on %2\n%3\nModel: %4 (%5, %6 beams)\nTotal %7")
            .arg(taskDisplayName(e.task), e.imagePath.isEmpty() ? e.imageName : e.imagePath,
                 QLocale().toString(local, QLocale::LongFormat), e.model, e.precision)
            .arg(e.beams)
            .arg(QString::fromStdString(formatMs(e.timings.totalMs)));
    case TimeRole:
        return e.time;
    case TaskRole:
        return e.task;
    default:
        return {};
    }
}

bool History::add(const QJsonObject& document, QString* error) {
    std::optional<HistoryEntry> e = entryFromDocument(document, error);
    if (!e)
        return false;
    // Another window may have recorded runs since this one read the file: under the lock, read
    // it again and add to what it holds now, so no window's runs are lost.
    QDir().mkpath(QFileInfo(m_path).absolutePath());
    QLockFile lock(m_path + QStringLiteral(".lock"));
    if (!lock.tryLock(kLockWaitMs)) {
        if (error)
            *error = tr("Cannot save the history to %1: %2.")
                         .arg(QDir::toNativeSeparators(m_path), whyNotLocked(lock, m_path));
        return false;
    }
    mergeFromDisk();
    beginInsertRows(QModelIndex(), 0, 0);
    m_entries.insert(m_entries.begin(), std::make_unique<HistoryEntry>(std::move(*e)));
    endInsertRows();
    emit recorded();
    if (count() > m_maxEntries) {
        beginRemoveRows(QModelIndex(), m_maxEntries, count() - 1);
        m_entries.resize(static_cast<size_t>(m_maxEntries));
        endRemoveRows();
    }
    return save(error);
}

void History::mergeFromDisk() {
    const HistoryFile file = readHistoryFile(m_path);
    if (!file.exists)
        return; // removed: what this window shows is what there is
    if (!file.problem.isEmpty()) {
        // Damaged since: set aside for the user, and this window's list is written instead.
        if (setAside(m_path))
            m_loadMessage = tr("The history file %1 could not be read (%2); it was set aside as "
                               "%3.")
                                .arg(QDir::toNativeSeparators(m_path), file.problem,
                                     QDir::toNativeSeparators(m_path + ".bad"));
        return;
    }
    QString note;
    replaceEntries(decode(file, &note, true));
    if (!note.isEmpty())
        m_loadMessage = note;
}

bool History::clear(QString* error) {
    QLockFile lock(m_path + QStringLiteral(".lock"));
    const bool locked = lock.tryLock(kLockWaitMs);
    beginResetModel();
    m_entries.clear();
    endResetModel();
    if (!locked) {
        if (error)
            *error = tr("Cannot clear the history in %1: %2.")
                         .arg(QDir::toNativeSeparators(m_path), whyNotLocked(lock, m_path));
        return false;
    }
    return save(error);
}

QList<QJsonObject> History::documents() const {
    QList<QJsonObject> docs;
    for (const auto& e : m_entries)
        docs << e->document;
    return docs;
}

bool History::restore(const QList<QJsonObject>& documents, QString* error) {
    QLockFile lock(m_path + QStringLiteral(".lock"));
    if (!lock.tryLock(kLockWaitMs)) {
        if (error)
            *error = tr("Cannot restore the history in %1: %2.")
                         .arg(QDir::toNativeSeparators(m_path), whyNotLocked(lock, m_path));
        return false;
    }
    mergeFromDisk();
    beginResetModel();
    for (const QJsonObject& doc : documents) {
        if (count() >= m_maxEntries)
            break;
        QString ignored;
        if (find(doc))
            continue;
        if (std::optional<HistoryEntry> e = entryFromDocument(doc, &ignored))
            m_entries.push_back(std::make_unique<HistoryEntry>(std::move(*e)));
    }
    endResetModel();
    return save(error);
}

bool History::save(QString* error) {
    // Bounded like what load() reads: the oldest entries go until the file fits.
    QByteArray bytes;
    for (;;) {
        QJsonArray docs;
        for (const auto& e : m_entries)
            docs.append(e->document);
        const QJsonObject root{
            {"format", kFormat}, {"format_version", kFormatVersion}, {"entries", docs}};
        bytes = QJsonDocument(root).toJson(QJsonDocument::Compact);
        if (bytes.size() <= kMaxFileBytes || m_entries.size() <= 1)
            break;
        const int drop = std::max(1, count() / 10);
        beginRemoveRows(QModelIndex(), count() - drop, count() - 1);
        m_entries.resize(m_entries.size() - static_cast<size_t>(drop));
        endRemoveRows();
        m_loadMessage =
            tr("The history reached %1 MB: the oldest runs were dropped.").arg(kMaxFileBytes >> 20);
    }
    // Written whole to a temporary file and renamed: a crash or a full disk keeps the old one.
    try {
        writeFileAtomically(m_path.toStdString(), bytes);
        m_seenStamp = fileStamp();
    } catch (const Error& e) {
        if (error)
            *error = tr("Cannot save the history to %1: %2")
                         .arg(QDir::toNativeSeparators(m_path), QString::fromStdString(e.what()));
        return false;
    }
    return true;
}

void History::exportEntries(const QList<int>& rows, const QString& path) const {
    QList<QJsonObject> chosen;
    for (int row : rows)
        if (row >= 0 && row < count())
            chosen << entry(row).document;
    exportDocuments(chosen, path);
}

void History::exportDocuments(const QList<QJsonObject>& documents, const QString& path) {
    QJsonArray docs;
    for (QJsonObject doc : documents) {
        QJsonObject h = doc.value(QLatin1String("history")).toObject();
        h.remove(QStringLiteral("thumbnail"));
        doc[QStringLiteral("history")] = h;
        docs.append(doc);
    }
    // Whole or not at all (throws Error naming the file).
    writeFileAtomically(path.toStdString(), QJsonDocument(docs).toJson(QJsonDocument::Indented));
}

} // namespace florence::ui
