#include "controllers/ModelController.h"

#include "ModelCatalog.h"
#include "controllers/EngineWorker.h"
#include "widgets/ControlPanel.h"

#include <florence/package.h>
#include <florence/paths.h>

#include <QComboBox>
#include <QDir>
#include <QLabel>

#include <cmath>

namespace florence::ui {

namespace {

QString ms(double v) {
    return v >= 1000 ? QStringLiteral("%1 s").arg(v / 1000.0, 0, 'f', 2)
                     : QStringLiteral("%1 ms").arg(v, 0, 'f', 0);
}

QString unbroken(QString text) {
    return text.replace(QLatin1Char(' '), QChar(0xA0));
}

// The line under the model list, which names the model: "9.9 M parameters · int8 (encoders
// float32) · loaded in 546 ms". No-break spaces: a narrow panel wraps between the parts, never
// inside "loaded in 546 ms".
QString modelLine(const ModelInfo& info) {
    QString line = ModelCatalog::describeWeights(info);
    // The precision the user chose does not hold everywhere on this CPU.
    const QString encoders = QString::fromLatin1(precisionName(info.encoderPrecision));
    if (!info.precisionNote.isEmpty() && encoders != info.precision())
        line += QLatin1Char(' ') + unbroken(ModelController::tr("(encoders %1)").arg(encoders));
    return line + QStringLiteral(" · ") +
           unbroken(ModelController::tr("loaded in %1").arg(ms(info.loadMs)));
}

} // namespace

ModelController::ModelController(ModelCatalog* catalog, ControlPanel* panel, QLabel* status,
                                 EngineWorker* worker, QObject* parent)
    : QObject(parent), m_catalog(catalog), m_panel(panel), m_status(status), m_worker(worker) {
    connect(m_panel, &ControlPanel::modelActivated, this, &ModelController::onActivated);
    connect(m_panel, &ControlPanel::precisionChanged, this, &ModelController::onPrecisionChanged);
    connect(worker, &EngineWorker::modelLoading, this, &ModelController::onLoading);
    connect(worker, &EngineWorker::modelLoadProgress, this, &ModelController::onLoadProgress);
    connect(worker, &EngineWorker::precisionMeasuring, this, [this](const QString& stage) {
        m_status->setText(
            tr("Automatic precision: %1 (once for this model on this CPU)…").arg(stage));
    });
    connect(worker, &EngineWorker::modelLoaded, this, &ModelController::onLoaded);
    connect(worker, &EngineWorker::modelFailed, this, &ModelController::onFailed);
    connect(worker, &EngineWorker::modelUnloaded, this, &ModelController::onUnloaded);
}

std::optional<ModelInfo> ModelController::loaded() const {
    return m_ready ? std::optional<ModelInfo>(m_info) : std::nullopt;
}

void ModelController::select(const QString& dir, const QString& manifestName) {
    m_panel->modelCombo()->setCurrentIndex(m_catalog->add(dir, manifestName));
}

void ModelController::onActivated(int row) {
    const QString dir = m_catalog->dirAt(row);
    if (ModelCatalog::cleanDir(dir) != ModelCatalog::cleanDir(m_info.dir) || !m_ready)
        open(dir);
}

void ModelController::onPrecisionChanged() {
    // Before the first model request (settings being restored) there is nothing to reload: the
    // first load uses the chosen precision.
    if (m_requestedDir.isEmpty())
        return;
    // The model already runs as asked: Automatic's pick, or the precision chosen by hand.
    const std::optional<Precision> chosen = m_panel->precision();
    const bool same = chosen ? m_info.precisionMode == *chosen : m_info.automatic;
    if (m_ready && !m_loading && same &&
        ModelCatalog::cleanDir(m_info.dir) == ModelCatalog::cleanDir(m_requestedDir))
        return;
    open(m_requestedDir);
}

void ModelController::openBundled() {
    const QString dir = QString::fromStdString(bundledModelDir());
    if (dir.isEmpty()) {
        emit message(tr("The bundled model was not found next to this program (share/"
                        "florence-studio/models/default). Open a model package with File > "
                        "Open Model Package."),
                     true);
        return;
    }
    open(dir);
}

bool ModelController::open(const QString& dir) {
    if (dir.isEmpty())
        return false;
    // Read the manifest here first: a wrong folder is reported at once, and the current model
    // stays loaded.
    Manifest m;
    try {
        m = readManifest(dir.toStdString());
    } catch (const std::exception& e) {
        emit message(tr("Cannot open the model package: %1").arg(QString::fromStdString(e.what())),
                     true);
        emit failed(QString::fromStdString(e.what()));
        // Point the combo back at the model that is still loaded.
        if (m_ready)
            select(m_info.dir, m_info.name());
        return false;
    }
    emit switching();
    select(dir, QString::fromStdString(m.name));
    m_loading = true;
    m_requestedDir = dir;
    m_requestedName = QString::fromStdString(m.name);
    // Queued behind any run still finishing on the engine thread; the worker never runs two
    // things at once.
    QMetaObject::invokeMethod(
        m_worker,
        [w = m_worker, dir, precision = m_panel->precision()] {
            w->loadModel(dir, precision.value_or(Precision::Float32), !precision);
        },
        Qt::QueuedConnection);
    emit stateChanged();
    return true;
}

void ModelController::onLoading(const QString& dir) {
    m_status->setText(tr("Loading model from %1…").arg(QDir::toNativeSeparators(dir)));
    const std::optional<Precision> chosen = m_panel->precision();
    m_panel->setModelText(
        tr("Loading (%1)…")
            .arg(chosen ? QString::fromLatin1(precisionName(*chosen)) : tr("automatic precision")));
    // Another package: what the panel says of the one in use (what it is for, what each
    // precision costs with it) would pass for the new one's until it is loaded.
    if (!m_ready || ModelCatalog::cleanDir(dir) != ModelCatalog::cleanDir(m_info.dir)) {
        m_panel->setModelPurpose(QString());
        m_panel->clearPrecisionCosts();
    }
}

void ModelController::onLoadProgress(const QString& dir, int stage, double fraction) {
    // A load that was replaced by another request still reports until it ends: not that one.
    if (!m_loading || ModelCatalog::cleanDir(dir) != ModelCatalog::cleanDir(m_requestedDir))
        return;
    // The engine's words for the stage ("reading the vision encoder").
    const QString doing = QString::fromLatin1(loadStageName(static_cast<LoadStage>(stage)));
    const QString name =
        m_requestedName.isEmpty() ? QDir::toNativeSeparators(dir) : m_requestedName;
    m_status->setText(tr("Loading %1: %2 (%3%)")
                          .arg(name, doing)
                          .arg(static_cast<int>(std::floor(fraction * 100))));
}

void ModelController::onLoaded(const ModelInfo& info) {
    // Listed again at the next start only once it has loaded: a folder that is not a working
    // package must not stay in the list.
    m_catalog->rememberFolder(info.dir);
    m_info = info;
    m_ready = true;
    m_loading = false;
    const QString desc = ModelCatalog::describeModel(info);
    QString explained =
        tr("%1\n\n%2\n\nPackage: %3")
            .arg(ModelCatalog::explainModelWeights(info), ModelCatalog::importCheckpointHint(),
                 QDir::toNativeSeparators(info.dir));
    if (!info.precisionNote.isEmpty()) {
        // The precision the user chose does not hold everywhere on this CPU: say so where the
        // model is named (modelLine), and in a message once it is loaded.
        explained = tr("Precision: %1.\n\n%2").arg(info.precisionNote, explained);
    }
    if (info.automatic) {
        explained = tr("%1.\n\n%2").arg(info.automaticReason, explained);
        m_panel->setPrecisionCosts(info.precisionMode, info.precisionOptions);
    }
    m_panel->setModelText(modelLine(info), explained);
    std::optional<QStringList> trained;
    if (info.manifest.trainedTasks) {
        trained.emplace();
        for (const std::string& t : *info.manifest.trainedTasks)
            trained->append(QString::fromStdString(t));
    }
    m_panel->setTrainedTasks(trained);
    // A fine-tune's own tasks join the task list (and the parser's table), then Custom prompt.
    addPackageTasks(info.manifest.tasks);
    m_panel->setPackageTasks(info.manifest.tasks);
    m_panel->setModelPurpose(QString::fromStdString(info.manifest.purpose));
    m_status->setText(desc);
    m_panel->setModelDefaults(info.defaults, info.manifest.maxPositions);
    select(info.dir, info.name());
    emit stateChanged();
    emit ready(info.name());
    if (info.automatic)
        emit message(tr("%1 loaded. %2.").arg(info.name(), info.automaticReason), false);
    else if (!info.precisionNote.isEmpty())
        emit message(tr("%1 loaded; %2.").arg(info.name(), info.precisionNote), false);
}

void ModelController::onUnloaded() {
    m_ready = false;
    m_info = ModelInfo();
}

void ModelController::onFailed(const QString& dir, const QString& text) {
    m_loading = false;
    m_catalog->dropUnlisted(dir);
    emit message(tr("Could not load the model in %1: %2").arg(QDir::toNativeSeparators(dir), text),
                 true);
    if (m_ready && ModelCatalog::cleanDir(dir) == ModelCatalog::cleanDir(m_requestedDir)) {
        // The model in use stays, and so does the precision it runs in.
        m_requestedDir = m_info.dir;
        m_panel->setPrecision(
            m_info.automatic ? std::nullopt : std::optional<Precision>(m_info.precisionMode), true);
    }
    if (m_ready) {
        m_panel->setModelText(modelLine(m_info));
        m_panel->setModelPurpose(QString::fromStdString(m_info.manifest.purpose));
        if (m_info.automatic)
            m_panel->setPrecisionCosts(m_info.precisionMode, m_info.precisionOptions);
        m_status->setText(ModelCatalog::describeModel(m_info));
        m_panel->modelCombo()->setCurrentIndex(m_catalog->indexOf(m_info.dir));
    } else {
        // The failed package's row may be gone: the box must not name a neighbour as loaded.
        m_panel->modelCombo()->setCurrentIndex(-1);
        m_panel->setModelText(tr("No model loaded"));
        m_status->setText(tr("No model"));
    }
    emit stateChanged();
    emit failed(text);
}

} // namespace florence::ui
