#include "presentation/AnswerDisplay.h"

namespace florence::ui {

std::string cleanAnswerText(const std::string& text) {
    return readableText(text); // the engine's, so batch's text sidecars read the same
}

ParsedAnswer displayAnswer(const ParsedAnswer& answer, const std::optional<Box>& askedRegion) {
    return readableAnswer(answer, askedRegion); // the engine's, so the answer document agrees
}

QString taskDisplayName(const QString& token) {
    try {
        return QString::fromStdString(taskInfo(token.toStdString()).name);
    } catch (const TaskError&) {
        return token;
    }
}

} // namespace florence::ui
