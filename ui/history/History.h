// The runs the app remembers: every finished run (image path, task, text, model, generation
// settings, timings, answer with its scores) as a list model the History panel shows, newest
// first, kept in one JSON file in the app's state folder across restarts. At most
// kMaxHistoryEntries are kept (the oldest go); images are referenced by path, with a small
// thumbnail, so an entry whose image has gone still shows something.
//
//   History history(History::defaultPath());
//   if (!history.load())                        // a damaged file is set aside, not fatal
//       show(history.loadMessage());
//   history.add(makeHistoryDocument(record));  // written to disk at once
//   const HistoryEntry& e = history.entry(0);  // the newest
//   history.exportEntries({0, 1}, "/tmp/runs.json");
//
// On disk each entry is the answer document of <florence/answer_json.h> (docs/answer-json.md)
// with a "history" object of what only the app knows (time, image path, task text, region,
// thumbnail); an export is a JSON array of the same documents without the thumbnails.
#pragma once

#include "controllers/WorkerTypes.h"

#include <florence/answer.h>
#include <florence/describe_run.h>
#include <florence/engine.h>

#include <QAbstractListModel>
#include <QDateTime>
#include <QImage>
#include <QJsonObject>
#include <QString>

#include <memory>
#include <optional>
#include <string>
#include <vector>

class QTimer;

namespace florence::ui {

constexpr int kMaxHistoryEntries = 200;

// One remembered run, decoded from its document.
struct HistoryEntry {
    QJsonObject document; // what is saved and exported
    QDateTime time;       // when the run finished, UTC
    QString imagePath;    // absolute; "" for a pasted image
    QString imageName;
    int imageWidth = 0, imageHeight = 0;
    std::optional<bool> orientationApplied; // "image.orientation_applied"; unset in old entries
    QString task;
    QString taskText;
    std::optional<Box> region; // the region asked about (region tasks)
    QString model;
    QString precision;
    int beams = 0;
    std::string prompt;
    std::string rawText;
    ParsedAnswer answer; // the parser's answer, with the run's scores
    Timings timings;
    // The encoders' times when they ran before Run (on opening the image, on choosing the task)
    // and the run reused their output; < 0 when it did not, or in older entries.
    double visionBeforeRunMs = -1, textEncoderBeforeRunMs = -1;
    double waitedForEncodersMs = 0; // Run waited this long for them (LatencyChart)
    QImage thumbnail; // null when the document has none

    // The answer's first words, without the model's tokens ("A red circle and…").
    QString firstWords() const;
};

// What the window knows of a run that just finished.
struct HistoryRecord {
    const RunOutcome* outcome = nullptr;
    ParsedAnswer answer; // scored
    std::string prompt;
    GenerationOptions options;
    ModelFacts model;  // the model that ran, as File › Export describes it
    QString imagePath; // "" for a pasted image
    QString imageName;
    QString taskText;
    std::optional<Box> region;
    std::shared_ptr<const RgbImage> image; // for the thumbnail
    QDateTime time = QDateTime::currentDateTimeUtc();
    // What the latency chart showed for encoders run before Run (< 0: they were not); kept
    // only when the run reused their output.
    double visionBeforeRunMs = -1, textEncoderBeforeRunMs = -1;
    double waitedForEncodersMs = 0; // Run was pressed while they ran, and waited this long
};

// The entry's document: the answer document plus the "history" object.
QJsonObject makeHistoryDocument(const HistoryRecord& record);

// Decodes a document as written by makeHistoryDocument; nullopt (with `error` set) when a field
// is missing, of the wrong type or out of range.
std::optional<HistoryEntry> entryFromDocument(const QJsonObject& document, QString* error);

// The image an entry was run on, as far as it can be shown again.
struct RecordedImage {
    std::shared_ptr<const RgbImage> image; // the file, or the thumbnail at the recorded size
    bool fromFile = false;
    QString note; // why the thumbnail stands in, or ""
};
RecordedImage recordedImage(const HistoryEntry& entry);

struct HistoryFile; // what the file holds, read (History.cpp)

class History : public QAbstractListModel {
    Q_OBJECT

public:
    enum Role { TimeRole = Qt::UserRole + 1, TaskRole };

    explicit History(QString path, int maxEntries = kMaxHistoryEntries, QObject* parent = nullptr);

    // history.json in the app's data folder (QStandardPaths::AppDataLocation), unless
    // setDefaultPath named another file for this process.
    static QString defaultPath();
    // Windows made from now on keep their history in `path` ("" goes back to the data folder's):
    // the app's --screenshot runs tasks on a copy, leaving the user's history as it was.
    static void setDefaultPath(const QString& path);
    QString path() const { return m_path; }

    // Follows the file from now on: runs another window records (or a history it clears) show
    // here within a moment, without a run of this window's own.
    void follow();

    // Reads the file. False when it could not be read or some entries were damaged:
    // loadMessage() says what happened. An unreadable file (not JSON, a FIFO, a device, larger
    // than 64 MB) is renamed to "<path>.bad" (so the next save does not destroy it) and the
    // history starts empty; damaged entries are skipped and the file as it was is copied to
    // "<path>.bad".
    bool load();
    // What load() found, or what a later save had to do (the oldest runs dropped to stay under
    // the size limit), or "".
    QString loadMessage() const { return m_loadMessage; }

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

    int count() const { return static_cast<int>(m_entries.size()); }
    int maxEntries() const { return m_maxEntries; }
    // Row 0 is the newest.
    const HistoryEntry& entry(int row) const { return *m_entries.at(static_cast<size_t>(row)); }

    // Adds a run as the newest entry (dropping the oldest beyond the limit) and saves. Several
    // windows share the file: under a lock ("<path>.lock") the file is read again and the run
    // added to what it holds now, so another window's runs are kept. False, with `error` set,
    // when the document cannot be decoded or the file cannot be written.
    bool add(const QJsonObject& document, QString* error = nullptr);
    // Removes every entry and the file's content.
    bool clear(QString* error = nullptr);
    // Every entry's document, newest first (what clear() would remove).
    QList<QJsonObject> documents() const;
    // Puts back documents that clear() removed (newest first), behind the runs recorded since,
    // and saves; documents already listed are skipped. False, with `error` set, as for add().
    bool restore(const QList<QJsonObject>& documents, QString* error = nullptr);
    // The documents of `rows` (without thumbnails) as a JSON array, written whole or not at
    // all. Throws florence::Error naming the file when it cannot be written.
    void exportEntries(const QList<int>& rows, const QString& path) const;
    // The same for documents taken from entries earlier (rows move when another window records
    // a run meanwhile).
    static void exportDocuments(const QList<QJsonObject>& documents, const QString& path);

signals:
    // add() put this window's run at the top (rows inserted by follow() do not say this).
    void recorded();

private:
    bool save(QString* error);
    // The file's identity and size now, to tell whether another window has replaced it.
    QString fileStamp() const;
    void rereadIfChanged();
    // Under the lock: the file's entries replace this window's list when another window
    // changed it; a damaged file is set aside, damaged entries are copied to "<path>.bad".
    void mergeFromDisk();
    // `entries` become the list: rows inserted at the top and removed at the bottom when that
    // is the change (the view keeps its selection), else a reset.
    void replaceEntries(std::vector<std::unique_ptr<HistoryEntry>> entries);
    // The file's entries; `note` says which were damaged, and with `keepBadCopy` the file as it
    // was is copied to "<path>.bad".
    std::vector<std::unique_ptr<HistoryEntry>> decode(const HistoryFile& file, QString* note,
                                                      bool keepBadCopy) const;
    const HistoryEntry* find(const QJsonObject& document) const;

    QString m_path;
    int m_maxEntries;
    std::vector<std::unique_ptr<HistoryEntry>> m_entries;
    QString m_loadMessage;
    QString m_seenStamp;        // fileStamp() when this window last read or wrote the file
    QTimer* m_reread = nullptr; // follow(): a moment after the folder changed
};

} // namespace florence::ui
