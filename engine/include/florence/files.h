// The files the program keeps for the user (answer sidecars, COCO files, the history, exported
// answers) and the small files it reads (configs, tokenizer files, sidecars, the history): each
// written whole or not at all, each read only if it is a regular file of a bounded size.
//
//   florence::writeFileAtomically(path, bytes);          // throws Error naming the file
//   QByteArray text = florence::readSmallFile(path, 64 << 20);
//
//   QSaveFile f(path);                                    // a file written in pieces
//   f.open(QIODevice::WriteOnly);
//   f.write(…);
//   QString why;
//   if (!florence::commitSaveFile(f, &why)) report(why); // the old file is untouched
#pragma once

#include <QByteArray>
#include <QString>

#include <cstdint>
#include <string>

class QSaveFile;

namespace florence {

// Flushes what `file` buffered, checks that every byte reached the disk and only then renames
// it over the target. On any failure (a full disk, a quota, a file size limit) the temporary
// file is discarded, the target keeps its old content, and `error` (when given) says why.
// QSaveFile::commit alone renames a file whose last buffered write failed.
bool commitSaveFile(QSaveFile& file, QString* error);

// Writes `bytes` to `path` through a temporary file in the same folder and a rename, making the
// folder if needed. Throws Error naming the file; the old file, if any, is then untouched. A
// device, FIFO or folder at `path` is refused rather than renamed over.
void writeFileAtomically(const std::string& path, const QByteArray& bytes);

// The whole file if it is a regular file (or a link to one) of at most `maxBytes`. Never blocks
// on a FIFO and never reads a device. Throws Error naming the file otherwise.
QByteArray readSmallFile(const std::string& path, int64_t maxBytes);

// "" when `path` is missing or a regular file (or a link to one) of at most `maxBytes` (any
// size when negative); otherwise why not, naming the file ("… is a FIFO (named pipe), not a
// file"). Looks without opening, so it never blocks: for the files a library opens itself
// (QSettings) and for targets that must not be replaced by a rename (a device).
std::string whyNotARegularFile(const std::string& path, int64_t maxBytes = -1);

// "" when a file can be written at `path` as far as can be told before writing: not a folder,
// a FIFO or a device, in a folder that exists and takes new files; otherwise why not, naming it
// ("out.png: the folder /x does not exist"). For output files named on a command line, checked
// before a long run.
std::string whyNotAFileDestination(const std::string& path);

// "" when files can be made in the folder `path`, or in the folder it would be made in (its
// nearest existing parent); otherwise why not, naming that folder ("/mnt/ro: Read-only file
// system", "… is a file, not a folder"). For an output folder, checked before a long run.
std::string whyNotWritableFolder(const std::string& path);

} // namespace florence
