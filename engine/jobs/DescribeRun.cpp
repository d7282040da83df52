#include <florence/describe_run.h>

#include <florence/machine.h>

namespace florence {

ModelFacts modelFacts(const Model& model) {
    ModelFacts facts;
    facts.name = model.manifest().name;
    facts.precision = model.loadOptions().precision;
    facts.encoderPrecision = model.encoderPrecision();
    facts.loadMs = model.loadMs();
    return facts;
}

AnswerContext describeRun(const ModelFacts& model, const GenerationOptions& options,
                          const std::string& imageFile, const std::string& prompt,
                          std::optional<bool> orientationApplied) {
    AnswerContext context;
    context.imageFile = imageFile;
    context.prompt = prompt;
    context.options = &options;
    context.orientationApplied = orientationApplied;
    context.runtime = runtimeSummary();
    if (!model.name.empty()) {
        context.model = model.name;
        context.precision = precisionName(model.precision);
        context.encoderPrecision = precisionName(model.encoderPrecision);
        context.loadMs = model.loadMs;
    }
    return context;
}

} // namespace florence
