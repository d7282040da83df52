// The models the user can pick: the bundled package, the packages in the user's models folder
// and any other folder opened once, as a list model a combo box shows. Also the user-facing
// words about a model (its one-line description, what its weights can and cannot do).
//
//   ModelCatalog catalog;
//   catalog.setExtraFolders(settings.extraModels);
//   catalog.refresh();                              // scans the folders
//   combo->setModel(catalog.model());
//   combo->setCurrentIndex(catalog.add(dir, QString::fromStdString(manifest.name)));
//   catalog.dirAt(combo->currentIndex());
#pragma once

#include "controllers/WorkerTypes.h"

#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

class QAbstractItemModel;
class QStandardItemModel;

namespace florence::ui {

class ModelCatalog {
public:
    ModelCatalog();
    ~ModelCatalog();

    // What a combo box shows: one row per package, the folder as item data and tooltip.
    QAbstractItemModel* model() const;

    // Rebuilds the list from the bundled package, the user's models folder and the extra
    // folders. Damaged packages are left out (reported when the user opens one).
    void refresh();
    // The row of `dir`, added under `manifestName` when absent ("Bundled: …" for the bundled
    // package).
    int add(const QString& dir, const QString& manifestName);
    // -1 when `dir` is not listed.
    int indexOf(const QString& dir) const;
    QString dirAt(int row) const;
    int count() const;

    // Remembers a package opened from a folder outside the bundled and user locations.
    void rememberFolder(const QString& dir);
    // Removes `dir`'s row unless the list holds it for its own sake (bundled, a speed demo,
    // installed under the user's models folder, or remembered): a package that failed to load
    // the first time it was opened is not listed again.
    void dropUnlisted(const QString& dir);
    QStringList extraFolders() const { return m_extra; }
    void setExtraFolders(const QStringList& dirs) { m_extra = dirs; }
    // A package from such a folder that was still loading for the first time when the window
    // closed: listed at the next start, remembered once it loads, dropped when it fails.
    void rememberPending(const QString& dir);
    QStringList pendingFolders() const { return m_pending; }
    void setPendingFolders(const QStringList& dirs) { m_pending = dirs; }

    bool isBundled(const QString& dir) const;

    // "florence2-tiny (random init) · 12.3 M parameters · float32"
    static QString describeModel(const ModelInfo& info);
    // "12.3 M parameters · float32": describeModel without the name, for where the name shows
    // beside it (the settings panel's model list).
    static QString describeWeights(const ModelInfo& info);
    // What kind of weights these are and what answers to expect, from the manifest's name and
    // source: a demo model trained on synthetic scenes, random weights, or a real checkpoint.
    // Plain text, one or two sentences.
    static QString explainModelWeights(const QString& name, const QString& source);
    static QString explainModelWeights(const ModelInfo& info) {
        return explainModelWeights(info.name(), info.source());
    }
    // How to get real answers: importing a Hugging Face checkpoint from the app or the CLI.
    static QString importCheckpointHint();
    // The bundled package's manifest, or nothing when it is missing or unreadable.
    static std::optional<ModelInfo> bundledModelInfo();

    // The same folder whatever way it was spelled ("" stays "").
    static QString cleanDir(const QString& dir);

private:
    QString displayName(const QString& dir, const QString& manifestName) const;

    std::unique_ptr<QStandardItemModel> m_model;
    QStringList m_extra;
    QStringList m_pending; // not loaded yet: not kept when it fails
    QString m_bundled; // cleaned
};

} // namespace florence::ui
