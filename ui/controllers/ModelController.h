// The model in use: opening a package (its manifest is read first, so a wrong folder is
// reported at once and the current model stays), loading it on the engine thread in the chosen
// precision, and showing what was loaded in the panel and the status bar.
//
//   ModelController models(&catalog, panel, statusLabel, worker);
//   connect(&models, &ModelController::ready, window, ...);
//   models.open("/home/me/.local/share/florence-studio/models/base");
#pragma once

#include "controllers/WorkerTypes.h"

#include <QObject>

class QLabel;

namespace florence::ui {

class ControlPanel;
class EngineWorker;
class ModelCatalog;

class ModelController : public QObject {
    Q_OBJECT

public:
    ModelController(ModelCatalog* catalog, ControlPanel* panel, QLabel* status,
                    EngineWorker* worker, QObject* parent = nullptr);

    // Starts loading the package in `dir`; false when it is refused at once (no readable
    // manifest: message() says why, and the model in use stays).
    bool open(const QString& dir);
    void openBundled();
    bool isReady() const { return m_ready; }
    // A package is being loaded: a run now would use the old model and its defaults.
    bool isLoading() const { return m_loading; }
    // The package last asked for ("" before the first).
    QString requestedDir() const { return m_requestedDir; }
    const ModelInfo& info() const { return m_info; }
    // The loaded model's description, or nothing before the first load.
    std::optional<ModelInfo> loaded() const;

    void onLoading(const QString& dir);
    // Shown in the status bar: "Loading Florence-2-base: reading the vision encoder (45%)".
    void onLoadProgress(const QString& dir, int stage, double fraction);
    void onLoaded(const florence::ui::ModelInfo& info);
    void onFailed(const QString& dir, const QString& message);
    // A failed load had released the model in use: none is loaded now.
    void onUnloaded();

signals:
    // A package is about to replace the model in use: a run in flight must stop.
    void switching();
    void ready(const QString& name);
    void failed(const QString& message);
    void message(const QString& text, bool isError);
    void stateChanged();

private:
    void select(const QString& dir, const QString& manifestName);
    void onActivated(int row);
    void onPrecisionChanged();

    ModelCatalog* m_catalog;
    ControlPanel* m_panel;
    QLabel* m_status;
    EngineWorker* m_worker;
    QString m_requestedDir;  // the package last sent to the worker; "" before the first
    QString m_requestedName; // its manifest's name
    ModelInfo m_info;
    bool m_ready = false;
    bool m_loading = false;
};

} // namespace florence::ui
