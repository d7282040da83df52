// The user's generation settings: what they changed from a package's own defaults, and nothing
// else. A setting left alone follows the package (its manifest's "generation" object), so the
// app and the CLI give the same answer for the same package and image when nothing is changed.
// The app's panel and its saved preferences hold one; the CLI makes one from its options.
//
//   florence::GenerationSettings settings;
//   settings.beams = 1;                                  // the user chose greedy search
//   const florence::GenerationOptions opts = settings.applyTo(model->defaultOptions());
//   // opts.maxNewTokens, the n-gram ban, … are still the package's
//   const auto p = florence::parsePrecision("bf16");     // Precision::BFloat16
//   settings.precision = florence::parsePrecisionSetting("auto"); // nullopt: Automatic
#pragma once

#include <florence/engine.h>

#include <optional>
#include <string>
#include <vector>

namespace florence {

struct GenerationSettings {
    std::optional<int> beams;        // GenerationOptions::numBeams
    std::optional<int> maxNewTokens; // GenerationOptions::maxNewTokens
    std::optional<bool> useCache;    // GenerationOptions::useCache
    std::optional<bool> ignoreEos;   // GenerationOptions::ignoreEos
    // How the weights run (LoadOptions::precision): the precision the user chose, or unset for
    // Automatic, the fastest whose answers hold on this CPU (<florence/auto_precision.h>).
    std::optional<Precision> precision;

    // `defaults` (Model::defaultOptions: the package's) with every setting that was changed.
    GenerationOptions applyTo(GenerationOptions defaults) const;
    // Nothing changed.
    bool isDefault() const;

    bool operator==(const GenerationSettings& o) const;
    bool operator!=(const GenerationSettings& o) const { return !(*this == o); }
};

// Every precision, in the order a list shows them; precisionName() prints each.
const std::vector<Precision>& knownPrecisions();
// The inverse of precisionName(), also taking "fp32" and "bf16"; nullopt for another name.
std::optional<Precision> parsePrecision(const std::string& name);
// "float32, bfloat16 or int8": the names parsePrecision takes, for a message.
std::string precisionNames();
// A precision setting as a person or $FLORENCE_PRECISION writes it: "auto" (or "automatic")
// gives nullopt, Automatic; a name parsePrecision takes gives that precision. Throws
// EngineError naming the accepted words for anything else.
std::optional<Precision> parsePrecisionSetting(const std::string& name);
// The precision setting nothing chose: $FLORENCE_PRECISION when set (the test suites set
// float32, whose answers they expect), else Automatic. Throws EngineError for a wrong value.
std::optional<Precision> defaultPrecisionSetting();

} // namespace florence
