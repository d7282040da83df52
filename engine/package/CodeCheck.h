// The TorchScript code of a module archive (.pt), checked against the code this version's
// exporter writes. A package's modules are programs the engine runs; checksums in its manifest
// only prove the files are the ones its author listed, so the engine loads a module only when
// the digest of its code is on the allow-list generated from the exporter
// (engine/package/code-allowlist.txt, compiled in; the digest is defined in
// engine/exporter/florence2/codehash.py and computed the same way here). Internal to the engine.
//
//   const std::string digest = florence::detail::torchScriptCodeDigest("pkg/decoder.pt");
//   if (florence::detail::codeFamilies("decoder", digest).empty()) refuse();
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace florence::detail {

class ArchiveError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Reads only the archive's directory and its code entries (code/…, constants.pkl), never the
// tensor data; a malformed or compressed archive, or one whose code is implausibly large,
// throws ArchiveError.
std::string torchScriptCodeDigest(const std::string& path);

// The model families ("florence2-base", …) whose module `role` ("vision", "text_encoder",
// "decoder") has this code digest; empty when none does.
std::vector<std::string> codeFamilies(const std::string& role, const std::string& digest);

// Whether this digest is on code-allowlist.txt, the code this version's exporter writes (not an
// earlier version's): code the engine may mirror in C++ (decoding/NativeStep.h).
bool currentExporterCode(const std::string& role, const std::string& digest);

// The digest of in-memory entries (name inside the archive without its top folder -> bytes);
// exposed for the fuzz harness and the tests.
std::string codeDigestOfEntries(const std::vector<std::pair<std::string, std::string>>& entries);

} // namespace florence::detail
