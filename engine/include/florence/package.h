// A model package: the folder the exporter writes (scripted modules, tokenizer files and a
// manifest.json that describes and checksums them).
//
//   florence::Manifest m = florence::readManifest("resources/models/tiny");  // throws PackageError
//   florence::verifyPackageFiles(m);   // size and SHA-256 of every listed file
#pragma once

#include <florence/error.h>
#include <florence/tasks.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace florence {

// Florence-2's generation limit when a package does not set one (its processor's
// max_new_tokens), and the most the app's panel offers; a package's max_positions may lower it.
constexpr int kDefaultMaxNewTokens = 1024;

// Versions this build reads: 1, 2 (which adds "shared_parameters") and 3 (an architecture
// package: no weight data, "generated_parameters" say what the engine generates at load).
constexpr int kPackageFormatVersion = 3;
constexpr int kOldestPackageFormatVersion = 1;

struct PackageFile {
    std::string name; // relative to the package folder
    int64_t size = 0;
    std::string sha256; // lowercase hex
};

// A tensor stored once and used by two modules: `name` of module `module` (saved as an empty
// tensor) is `fromName` of module `fromModule`. Modules by role: "vision", "text_encoder",
// "decoder"; names are dotted parameter paths, e.g. "encoder.embed_tokens.weight".
struct SharedParameter {
    std::string module;
    std::string name;
    std::string fromModule;
    std::string fromName;
};

// A parameter of an architecture package, filled at load from a seeded normal distribution:
// every name of `names` in module `module` gets the same tensor of `shape`.
struct GeneratedParameter {
    std::string module;
    std::vector<std::string> names;
    std::vector<int64_t> shape;
    double mean = 0;
    double std = 0.02;
};

struct Manifest {
    std::string dir; // the package folder
    int formatVersion = 0;
    std::string name;      // "florence2-base (random init)"
    std::string source;    // where the weights came from
    std::string precision; // "float32"
    std::string storage;   // how weights are stored: "float32", "float16" or "none" (generated)
    // dimensions
    int dModel = 0;
    int encoderLayers = 0;
    int decoderLayers = 0;
    int decoderHeads = 0;
    int encoderHeads = 0;
    int vocabSize = 0;
    int maxPositions = 0;
    int imageTokens = 0;
    int64_t parameterCount = 0;
    // image preprocessing
    int imageWidth = 768;
    int imageHeight = 768;
    std::array<float, 3> imageMean{0.485f, 0.456f, 0.406f};
    std::array<float, 3> imageStd{0.229f, 0.224f, 0.225f};
    // special tokens
    int64_t bosId = 0;
    int64_t padId = 1;
    int64_t eosId = 2;
    int64_t decoderStartId = 2;
    int64_t forcedBosId = 0;
    int64_t forcedEosId = 2;
    // generation defaults
    int numBeams = 3;
    int noRepeatNgramSize = 3;
    double lengthPenalty = 1.0;
    bool earlyStopping = true;
    int maxNewTokens = kDefaultMaxNewTokens;
    bool ignoreEos = false; // generate exactly maxNewTokens (the speed-demo packages)
    // The tasks the weights were trained for: unset when the package does not say (a
    // checkpoint imported from Hugging Face: all of Florence-2's), empty for random weights.
    std::optional<std::vector<std::string>> trainedTasks;
    std::string purpose; // one line on what the model is for and what it cannot do
    // files by role: "vision", "text_encoder", "decoder", "vocab", "merges", …
    std::map<std::string, PackageFile> files;
    // e.g. the text encoder's token embedding, which is the decoder's (format version 2)
    std::vector<SharedParameter> sharedParameters;
    // Architecture packages (format version 3): the weights to generate, and the seed.
    std::vector<GeneratedParameter> generatedParameters;
    uint64_t generatedSeed = 0;
    bool generatesWeights() const { return !generatedParameters.empty(); }
    // A fine-tune's own tasks beside the standard 15 ("tasks", optional): token, name, prompt
    // ("{input}" where the text goes), whether it takes text, and the answer type.
    std::vector<TaskInfo> tasks;

    std::string path(const std::string& role) const; // throws PackageError if absent
};

// Parses dir/manifest.json; throws PackageError naming the file and what is wrong (missing,
// unreadable, not JSON, other format version, missing field, a value out of its range: token
// ids must be below the vocabulary size, dimensions positive and bounded, every file needs a
// size and a SHA-256).
Manifest readManifest(const std::string& dir);
struct VerifyOptions {
    // Files verified before (same device, inode, size, modification and status-change times
    // and expected hash, recorded in the user's cache folder) are not hashed again.
    bool useRecord = true;
    // Set from another thread to stop the hashing with a PackageError "… was cancelled".
    const std::atomic<bool>* cancel = nullptr;
    // The share of the listed bytes checked so far, 0..1 (a file found in the record counts as
    // checked at once); called as each megabyte is hashed and once at 1.
    std::function<void(double fraction)> onProgress = nullptr;
};

// Checks every listed file is a regular file with its size and checksum (reading exactly the
// stated size); throws PackageError naming the first file that does not.
void verifyPackageFiles(const Manifest& manifest, const VerifyOptions& options = {});

std::string sha256File(const std::string& path);

} // namespace florence
