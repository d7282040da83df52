#include "ModelCatalog.h"

#include <florence/package.h>
#include <florence/paths.h>

#include <QDir>
#include <QFileInfo>
#include <QObject>
#include <QStandardItemModel>

namespace florence::ui {

ModelCatalog::ModelCatalog()
    : m_model(std::make_unique<QStandardItemModel>()),
      m_bundled(cleanDir(QString::fromStdString(bundledModelDir()))) {}

ModelCatalog::~ModelCatalog() = default;

QAbstractItemModel* ModelCatalog::model() const {
    return m_model.get();
}

QString ModelCatalog::cleanDir(const QString& dir) {
    return dir.isEmpty() ? QString() : QDir::cleanPath(QFileInfo(dir).absoluteFilePath());
}

bool ModelCatalog::isBundled(const QString& dir) const {
    return !m_bundled.isEmpty() && cleanDir(dir) == m_bundled;
}

QString ModelCatalog::displayName(const QString& dir, const QString& manifestName) const {
    return isBundled(dir) ? QObject::tr("Bundled: %1").arg(manifestName) : manifestName;
}

void ModelCatalog::refresh() {
    m_model->clear();
    QStringList dirs;
    if (!m_bundled.isEmpty())
        dirs << m_bundled;
    // Florence-2-base and -large without weights, installed with the app (their weights are
    // generated when they load): the cache's worth at real size, out of the box.
    for (const std::string& dir : speedDemoModelDirs())
        dirs << QString::fromStdString(dir);
    const QDir user(QString::fromStdString(userModelsDir()));
    for (const QString& sub : user.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
        dirs << user.filePath(sub);
    dirs << m_extra << m_pending;
    for (const QString& dir : dirs) {
        if (!QFileInfo::exists(QDir(dir).filePath(QStringLiteral("manifest.json"))))
            continue;
        try {
            add(dir, QString::fromStdString(readManifest(dir.toStdString()).name));
        } catch (const std::exception&) {
            // A damaged package is reported when the user picks it, not at every start.
        }
    }
}

int ModelCatalog::add(const QString& dir, const QString& manifestName) {
    const int existing = indexOf(dir);
    if (existing >= 0)
        return existing;
    auto* item = new QStandardItem(displayName(dir, manifestName));
    item->setData(dir, Qt::UserRole);
    item->setData(dir, Qt::ToolTipRole);
    m_model->appendRow(item);
    return m_model->rowCount() - 1;
}

int ModelCatalog::indexOf(const QString& dir) const {
    const QString clean = cleanDir(dir);
    for (int i = 0; i < m_model->rowCount(); ++i)
        if (cleanDir(dirAt(i)) == clean)
            return i;
    return -1;
}

QString ModelCatalog::dirAt(int row) const {
    const QStandardItem* item = m_model->item(row);
    return item ? item->data(Qt::UserRole).toString() : QString();
}

int ModelCatalog::count() const {
    return m_model->rowCount();
}

void ModelCatalog::rememberFolder(const QString& dir) {
    const QString clean = cleanDir(dir);
    m_pending.removeAll(clean);
    const QString userRoot = cleanDir(QString::fromStdString(userModelsDir()));
    if (!isBundled(clean) && !clean.startsWith(userRoot + QLatin1Char('/')) &&
        !m_extra.contains(clean))
        m_extra << clean;
}

void ModelCatalog::rememberPending(const QString& dir) {
    const QString clean = cleanDir(dir);
    const QString userRoot = cleanDir(QString::fromStdString(userModelsDir()));
    if (!clean.isEmpty() && !isBundled(clean) && !clean.startsWith(userRoot + QLatin1Char('/')) &&
        !m_extra.contains(clean) && !m_pending.contains(clean))
        m_pending << clean;
}

void ModelCatalog::dropUnlisted(const QString& dir) {
    const QString clean = cleanDir(dir);
    m_pending.removeAll(clean);
    const QString userRoot = cleanDir(QString::fromStdString(userModelsDir()));
    if (isBundled(clean) || clean.startsWith(userRoot + QLatin1Char('/')) ||
        m_extra.contains(clean))
        return;
    for (const std::string& demo : speedDemoModelDirs())
        if (cleanDir(QString::fromStdString(demo)) == clean)
            return;
    if (const int row = indexOf(clean); row >= 0)
        m_model->removeRow(row);
}

QString ModelCatalog::describeModel(const ModelInfo& info) {
    return QStringLiteral("%1 · %2").arg(info.name(), describeWeights(info));
}

QString ModelCatalog::describeWeights(const ModelInfo& info) {
    const double p = static_cast<double>(info.manifest.parameterCount);
    // No-break spaces: a narrow panel wraps the line between its parts, never inside "9.9 M
    // parameters".
    QString size;
    if (p >= 1e9)
        size = QString::number(p / 1e9, 'f', 2) + QStringLiteral("\u00A0B");
    else if (p >= 1e6)
        size = QString::number(p / 1e6, 'f', 1) + QStringLiteral("\u00A0M");
    else
        size = QString::number(info.manifest.parameterCount);
    return QStringLiteral("%1\u00A0parameters · %2").arg(size, info.precision());
}

QString ModelCatalog::explainModelWeights(const QString& name, const QString& source) {
    // The manifest names the weights: the speed-demo packages say "speed demo" in their name,
    // the demo trainer's package has "demo" in its name, the exporter's random packages say
    // "random" in name and source, imports name their folder.
    if (name.contains(QLatin1String("speed demo"), Qt::CaseInsensitive))
        return QObject::
            tr("%1 is Florence-2's real architecture at its published size, shipped without "
               "weights: random ones are generated when it loads. Its answers are noise, but its "
               "speed is the real model's, so it shows what the key/value cache is worth: press "
               "Compare with a long Max new tokens (it generates exactly that many tokens).")
                .arg(name);
    if (name.contains(QLatin1String("demo"), Qt::CaseInsensitive))
        return QObject::
            tr("%1 is a small Florence-2 trained only on synthetic scenes of simple shapes, "
               "colors and printed words: circles, squares, triangles and stars in eight colors, "
               "and words from a fixed list. It was trained to caption, detect and read such "
               "images (like the sample scenes in the samples folder), some tasks better than "
               "others; it knows nothing else, and its answers on photographs or documents are "
               "meaningless.")
                .arg(name);
    if (name.contains(QLatin1String("random"), Qt::CaseInsensitive) ||
        source.contains(QLatin1String("random"), Qt::CaseInsensitive))
        return QObject::
            tr("%1 is Florence-2's architecture at a reduced size with random weights. It runs the "
               "whole pipeline (preprocessing, vision encoder, text encoder, cached beam search, "
               "parsing, overlays), but the text it generates is nonsense.")
                .arg(name);
    return QObject::tr("%1: weights from %2.")
        .arg(name, source.isEmpty() ? QObject::tr("an unknown source") : source);
}

QString ModelCatalog::importCheckpointHint() {
    return QObject::tr(
        "For real answers on photographs, import a Florence-2 checkpoint downloaded from Hugging "
        "Face (e.g. microsoft/Florence-2-base): File › Import Hugging Face Model…, or from a "
        "terminal: florence-studio-cli import --hf DIR --out PKG. Importing needs python3-torch.");
}

std::optional<ModelInfo> ModelCatalog::bundledModelInfo() {
    const std::string dir = bundledModelDir();
    if (dir.empty())
        return std::nullopt;
    try {
        ModelInfo info;
        info.dir = QString::fromStdString(dir);
        info.manifest = readManifest(dir);
        return info;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

} // namespace florence::ui
