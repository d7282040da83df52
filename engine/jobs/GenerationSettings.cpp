#include <florence/generation_settings.h>

#include <florence/error.h>

#include <cstdlib>

namespace florence {

GenerationOptions GenerationSettings::applyTo(GenerationOptions o) const {
    o.numBeams = beams.value_or(o.numBeams);
    o.maxNewTokens = maxNewTokens.value_or(o.maxNewTokens);
    o.useCache = useCache.value_or(o.useCache);
    o.ignoreEos = ignoreEos.value_or(o.ignoreEos);
    return o;
}

bool GenerationSettings::isDefault() const {
    return *this == GenerationSettings{};
}

bool GenerationSettings::operator==(const GenerationSettings& o) const {
    return beams == o.beams && maxNewTokens == o.maxNewTokens && useCache == o.useCache &&
           ignoreEos == o.ignoreEos && precision == o.precision;
}

const std::vector<Precision>& knownPrecisions() {
    static const std::vector<Precision> kAll = {Precision::Float32, Precision::BFloat16,
                                                Precision::Int8};
    return kAll;
}

std::optional<Precision> parsePrecision(const std::string& name) {
    if (name == "fp32")
        return Precision::Float32;
    if (name == "bf16")
        return Precision::BFloat16;
    for (const Precision p : knownPrecisions())
        if (name == precisionName(p))
            return p;
    return std::nullopt;
}

std::string precisionNames() {
    const std::vector<Precision>& all = knownPrecisions();
    std::string names;
    for (size_t i = 0; i < all.size(); ++i)
        names += (i == 0                ? ""
                  : i + 1 == all.size() ? " or "
                                        : ", ") +
                 std::string(precisionName(all[i]));
    return names;
}

std::optional<Precision> parsePrecisionSetting(const std::string& name) {
    if (name == "auto" || name == "automatic")
        return std::nullopt;
    if (const std::optional<Precision> p = parsePrecision(name))
        return p;
    throw EngineError("precision '" + name + "' is not auto, " + precisionNames());
}

std::optional<Precision> defaultPrecisionSetting() {
    const char* env = std::getenv("FLORENCE_PRECISION");
    if (!env || !*env)
        return std::nullopt;
    try {
        return parsePrecisionSetting(env);
    } catch (const EngineError& e) {
        throw EngineError(std::string("FLORENCE_PRECISION: ") + e.what());
    }
}

} // namespace florence
