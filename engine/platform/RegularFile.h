// Reading files that may come from anyone (model packages, images) without ever blocking on a
// FIFO or device, following a link to one, or reading more than a stated size. Internal to the
// engine; failures come back as a message for the caller's own exception type.
//
//   std::string error;
//   QByteArray bytes = florence::detail::readRegularFile(path, 64 << 20, &error);
//   if (!error.empty()) throw ImageError(error);
#pragma once

#include <QByteArray>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace florence::detail {

// Opens `path` read-only if it is (or a symbolic link leads to) a regular file; returns the
// descriptor, or -1 with `error` set ("is a FIFO", "is a device", …). Never blocks: the open is
// non-blocking and the type is checked on the opened descriptor, so swapping the file for a
// FIFO between a check and the open does not help. `size` receives the file's size.
int openRegularFile(const std::string& path, int64_t* size, std::string* error);

// Why `path` could not be opened, in words, from the open's or stat's errno: a missing file, a
// link to a missing one (naming its target), a loop of links, no permission ("path: …" or "path
// is …").
std::string whyNotOpened(const std::string& path, int err);

// The whole file if it is a regular file of at most `maxBytes`; else empty with `error` set.
QByteArray readRegularFile(const std::string& path, int64_t maxBytes, std::string* error);

// Lowercase hex SHA-256 of exactly the first `size` bytes of a regular file (never reads
// more). Empty with `error` set when the file is not a regular file, is shorter than `size`,
// or `cancel` was set (then `error` is "cancelled"). `onBytes`, when given, hears the bytes
// hashed so far after every megabyte.
std::string sha256RegularFile(const std::string& path, int64_t size,
                              const std::atomic<bool>* cancel, std::string* error,
                              const std::function<void(int64_t bytes)>& onBytes = nullptr);

} // namespace florence::detail
