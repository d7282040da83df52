// The preferences the app keeps between sessions, and the one place that knows their QSettings
// keys. Read once at start, written when the window closes.
//
//   florence::ui::Preferences p = florence::ui::Settings::load();
//   p.recentFiles.prepend(path);
//   florence::ui::Settings::save(p);
#pragma once

#include <florence/generation_settings.h>

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace florence::ui {

// File › Process Folder…'s choices (not Overwrite, which must be chosen each time).
struct FolderPreferences {
    QString folder;           // the folder of images last processed
    bool recursive = false;   // with its sub-folders
    bool besideImages = true; // results next to the images, else in outFolder
    QString outFolder;
    unsigned formats = 7; // florence::SidecarFormat bits: text, JSON, COCO
};

// Nothing changed, and the precision nothing chose: $FLORENCE_PRECISION when it names one (the
// test suites set float32), else Automatic.
GenerationSettings defaultGenerationSettings();

struct Preferences {
    // Window layout, as QMainWindow and QSplitter save it (empty: the default layout).
    QByteArray geometry;
    QByteArray windowState;
    QByteArray mainSplit;
    QByteArray topSplit;
    // Files.
    QString lastFolder;   // where the last image was opened from
    QString exportFolder; // where the last export was saved
    QStringList recentFiles;
    QString lastImage;
    QStringList extraModels; // packages opened from folders outside the usual places
    QStringList pendingModels; // such packages still loading for the first time at the close
    // Task and generation.
    QString task = QStringLiteral("<CAPTION>");
    QString taskText;
    // What the user changed from the packages' generation defaults, and nothing else; the
    // precision by its stable name (precisionName, or "auto"; none saved: $FLORENCE_PRECISION,
    // else Automatic). "Ignore the end token" is not kept.
    GenerationSettings generation = defaultGenerationSettings();
    // Appearance: "system" (follow the desktop), "light" or "dark".
    QString theme = QStringLiteral("system");
    // Confidence scores in the overlay's labels.
    bool showScores = false;
    // Photos turned upright by their EXIF orientation (View › Turn Photos Upright).
    bool exifRotate = true;
};

class Settings {
public:
    static Preferences load();
    static void save(const Preferences& p);
    static FolderPreferences loadFolder();
    static void saveFolder(const FolderPreferences& p);
    // QSettings reads its file whole and would wait forever on a FIFO: when the settings file
    // is not a regular file of a sane size, it is renamed to "<file>.bad" (a link is moved, not
    // what it leads to) and the app starts with defaults. "" when all is well, else a note
    // naming the file. Call once at start, before any QSettings is made.
    static QString setAsideIfUnusable();
    // Whether this is the user's first start, claimed once: true for the one process that makes
    // the mark (an empty file beside the settings, created exclusively, so two windows started
    // together do not both claim it), false for every start after it, whatever is at that path.
    static bool claimFirstStart();
    // From now on every QSettings of the process reads and writes a copy of the user's settings
    // in `dir` (made there now): a screenshot's window changes what a run changes (recent files,
    // folders, the task) without touching the user's. Call before any QSettings is made.
    static void useCopyIn(const QString& dir);
};

} // namespace florence::ui
