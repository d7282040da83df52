#include <florence/package.h>

#include "platform/RegularFile.h"
#include <florence/answer.h>
#include <florence/files.h>

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStandardPaths>
#include <QTextStream>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

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

// A manifest is a stranger's file: every number is checked for being a whole number within
// [lo, hi] before anything sizes, indexes or loops by it. `field` names it as written
// ("tokens.forced_bos"), `why` says what the range is.
int64_t wholeNumber(const QJsonValue& v, const std::string& field, int64_t lo, int64_t hi,
                    const std::string& why, const std::string& dir) {
    if (!v.isDouble())
        fail(dir, "\"" + field + "\" is missing or not a number");
    const double d = v.toDouble();
    if (!std::isfinite(d) || d != std::floor(d) || d < double(lo) || d > double(hi)) {
        QString shown = QString::number(d, 'g', 17);
        fail(dir, "\"" + field + "\" is " + shown.toStdString() + "; " + why);
    }
    return static_cast<int64_t>(d);
}

int integer(const QJsonObject& parent, const char* key, const std::string& dir,
            const std::string& section, int64_t lo, int64_t hi, const std::string& why) {
    return static_cast<int>(wholeNumber(
        parent.value(key), section.empty() ? key : section + "." + key, lo, hi, why, dir));
}

int integer(const QJsonObject& parent, const char* key, const std::string& dir) {
    return integer(parent, key, dir, "", INT32_MIN, INT32_MAX, "expected a whole number");
}

// An optional number: `fallback` when absent, else checked like a required one.
int64_t optionalInteger(const QJsonObject& parent, const char* key, int64_t fallback,
                        const std::string& dir, const std::string& section, int64_t lo, int64_t hi,
                        const std::string& why) {
    const QJsonValue v = parent.value(key);
    if (v.isUndefined() || v.isNull())
        return fallback;
    return wholeNumber(v, section + "." + key, lo, hi, why, dir);
}

bool isLowerHex(const std::string& s, size_t length) {
    return s.size() == length && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
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

} // namespace

namespace {

// The steps of readManifest: each reads one part of manifest.json into the manifest, and fails
// naming the package and the field at fault.

// manifest.json of the package folder `dir`, parsed; refuses a missing folder or manifest,
// a Hugging Face folder (with a hint to import it) and anything but a regular file.
QJsonObject manifestRoot(const std::string& dir) {
    QFileInfo info(QString::fromStdString(dir));
    if (!info.exists())
        throw PackageError("model folder " + dir + " does not exist");
    if (!info.isDir()) {
        // A device or a FIFO is named as such, not called a file.
        const std::string why = whyNotARegularFile(dir);
        throw PackageError(why.empty() ? dir + " is not a model folder (it is a file)"
                                       : why + "; a model package is a folder");
    }
    QFile file(manifestPath(dir));
    if (!file.exists()) {
        const QDir folder(info.filePath());
        // A package's own modules without their manifest: a damaged package, which importing
        // would not mend.
        const bool package = folder.exists("decoder.pt") || folder.exists("vision.pt");
        const bool hf = !package && folder.exists("config.json");
        throw PackageError("model folder " + dir + " lacks manifest.json" +
                           (package ? ": the package is damaged (its modules are there); copy or "
                                      "import it again"
                            : hf    ? ": it looks like a Hugging Face checkpoint; import it first "
                                      "(florence-studio-cli import --hf DIR --out PKG)"
                                    : ": not a Florence Studio model package"));
    }
    // A manifest is a few KB; a regular file only (a FIFO or /dev/zero would block or never
    // end), read up to a bound.
    std::string readError;
    const QByteArray text =
        detail::readRegularFile(manifestPath(dir).toStdString(), 4 << 20, &readError);
    if (!readError.empty())
        throw PackageError(readError);
    if (text.trimmed().isEmpty())
        fail(dir, "is empty");
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(text, &err);
    if (doc.isNull())
        fail(dir, "is not valid JSON (" + err.errorString().toStdString() + " at byte " +
                      std::to_string(err.offset) + ")");
    if (!doc.isObject())
        fail(dir, "holds a JSON array, not the object of a package's manifest");
    const QJsonObject root = doc.object();
    return root;
}

// Format version, names, precision and storage.
void readHeader(const QJsonObject& root, const std::string& dir, Manifest& m) {
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
    // A count for display; a huge or negative number must not reach the cast (found by
    // fuzz_manifest: "parameters": 1e300 overflowed it).
    const double parameters = root.value("parameters").toDouble(0);
    if (!(parameters >= 0 && parameters <= 1e13))
        fail(dir, "\"parameters\" is not a parameter count");
    m.parameterCount = static_cast<int64_t>(parameters);
}

// Model dimensions, bounded.
void readDimensions(const QJsonObject& root, const std::string& dir, Manifest& m) {
    // Limits well above any Florence-2 (large: d_model 1024, 12 layers, 16 heads, 51,289
    // tokens, 1024 positions, 768x768 input) and low enough that nothing sized by them can
    // overflow or exhaust memory before the modules are even looked at.
    const QJsonObject dims = object(root, "dimensions", dir);
    const std::string sane = "expected a positive whole number";
    m.dModel = integer(dims, "d_model", dir, "dimensions", 1, 16384, sane + " up to 16384");
    m.encoderLayers =
        integer(dims, "encoder_layers", dir, "dimensions", 1, 256, sane + " up to 256");
    m.decoderLayers =
        integer(dims, "decoder_layers", dir, "dimensions", 1, 256, sane + " up to 256");
    m.encoderHeads = integer(dims, "encoder_heads", dir, "dimensions", 1, 256, sane + " up to 256");
    m.decoderHeads = integer(dims, "decoder_heads", dir, "dimensions", 1, 256, sane + " up to 256");
    if (m.dModel % m.encoderHeads != 0 || m.dModel % m.decoderHeads != 0)
        fail(dir, "\"dimensions.d_model\" " + std::to_string(m.dModel) +
                      " is not divisible by the number of attention heads");
    m.vocabSize =
        integer(dims, "vocab_size", dir, "dimensions", 1, 1000000, sane + " up to 1000000");
    m.maxPositions =
        integer(dims, "max_positions", dir, "dimensions", 1, 65536, sane + " up to 65536");
    m.imageTokens = integer(dims, "image_tokens", dir, "dimensions", 1, m.maxPositions - 1,
                            sane + " below max_positions (" + std::to_string(m.maxPositions) + ")");
}

// Input size and normalization.
void readImageSettings(const QJsonObject& root, const std::string& dir, Manifest& m) {
    const QJsonObject image = object(root, "image", dir);
    const std::string side = "expected a whole number of pixels from 32 to 4096";
    m.imageWidth = integer(image, "width", dir, "image", 32, 4096, side);
    m.imageHeight = integer(image, "height", dir, "image", 32, 4096, side);
    const QJsonArray mean = image.value("mean").toArray();
    const QJsonArray stdev = image.value("std").toArray();
    if (mean.size() != 3 || stdev.size() != 3)
        fail(dir, "image mean and std need three values each");
    for (int i = 0; i < 3; ++i) {
        const double mu = mean[i].toDouble(NAN), sigma = stdev[i].toDouble(NAN);
        if (!std::isfinite(mu) || std::fabs(mu) > 1e3)
            fail(dir, "\"image.mean\" holds " + QString::number(mu).toStdString() +
                          "; expected a finite number");
        if (!std::isfinite(sigma) || sigma < 1e-6 || sigma > 1e3)
            fail(dir, "image std must be positive (\"image.std\" holds " +
                          QString::number(sigma).toStdString() + ")");
        m.imageMean[i] = static_cast<float>(mu);
        m.imageStd[i] = static_cast<float>(sigma);
    }
}

// Special token ids, each a token of the vocabulary.
void readTokens(const QJsonObject& root, const std::string& dir, Manifest& m) {
    // Every special token indexes a row of the logits or of the embedding: it must be a token
    // of this vocabulary. The forced ones may be -1 (none).
    const QJsonObject tokens = object(root, "tokens", dir);
    const std::string vocab = std::to_string(m.vocabSize);
    const std::string id = "expected a token id from 0 to " + std::to_string(m.vocabSize - 1) +
                           " (the vocabulary has " + vocab + " tokens)";
    m.bosId = integer(tokens, "bos", dir, "tokens", 0, m.vocabSize - 1, id);
    m.padId = integer(tokens, "pad", dir, "tokens", 0, m.vocabSize - 1, id);
    m.eosId = integer(tokens, "eos", dir, "tokens", 0, m.vocabSize - 1, id);
    m.decoderStartId = integer(tokens, "decoder_start", dir, "tokens", 0, m.vocabSize - 1, id);
    const std::string forced = "expected -1 (none) or a token id from 0 to " +
                               std::to_string(m.vocabSize - 1) + " (the vocabulary has " + vocab +
                               " tokens)";
    m.forcedBosId =
        optionalInteger(tokens, "forced_bos", -1, dir, "tokens", -1, m.vocabSize - 1, forced);
    m.forcedEosId =
        optionalInteger(tokens, "forced_eos", -1, dir, "tokens", -1, m.vocabSize - 1, forced);
}

// Generation defaults.
void readGeneration(const QJsonObject& root, const std::string& dir, Manifest& m) {
    const QJsonObject gen = object(root, "generation", dir);
    m.numBeams = static_cast<int>(
        optionalInteger(gen, "num_beams", 3, dir, "generation", 1, 16, "expected 1 to 16 beams"));
    m.noRepeatNgramSize =
        static_cast<int>(optionalInteger(gen, "no_repeat_ngram_size", 3, dir, "generation", 0,
                                         m.maxPositions, "expected 0 (off) up to max_positions"));
    const QJsonValue penalty = gen.value("length_penalty");
    m.lengthPenalty = penalty.isUndefined() ? 1.0 : penalty.toDouble(NAN);
    if (!std::isfinite(m.lengthPenalty) || std::fabs(m.lengthPenalty) > 100)
        fail(dir, "\"generation.length_penalty\" is not a number from -100 to 100");
    m.earlyStopping = gen.value("early_stopping").toBool(true);
    m.maxNewTokens = static_cast<int>(optionalInteger(
        gen, "max_new_tokens", std::min(kDefaultMaxNewTokens, m.maxPositions), dir, "generation", 1,
        m.maxPositions, "expected 1 up to max_positions (" + std::to_string(m.maxPositions) + ")"));
    m.ignoreEos = gen.value("ignore_eos").toBool(false);
}

// What the package says of itself for people: the tasks its weights were trained for (absent:
// not stated; empty: none, random weights) and one line on what it is for.
void readPurpose(const QJsonObject& root, const std::string& dir, Manifest& m) {
    const QJsonValue trained = root.value("trained_tasks");
    if (!trained.isUndefined()) {
        if (!trained.isArray() || trained.toArray().size() > 64)
            fail(dir, "\"trained_tasks\" is not a list of at most 64 task tokens");
        std::vector<std::string> tasks;
        for (const QJsonValue& t : trained.toArray()) {
            const QString token = t.toString();
            if (!t.isString() || token.size() < 3 || token.size() > 64 ||
                !token.startsWith(QLatin1Char('<')) || !token.endsWith(QLatin1Char('>')))
                fail(dir, "\"trained_tasks\" holds something that is not a task token");
            tasks.push_back(token.toStdString());
        }
        m.trainedTasks = tasks;
    }
    const QJsonValue purpose = root.value("purpose");
    if (!purpose.isUndefined() && (!purpose.isString() || purpose.toString().size() > 400))
        fail(dir, "\"purpose\" is not a line of text of at most 400 characters");
    m.purpose = purpose.toString().toStdString();
}

// The listed files, each with a size and a SHA-256.
void readFiles(const QJsonObject& root, const std::string& dir, Manifest& m) {
    const QJsonObject files = object(root, "files", dir);
    for (auto it = files.begin(); it != files.end(); ++it) {
        const QJsonObject f = it.value().toObject();
        PackageFile pf;
        pf.name = f.value("name").toString().toStdString();
        const std::string field = "files." + it.key().toStdString();
        // A plain file name inside the package folder: no folders, no way out of it.
        if (pf.name.empty() || pf.name == "." || pf.name == ".." ||
            pf.name.find('/') != std::string::npos || pf.name.find('\\') != std::string::npos ||
            pf.name.find('\0') != std::string::npos)
            fail(dir, "file entry \"" + it.key().toStdString() + "\" has an invalid name");
        // Every file is checked: an entry without its size and checksum would be loaded
        // unverified (a damaged decoder.pt then answers nonsense instead of failing).
        pf.size = wholeNumber(f.value("size"), field + ".size", 0, int64_t(1) << 46,
                              "every file needs its size in bytes", dir);
        pf.sha256 = f.value("sha256").toString().toStdString();
        if (!isLowerHex(pf.sha256, 64))
            fail(dir, "\"" + field +
                          ".sha256\" is missing or not a SHA-256 (64 hex digits); "
                          "every file needs its checksum");
        m.files[it.key().toStdString()] = pf;
    }
    for (const char* role : {"vision", "text_encoder", "decoder", "vocab", "merges"})
        if (!m.files.count(role))
            fail(dir, std::string("lists no ") + role + " file");
}

// Tensors one module holds for another (format version 2).
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

// A fine-tune's own tasks: a stranger's list, so every field is checked and bounded.
void readTasks(const QJsonObject& root, const std::string& dir, Manifest& m) {
    const QJsonValue tasks = root.value("tasks");
    if (tasks.isUndefined())
        return;
    if (!tasks.isArray() || tasks.toArray().size() > 256)
        fail(dir, "\"tasks\" is not a list of at most 256 tasks");
    static const QRegularExpression token(QStringLiteral("^<[A-Za-z0-9_]{1,64}>$"));
    for (const QJsonValue& v : tasks.toArray()) {
        const QJsonObject o = v.toObject();
        const QString tok = o.value("token").toString();
        const QString name = o.value("name").toString();
        const QString prompt = o.value("prompt").toString();
        const QString input = o.value("input").toString();
        const auto answer = answerTypeNamed(o.value("answer").toString().toStdString());
        const std::string entry = "task \"" + tok.left(70).toStdString() + "\"";
        if (!token.match(tok).hasMatch())
            fail(dir, entry + ": the token is not like <NAME>");
        if (name.isEmpty() || name.size() > 200 || prompt.isEmpty() || prompt.size() > 1000)
            fail(dir, entry + ": needs a name (up to 200 characters) and a prompt (up to 1000)");
        if ((input != "none" && input != "text") || !answer)
            fail(dir, entry + ": \"input\" must be none or text and \"answer\" an answer type");
        const bool takesText = input == "text";
        if (takesText != prompt.contains("{input}"))
            fail(dir, entry + ": its prompt must hold {input} exactly when it takes text");
        m.tasks.push_back({tok.toStdString(), name.toStdString(), prompt.toStdString(),
                           takesText ? TaskInput::Text : TaskInput::None, takesText ? "text" : "",
                           *answer});
    }
}

} // namespace

Manifest readManifest(const std::string& dir) {
    const QJsonObject root = manifestRoot(dir);
    Manifest m;
    m.dir = QFileInfo(QString::fromStdString(dir)).absoluteFilePath().toStdString();
    readHeader(root, dir, m);
    readDimensions(root, dir, m);
    readImageSettings(root, dir, m);
    readTokens(root, dir, m);
    readGeneration(root, dir, m);
    readPurpose(root, dir, m);
    readFiles(root, dir, m);
    readSharedParameters(root, dir, m);
    readGeneratedParameters(root, m);
    readTasks(root, dir, m);
    return m;
}

std::string sha256File(const std::string& path) {
    std::string error;
    int64_t size = 0;
    {
        const int fd = detail::openRegularFile(path, &size, &error);
        if (fd < 0)
            throw PackageError(error);
        ::close(fd);
    }
    const std::string hash = detail::sha256RegularFile(path, size, nullptr, &error);
    if (!error.empty())
        throw PackageError(error);
    return hash;
}

namespace {

// Hashing a base-size package (930 MB) takes seconds on every start. A file verified before is
// not hashed again when its device, inode, size, modification and status-change times (to the
// nanosecond) and expected hash are all unchanged: the status-change time (ctime) is set by the
// kernel on every write and on every attempt to set the modification time back, and cannot be
// set by a program, so a file changed in place and given its old mtime again is rehashed. The
// record lives in the user's cache folder, one line per file.
QString verifiedRecordPath() {
    QString base = QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation);
    if (base.isEmpty())
        return {};
    return base + "/florence-studio/verified-files.txt";
}

// Empty when the file cannot be examined (then it is hashed).
QString recordKey(const std::string& path, const std::string& sha256) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return {};
    auto ns = [](const struct timespec& t) {
        return QString::number(qint64(t.tv_sec)) + "." +
               QString::number(qint64(t.tv_nsec)).rightJustified(9, '0');
    };
    return QString::fromStdString(sha256) + " " + QString::number(qint64(st.st_size)) + " " +
           ns(st.st_mtim) + " " + ns(st.st_ctim) + " " + QString::number(quint64(st.st_dev)) + ":" +
           QString::number(quint64(st.st_ino)) + " " +
           QFileInfo(QString::fromStdString(path)).absoluteFilePath();
}

std::mutex g_recordMutex;

// Oldest first, as written.
std::vector<QString> readRecords(const QString& path) {
    std::vector<QString> records;
    std::string error;
    // Bounded: a record of 200 lines is a few tens of KB.
    const QByteArray text = detail::readRegularFile(path.toStdString(), 1 << 20, &error);
    for (const QByteArray& line : text.split('\n'))
        if (!line.isEmpty())
            records.push_back(QString::fromUtf8(line));
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
    commitSaveFile(f, nullptr); // a cut record is discarded, the old one kept
}

} // namespace

void verifyPackageFiles(const Manifest& manifest, const VerifyOptions& options) {
    const QString recordPath = options.useRecord ? verifiedRecordPath() : QString();
    int64_t total = 0, checked = 0;
    for (const auto& entry : manifest.files)
        total += std::max<int64_t>(0, entry.second.size);
    const auto report = [&](int64_t bytes) {
        if (options.onProgress && total > 0)
            options.onProgress(std::min(1.0, double(bytes) / double(total)));
    };
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
        if (!info.exists() && !info.isSymLink())
            throw PackageError("model package " + manifest.dir + " lacks " + file.name);
        std::string error;
        int64_t size = 0;
        const int fd = detail::openRegularFile(path, &size, &error);
        if (fd < 0)
            throw PackageError(error + " (a package holds regular files only)");
        ::close(fd);
        if (size != file.size)
            throw PackageError(path + " has " + std::to_string(size) +
                               " bytes, the manifest says " + std::to_string(file.size) +
                               " (truncated or replaced file)");
        const QString key = recordKey(path, file.sha256);
        if (!key.isEmpty() && records.count(key)) {
            report(checked += file.size);
            continue;
        }
        // Reads exactly the stated size, never more, whatever the file does meanwhile.
        const std::string hash =
            detail::sha256RegularFile(path, file.size, options.cancel, &error,
                                      [&](int64_t bytes) { report(checked + bytes); });
        checked += file.size;
        if (error == "cancelled")
            throw PackageError("loading " + manifest.dir + " was cancelled");
        if (!error.empty())
            throw PackageError(error);
        if (hash != file.sha256)
            throw PackageError(
                path + " does not match its checksum in manifest.json (damaged or replaced file)");
        // Keyed after hashing: a file changed during the hash gets a new ctime and no record.
        const QString after = recordKey(path, file.sha256);
        if (!after.isEmpty() && after == key)
            added.push_back(key);
    }
    addRecords(recordPath, added);
    if (options.onProgress)
        options.onProgress(1.0);
}

} // namespace florence
