#include <florence/checkpoints.h>

#include "platform/RegularFile.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QStandardPaths>

#include <algorithm>

namespace florence {

namespace {

constexpr int64_t kMaxConfigBytes = 4 << 20; // a Florence-2 config.json is about 3 KB

// Florence-2's config.json (model_type florence2, either layout), and which layout it is.
bool isFlorenceFolder(const QString& dir, std::string* layout) {
    std::string error;
    const QByteArray text = detail::readRegularFile(
        QDir(dir).filePath(QStringLiteral("config.json")).toStdString(), kMaxConfigBytes, &error);
    if (!error.empty())
        return false;
    const QJsonObject config = QJsonDocument::fromJson(text).object();
    if (config.value(QStringLiteral("model_type")).toString() != QLatin1String("florence2"))
        return false;
    const QJsonObject vision = config.value(QStringLiteral("vision_config")).toObject();
    *layout = vision.contains(QStringLiteral("embed_dim"))   ? "native"
              : vision.contains(QStringLiteral("dim_embed")) ? "original"
                                                             : "";
    return true;
}

// The cache links a snapshot's files into its blobs/; a link that leads anywhere else (or
// nowhere) could make an import read a file the user never downloaded.
bool linksStayInside(const QString& dir, const QString& root) {
    const QString inside = QFileInfo(root).canonicalFilePath() + QLatin1Char('/');
    if (inside.size() < 2 || !QFileInfo(dir).canonicalFilePath().startsWith(inside))
        return false;
    const auto entries = QDir(dir).entryInfoList(QDir::AllEntries | QDir::System | QDir::Hidden |
                                                 QDir::NoDotAndDotDot);
    return std::all_of(entries.begin(), entries.end(), [&](const QFileInfo& fi) {
        return !fi.isSymLink() || fi.canonicalFilePath().startsWith(inside);
    });
}

int64_t weightBytes(const QString& dir) {
    int64_t total = 0;
    for (const QFileInfo& fi : QDir(dir).entryInfoList(
             {QStringLiteral("*.safetensors"), QStringLiteral("*.bin")}, QDir::Files))
        total += fi.size();
    return total;
}

// The snapshot refs/main names, else the most recently modified one holding config.json.
QString snapshotOf(const QString& entry, QString* revision) {
    std::string error; // a regular file only: a FIFO would block the listing
    const QString rev =
        QString::fromUtf8(detail::readRegularFile(
                              (entry + QStringLiteral("/refs/main")).toStdString(), 200, &error))
            .trimmed();
    const QString dir = entry + QStringLiteral("/snapshots/") + rev;
    if (error.empty() && !rev.isEmpty() && !rev.contains(QLatin1Char('/')) &&
        QFileInfo::exists(dir + QStringLiteral("/config.json"))) {
        *revision = rev;
        return dir;
    }
    QFileInfoList snapshots = QDir(entry + QStringLiteral("/snapshots"))
                                  .entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Time);
    for (const QFileInfo& fi : snapshots)
        if (QFileInfo::exists(fi.filePath() + QStringLiteral("/config.json"))) {
            *revision = fi.fileName();
            return fi.filePath();
        }
    return {};
}

// "models--microsoft--Florence-2-base" -> "microsoft/Florence-2-base".
QString hubName(const QString& entryName) {
    return entryName.mid(8).replace(QStringLiteral("--"), QStringLiteral("/"));
}

QString cacheEntryName(const QString& name) {
    return QStringLiteral("models--") +
           QString(name).replace(QLatin1Char('/'), QStringLiteral("--"));
}

void addCacheCheckpoints(const QString& cache, std::vector<FoundCheckpoint>& found) {
    for (const QFileInfo& entry :
         QDir(cache).entryInfoList({QStringLiteral("models--*")}, QDir::Dirs, QDir::Name)) {
        QString revision;
        const QString snapshot = snapshotOf(entry.filePath(), &revision);
        FoundCheckpoint c;
        if (snapshot.isEmpty() || !isFlorenceFolder(snapshot, &c.layout) ||
            !linksStayInside(snapshot, entry.filePath()))
            continue;
        c.dir = snapshot.toStdString();
        c.name = hubName(entry.fileName()).toStdString();
        c.revision = revision.toStdString();
        c.weightBytes = weightBytes(snapshot);
        c.where = "Hugging Face cache";
        found.push_back(std::move(c));
    }
}

void addDownloads(std::vector<FoundCheckpoint>& found) {
    const QString downloads = QStandardPaths::writableLocation(QStandardPaths::DownloadLocation);
    if (downloads.isEmpty())
        return;
    for (const QFileInfo& fi :
         QDir(downloads).entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        FoundCheckpoint c;
        if (!isFlorenceFolder(fi.filePath(), &c.layout))
            continue;
        c.dir = fi.filePath().toStdString();
        c.name = fi.fileName().toStdString();
        c.weightBytes = weightBytes(fi.filePath());
        c.where = "Downloads";
        found.push_back(std::move(c));
    }
}

} // namespace

std::vector<std::string> huggingFaceCacheDirs() {
    QStringList candidates;
    if (!qEnvironmentVariableIsEmpty("HF_HUB_CACHE"))
        candidates << qEnvironmentVariable("HF_HUB_CACHE");
    if (!qEnvironmentVariableIsEmpty("HF_HOME"))
        candidates << qEnvironmentVariable("HF_HOME") + QStringLiteral("/hub");
    if (!qEnvironmentVariableIsEmpty("XDG_CACHE_HOME"))
        candidates << qEnvironmentVariable("XDG_CACHE_HOME") + QStringLiteral("/huggingface/hub");
    candidates << QDir::homePath() + QStringLiteral("/.cache/huggingface/hub");
    std::vector<std::string> dirs;
    QStringList seen;
    for (const QString& dir : candidates) {
        const QString canonical = QFileInfo(dir).canonicalFilePath();
        if (canonical.isEmpty() || !QFileInfo(canonical).isDir() || seen.contains(canonical))
            continue;
        seen << canonical;
        dirs.push_back(dir.toStdString());
    }
    return dirs;
}

std::vector<FoundCheckpoint> findCheckpoints() {
    std::vector<FoundCheckpoint> found;
    for (const std::string& cache : huggingFaceCacheDirs())
        addCacheCheckpoints(QString::fromStdString(cache), found);
    addDownloads(found);
    return found;
}

std::string resolveCheckpoint(const std::string& folderOrName) {
    const QString given = QString::fromStdString(folderOrName);
    const QFileInfo info(given);
    if (info.exists()) {
        // A snapshot folder given by its path: the cache's rule for links holds as well.
        const QDir snapshots = info.absoluteDir();
        const QString entry = QFileInfo(snapshots.absolutePath()).absolutePath();
        if (info.isDir() && snapshots.dirName() == QLatin1String("snapshots") &&
            QFileInfo(entry).fileName().startsWith(QLatin1String("models--")) &&
            !linksStayInside(given, entry))
            throw ImportError(folderOrName + ": a file of this Hugging Face cache snapshot links "
                                             "outside its cache entry; not imported");
        return folderOrName;
    }
    static const QRegularExpression hub(QStringLiteral("^[A-Za-z0-9][A-Za-z0-9_.-]*/"
                                                       "[A-Za-z0-9][A-Za-z0-9_.-]*$"));
    if (!hub.match(given).hasMatch())
        return folderOrName; // the importer says it is not a folder
    std::string looked;
    for (const std::string& cache : huggingFaceCacheDirs()) {
        const QString entry =
            QString::fromStdString(cache) + QLatin1Char('/') + cacheEntryName(given);
        looked += (looked.empty() ? "" : ", ") + cache;
        if (!QFileInfo(entry).isDir())
            continue;
        QString revision;
        const QString snapshot = snapshotOf(entry, &revision);
        if (snapshot.isEmpty())
            throw ImportError(entry.toStdString() + " holds no snapshot with a config.json: "
                                                    "the download is incomplete");
        if (!linksStayInside(snapshot, entry))
            throw ImportError(snapshot.toStdString() + ": a file links outside " +
                              entry.toStdString() + "; not imported");
        return snapshot.toStdString();
    }
    throw ImportError(
        folderOrName + " is neither a folder nor in the Hugging Face cache (looked in " +
        (looked.empty() ? std::string("no cache: none of $HF_HUB_CACHE, $HF_HOME/hub, "
                                      "~/.cache/huggingface/hub exists")
                        : looked) +
        ")");
}

} // namespace florence
