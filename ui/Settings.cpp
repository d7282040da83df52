#include "Settings.h"

#include <florence/error.h>
#include <florence/files.h>
#include <florence/generation_settings.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QObject>
#include <QSettings>
#include <QStandardPaths>

#include <cstdio>
#include <optional>

namespace florence::ui {

namespace {

// The keys, one place: renaming one loses what users saved under the old name.
const QString kGeometry = QStringLiteral("window/geometry");
const QString kWindowState = QStringLiteral("window/state");
const QString kMainSplit = QStringLiteral("window/mainSplit");
const QString kTopSplit = QStringLiteral("window/topSplit");
const QString kTheme = QStringLiteral("window/theme");
const QString kLastFolder = QStringLiteral("files/lastFolder");
const QString kExportFolder = QStringLiteral("files/exportFolder");
const QString kRecent = QStringLiteral("files/recent");
const QString kLastImage = QStringLiteral("files/lastImage");
const QString kExtraModels = QStringLiteral("models/extra");
const QString kPendingModels = QStringLiteral("models/pending");
const QString kFolder = QStringLiteral("folders/folder");
const QString kFolderRecursive = QStringLiteral("folders/recursive");
const QString kFolderBeside = QStringLiteral("folders/besideImages");
const QString kFolderOut = QStringLiteral("folders/outFolder");
const QString kFolderFormats = QStringLiteral("folders/formats");
const QString kTask = QStringLiteral("task/last");
const QString kTaskText = QStringLiteral("task/text");
// Only what the user changed is written, under keys of their own: the earlier "generation/"
// keys held every value, changed or not, and would override the packages' defaults.
const QString kBeams = QStringLiteral("generationChanges/beams");
const QString kMaxNewTokens = QStringLiteral("generationChanges/maxNewTokens");
const QString kUseCache = QStringLiteral("generationChanges/useCache");
const QString kPrecision = QStringLiteral("generationChanges/precision");
const QString kShowScores = QStringLiteral("view/showScores");
const QString kExifRotate = QStringLiteral("images/exifRotate");

void readGeneration(const QSettings& s, GenerationSettings& g) {
    bool ok = false;
    if (const int beams = s.value(kBeams).toInt(&ok); ok && beams >= 1)
        g.beams = beams;
    if (const int tokens = s.value(kMaxNewTokens).toInt(&ok); ok && tokens >= 1)
        g.maxNewTokens = tokens;
    if (s.contains(kUseCache))
        g.useCache = s.value(kUseCache).toBool();
    if (s.contains(kPrecision)) // else the default's (defaultGenerationSettings)
        g.precision = parsePrecision(s.value(kPrecision).toString().toStdString()); // "auto": unset
}

// A setting left alone is removed, so the package's default applies again.
template <typename T>
void writeOptional(QSettings& s, const QString& key, const std::optional<T>& value) {
    if (value)
        s.setValue(key, *value);
    else
        s.remove(key);
}

void writeGeneration(QSettings& s, const GenerationSettings& g) {
    writeOptional(s, kBeams, g.beams);
    writeOptional(s, kMaxNewTokens, g.maxNewTokens);
    writeOptional(s, kUseCache, g.useCache);
    // Written when it differs from the default (Automatic, or $FLORENCE_PRECISION), Automatic
    // too: with none saved the default applies.
    if (g.precision == defaultGenerationSettings().precision)
        s.remove(kPrecision);
    else
        s.setValue(kPrecision, g.precision ? QString::fromLatin1(precisionName(*g.precision))
                                           : QStringLiteral("auto"));
}

} // namespace

GenerationSettings defaultGenerationSettings() {
    GenerationSettings g;
    try {
        g.precision = defaultPrecisionSetting();
    } catch (const EngineError&) {
        // A wrong $FLORENCE_PRECISION: Automatic.
    }
    return g;
}

namespace {

// The settings files as QSettings names them under `config` (NativeFormat on Unix: INI files,
// the application's and the organization's fallback), without making a QSettings: its
// constructor reads the file at once.
QStringList settingsFiles(const QDir& config) {
    const QString org = QCoreApplication::organizationName();
    return {config.filePath(org + QLatin1Char('/') + QCoreApplication::applicationName() + ".conf"),
            config.filePath(org + ".conf")};
}

QDir userConfigDir() {
    return QDir(QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation));
}

} // namespace

QString Settings::setAsideIfUnusable() {
    constexpr int64_t kMaxSettingsBytes = 4 << 20; // a few KB in practice
    QStringList notes;
    for (const QString& path : settingsFiles(userConfigDir())) {
        const std::string why = whyNotARegularFile(path.toStdString(), kMaxSettingsBytes);
        if (why.empty())
            continue;
        const QString aside = path + QStringLiteral(".bad");
        QFile::remove(aside);
        // rename(2) moves the entry itself: a FIFO or a link to a device, not what it leads to.
        const bool moved = ::rename(QFile::encodeName(path).constData(),
                                    QFile::encodeName(aside).constData()) == 0;
        const QString reason = QString::fromStdString(why);
        notes << (moved ? QObject::tr("The settings file could not be used (%1); it was set "
                                      "aside as %2 and the defaults are used.")
                              .arg(reason, aside)
                        : QObject::tr("The settings file could not be used (%1) nor set aside.")
                              .arg(reason));
    }
    return notes.join(QLatin1Char(' '));
}

void Settings::useCopyIn(const QString& dir) {
    const QStringList from = settingsFiles(userConfigDir());
    const QStringList to = settingsFiles(QDir(dir));
    for (int i = 0; i < from.size(); ++i) {
        QDir().mkpath(QFileInfo(to[i]).absolutePath());
        // setAsideIfUnusable ran first: what is there is a regular file of a sane size, or none.
        QFile::copy(from[i], to[i]);
    }
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir);
}

bool Settings::claimFirstStart() {
    const QDir config = userConfigDir();
    const QString org = QCoreApplication::organizationName();
    if (!config.mkpath(org))
        return false; // nowhere to remember it: no start counts as the first
    // NewOnly is O_CREAT | O_EXCL: exactly one process creates it; nothing already there (a
    // FIFO, a link) is opened.
    QFile mark(config.filePath(org + QStringLiteral("/first-start-done")));
    return mark.open(QIODevice::WriteOnly | QIODevice::NewOnly);
}

FolderPreferences Settings::loadFolder() {
    const QSettings s;
    FolderPreferences p;
    p.folder = s.value(kFolder).toString();
    p.recursive = s.value(kFolderRecursive, p.recursive).toBool();
    p.besideImages = s.value(kFolderBeside, p.besideImages).toBool();
    p.outFolder = s.value(kFolderOut).toString();
    p.formats = s.value(kFolderFormats, p.formats).toUInt();
    return p;
}

void Settings::saveFolder(const FolderPreferences& p) {
    QSettings s;
    s.setValue(kFolder, p.folder);
    s.setValue(kFolderRecursive, p.recursive);
    s.setValue(kFolderBeside, p.besideImages);
    s.setValue(kFolderOut, p.outFolder);
    s.setValue(kFolderFormats, p.formats);
}

Preferences Settings::load() {
    const QSettings s;
    Preferences p;
    p.geometry = s.value(kGeometry).toByteArray();
    p.windowState = s.value(kWindowState).toByteArray();
    p.mainSplit = s.value(kMainSplit).toByteArray();
    p.topSplit = s.value(kTopSplit).toByteArray();
    p.theme = s.value(kTheme, p.theme).toString();
    p.lastFolder = s.value(kLastFolder).toString();
    p.exportFolder = s.value(kExportFolder).toString();
    p.recentFiles = s.value(kRecent).toStringList();
    p.lastImage = s.value(kLastImage).toString();
    p.extraModels = s.value(kExtraModels).toStringList();
    p.pendingModels = s.value(kPendingModels).toStringList();
    p.task = s.value(kTask, p.task).toString();
    p.taskText = s.value(kTaskText).toString();
    readGeneration(s, p.generation);
    p.showScores = s.value(kShowScores, p.showScores).toBool();
    p.exifRotate = s.value(kExifRotate, p.exifRotate).toBool();
    return p;
}

void Settings::save(const Preferences& p) {
    QSettings s;
    s.setValue(kGeometry, p.geometry);
    s.setValue(kWindowState, p.windowState);
    s.setValue(kMainSplit, p.mainSplit);
    s.setValue(kTopSplit, p.topSplit);
    s.setValue(kTheme, p.theme);
    s.setValue(kLastFolder, p.lastFolder);
    s.setValue(kExportFolder, p.exportFolder);
    s.setValue(kRecent, p.recentFiles);
    s.setValue(kLastImage, p.lastImage);
    s.setValue(kExtraModels, p.extraModels);
    s.setValue(kPendingModels, p.pendingModels);
    s.setValue(kTask, p.task);
    s.setValue(kTaskText, p.taskText);
    writeGeneration(s, p.generation);
    s.setValue(kShowScores, p.showScores);
    s.setValue(kExifRotate, p.exifRotate);
}

} // namespace florence::ui
