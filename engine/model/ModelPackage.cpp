#include <florence/package.h>

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <QStandardPaths>
#include <QTextStream>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>

namespace florence {

namespace {

QString manifestPath(const std::string& dir) {
    return QDir(QString::fromStdString(dir)).filePath("manifest.json");
}

[[noreturn]] void fail(const std::string& dir, const std::string& what) {
    throw PackageError(manifestPath(dir).toStdString() + ": " + what);
}

QJsonObject object(const QJsonObject& parent, const char* key, const std::string& dir) {
    const QJsonValue v = parent.value(key);
    if (!v.isObject())
        fail(dir, std::string("missing section \"") + key + "\"");
    return v.toObject();
}

int integer(const QJsonObject& parent, const char* key, const std::string& dir) {
    const QJsonValue v = parent.value(key);
    if (!v.isDouble())
        fail(dir, std::string("missing number \"") + key + "\"");
    return v.toInt();
}

} // namespace

std::string Manifest::path(const std::string& role) const {
    auto it = files.find(role);
    if (it == files.end())
        throw PackageError(manifestPath(dir).toStdString() + ": lists no " + role + " file");
    return QDir(QString::fromStdString(dir))
        .filePath(QString::fromStdString(it->second.name))
        .toStdString();
}

namespace {

// An architecture package's "generated_parameters": {"seed": N, "parameters": [{"module",
// "names", "shape", "mean", "std"}]}. The shapes are untrusted: bounded so that a hostile
// manifest cannot make the engine allocate more than the largest Florence-2 needs many times
// over.
void readGeneratedParameters(const QJsonObject& root, Manifest& m) {
    const QJsonValue value = root.value("generated_parameters");
    const bool generated = !value.isUndefined();
    if (generated != (m.formatVersion >= 3) || generated != (m.storage == "none"))
        fail(m.dir, "\"generated_parameters\", format version 3 and storage \"none\" go together");
    if (!generated)
        return;
    const QJsonObject g = value.toObject();
    const double seed = g.value("seed").toDouble(-1);
    if (seed < 0 || seed > 9007199254740991.0 || seed != std::floor(seed))
        fail(m.dir, "generated_parameters: seed must be a non-negative integer");
    m.generatedSeed = static_cast<uint64_t>(seed);
    constexpr int64_t kMaxElements = int64_t(4) << 30; // 16 GiB of float32 in all
    int64_t total = 0;
    for (const QJsonValue& v : g.value("parameters").toArray()) {
        const QJsonObject o = v.toObject();
        GeneratedParameter p;
        p.module = o.value("module").toString().toStdString();
        if (p.module != "vision" && p.module != "text_encoder" && p.module != "decoder")
            fail(m.dir, "generated parameter of unknown module \"" + p.module + "\"");
        for (const QJsonValue& n : o.value("names").toArray())
            if (!n.toString().isEmpty())
                p.names.push_back(n.toString().toStdString());
        int64_t elements = 1;
        for (const QJsonValue& d : o.value("shape").toArray()) {
            const double size = d.toDouble(-1);
            if (size < 1 || size > 1e6 || size != std::floor(size))
                fail(m.dir, "generated parameter has an invalid shape");
            p.shape.push_back(static_cast<int64_t>(size));
            elements *= p.shape.back();
            if (elements > kMaxElements)
                fail(m.dir, "generated parameters are too large");
        }
        p.mean = o.value("mean").toDouble(0);
        p.std = o.value("std").toDouble(-1);
        if (p.names.empty() || p.shape.empty() || !(p.std >= 0 && p.std <= 10) ||
            !(std::abs(p.mean) <= 10))
            fail(m.dir, "incomplete generated parameter entry");
        total += elements;
        if (total > kMaxElements)
            fail(m.dir, "generated parameters are too large");
        m.generatedParameters.push_back(std::move(p));
    }
    if (m.generatedParameters.empty())
        fail(m.dir, "\"generated_parameters\" lists no parameter");
}

// The steps of readManifest: each reads one part of manifest.json into the manifest, and fails
// naming the package and the field at fault.

QJsonObject manifestRoot(const std::string& dir) {
    QFileInfo info(QString::fromStdString(dir));
    if (!info.exists())
        throw PackageError("model folder " + dir + " does not exist");
    if (!info.isDir())
        throw PackageError(dir + " is not a model folder (it is a file)");
    QFile file(manifestPath(dir));
    if (!file.exists()) {
        const bool hf = QFileInfo::exists(QDir(info.filePath()).filePath("config.json"));
        throw PackageError("model folder " + dir + " lacks manifest.json" +
                           (hf ? ": it looks like a Hugging Face checkpoint; import it first "
                                 "(florence-studio-cli import --hf DIR --out PKG)"
                               : ": not a Florence Studio model package"));
    }
    if (!file.open(QIODevice::ReadOnly))
        fail(dir, "cannot be read (" + file.errorString().toStdString() + ")");
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &err);
    if (doc.isNull() || !doc.isObject())
        fail(dir, "is not valid JSON (" + err.errorString().toStdString() + ")");
    return doc.object();
}

void readDimensions(const QJsonObject& root, const std::string& dir, Manifest& m) {
    const QJsonObject dims = object(root, "dimensions", dir);
    m.dModel = integer(dims, "d_model", dir);
    m.encoderLayers = integer(dims, "encoder_layers", dir);
    m.decoderLayers = integer(dims, "decoder_layers", dir);
    m.encoderHeads = integer(dims, "encoder_heads", dir);
    m.decoderHeads = integer(dims, "decoder_heads", dir);
    m.vocabSize = integer(dims, "vocab_size", dir);
    m.maxPositions = integer(dims, "max_positions", dir);
    m.imageTokens = integer(dims, "image_tokens", dir);
}

void readImageSettings(const QJsonObject& root, const std::string& dir, Manifest& m) {
    const QJsonObject image = object(root, "image", dir);
    m.imageWidth = integer(image, "width", dir);
    m.imageHeight = integer(image, "height", dir);
    const QJsonArray mean = image.value("mean").toArray();
    const QJsonArray stdev = image.value("std").toArray();
    if (mean.size() != 3 || stdev.size() != 3)
        fail(dir, "image mean and std need three values each");
    for (int i = 0; i < 3; ++i) {
        m.imageMean[i] = static_cast<float>(mean[i].toDouble());
        m.imageStd[i] = static_cast<float>(stdev[i].toDouble());
        if (m.imageStd[i] <= 0)
            fail(dir, "image std must be positive");
    }
    if (m.imageWidth < 32 || m.imageHeight < 32 || m.imageWidth > 4096 || m.imageHeight > 4096)
        fail(dir, "image size " + std::to_string(m.imageWidth) + "x" +
                      std::to_string(m.imageHeight) + " is out of range");
}

void readTokensAndGeneration(const QJsonObject& root, const std::string& dir, Manifest& m) {
    const QJsonObject tokens = object(root, "tokens", dir);
    m.bosId = integer(tokens, "bos", dir);
    m.padId = integer(tokens, "pad", dir);
    m.eosId = integer(tokens, "eos", dir);
    m.decoderStartId = integer(tokens, "decoder_start", dir);
    m.forcedBosId = tokens.value("forced_bos").toInt(-1);
    m.forcedEosId = tokens.value("forced_eos").toInt(-1);

    const QJsonObject gen = object(root, "generation", dir);
    m.numBeams = gen.value("num_beams").toInt(3);
    m.noRepeatNgramSize = gen.value("no_repeat_ngram_size").toInt(3);
    m.lengthPenalty = gen.value("length_penalty").toDouble(1.0);
    m.earlyStopping = gen.value("early_stopping").toBool(true);
    m.maxNewTokens = gen.value("max_new_tokens").toInt(1024);
    m.ignoreEos = gen.value("ignore_eos").toBool(false);
}

void readFiles(const QJsonObject& root, const std::string& dir, Manifest& m) {
    const QJsonObject files = object(root, "files", dir);
    for (auto it = files.begin(); it != files.end(); ++it) {
        const QJsonObject f = it.value().toObject();
        PackageFile pf;
        pf.name = f.value("name").toString().toStdString();
        pf.size = static_cast<int64_t>(f.value("size").toDouble(-1));
        pf.sha256 = f.value("sha256").toString().toStdString();
        if (pf.name.empty() || pf.name.find("..") != std::string::npos || pf.name[0] == '/')
            fail(dir, "file entry \"" + it.key().toStdString() + "\" has an invalid name");
        m.files[it.key().toStdString()] = pf;
    }
    for (const char* role : {"vision", "text_encoder", "decoder", "vocab", "merges"})
        if (!m.files.count(role))
            fail(dir, std::string("lists no ") + role + " file");
}

void readSharedParameters(const QJsonObject& root, const std::string& dir, Manifest& m) {
    const QJsonValue shared = root.value("shared_parameters");
    if (!shared.isUndefined() && !shared.isArray())
        fail(dir, "\"shared_parameters\" is not a list");
    for (const QJsonValue& v : shared.toArray()) {
        const QJsonObject o = v.toObject();
        SharedParameter p;
        p.module = o.value("module").toString().toStdString();
        p.name = o.value("name").toString().toStdString();
        p.fromModule = o.value("from_module").toString().toStdString();
        p.fromName = o.value("from_name").toString().toStdString();
        for (const std::string* role : {&p.module, &p.fromModule})
            if (*role != "vision" && *role != "text_encoder" && *role != "decoder")
                fail(dir, "shared parameter of unknown module \"" + *role + "\"");
        if (p.name.empty() || p.fromName.empty() || p.module == p.fromModule)
            fail(dir, "incomplete shared parameter entry");
        m.sharedParameters.push_back(p);
    }
}

} // namespace

Manifest readManifest(const std::string& dir) {
    const QJsonObject root = manifestRoot(dir);
    Manifest m;
    m.dir = QFileInfo(QString::fromStdString(dir)).absoluteFilePath().toStdString();
    m.formatVersion = integer(root, "format_version", dir);
    if (m.formatVersion < kOldestPackageFormatVersion || m.formatVersion > kPackageFormatVersion)
        fail(dir, "package format version " + std::to_string(m.formatVersion) +
                      ", this build reads versions " + std::to_string(kOldestPackageFormatVersion) +
                      " to " + std::to_string(kPackageFormatVersion) +
                      "; export the model again with this version's exporter");
    m.name = root.value("name").toString().toStdString();
    m.source = root.value("source").toString().toStdString();
    m.precision = root.value("precision").toString("float32").toStdString();
    m.storage = root.value("storage").toString("float32").toStdString();
    if (m.storage != "float32" && m.storage != "float16" && m.storage != "none")
        fail(dir, "unknown weight storage \"" + m.storage + "\"");
    m.parameterCount = static_cast<int64_t>(root.value("parameters").toDouble());

    readDimensions(root, dir, m);
    readImageSettings(root, dir, m);
    readTokensAndGeneration(root, dir, m);
    readFiles(root, dir, m);
    readSharedParameters(root, dir, m);
    readGeneratedParameters(root, m);
    return m;
}

std::string sha256File(const std::string& path) {
    QFile file(QString::fromStdString(path));
    if (!file.open(QIODevice::ReadOnly))
        throw PackageError(path + ": cannot be read (" + file.errorString().toStdString() + ")");
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(&file);
    return hash.result().toHex().toStdString();
}

namespace {

// Hashing a base-size package takes about two seconds, on every start. A file whose path, size,
// modification time and expected hash were verified before is not hashed again: the record
// lives in the user's cache folder, one line per file.
QString verifiedRecordPath() {
    QString base = QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation);
    if (base.isEmpty())
        return {};
    return base + "/florence-studio/verified-files.txt";
}

QString recordKey(const QFileInfo& info, const std::string& sha256) {
    return QString::fromStdString(sha256) + " " + QString::number(info.size()) + " " +
           QString::number(info.lastModified().toMSecsSinceEpoch()) + " " + info.absoluteFilePath();
}

std::mutex g_recordMutex;

// Oldest first, as written.
std::vector<QString> readRecords(const QString& path) {
    std::vector<QString> records;
    QFile f(path);
    if (f.open(QIODevice::ReadOnly | QIODevice::Text)) {
        QTextStream in(&f);
        while (!in.atEnd())
            records.push_back(in.readLine());
    }
    return records;
}

void addRecords(const QString& path, const std::vector<QString>& added) {
    if (path.isEmpty() || added.empty())
        return;
    std::vector<QString> records = readRecords(path);
    const std::set<QString> fresh(added.begin(), added.end());
    records.erase(std::remove_if(records.begin(), records.end(),
                                 [&](const QString& r) { return fresh.count(r) > 0; }),
                  records.end());
    records.insert(records.end(), added.begin(), added.end());
    // Keep the record small: the most recently verified entries suffice (a base package has
    // seven files). Dropping by age, not by sort order, so a package in use is not rehashed.
    constexpr size_t kMaxRecords = 200;
    const size_t skip = records.size() > kMaxRecords ? records.size() - kMaxRecords : 0;
    QDir().mkpath(QFileInfo(path).absolutePath());
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Text))
        return; // a cache: failing to write it only costs time
    QTextStream out(&f);
    for (size_t i = skip; i < records.size(); ++i)
        out << records[i] << "\n";
    out.flush();
    f.commit();
}

} // namespace

void verifyPackageFiles(const Manifest& manifest, bool useRecord) {
    const QString recordPath = useRecord ? verifiedRecordPath() : QString();
    std::lock_guard<std::mutex> lock(g_recordMutex);
    std::set<QString> records;
    if (!recordPath.isEmpty()) {
        const std::vector<QString> lines = readRecords(recordPath);
        records.insert(lines.begin(), lines.end());
    }
    std::vector<QString> added;
    for (const auto& [role, file] : manifest.files) {
        const std::string path = manifest.path(role);
        QFileInfo info(QString::fromStdString(path));
        if (!info.exists())
            throw PackageError("model package " + manifest.dir + " lacks " + file.name);
        if (file.size >= 0 && info.size() != file.size)
            throw PackageError(path + " has " + std::to_string(info.size()) +
                               " bytes, the manifest says " + std::to_string(file.size) +
                               " (truncated or replaced file)");
        if (file.sha256.empty())
            continue;
        const QString key = recordKey(info, file.sha256);
        if (records.count(key))
            continue;
        if (sha256File(path) != file.sha256)
            throw PackageError(
                path + " does not match its checksum in manifest.json (damaged or replaced file)");
        added.push_back(key);
    }
    addRecords(recordPath, added);
}

} // namespace florence
