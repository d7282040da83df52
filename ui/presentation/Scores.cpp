#include "presentation/Scores.h"

#include <QObject>

#include <algorithm>

namespace florence::ui {

bool isScored(double score) {
    return score > 0 && score <= 1;
}

ParsedAnswer withMinScore(const ParsedAnswer& answer, double minScore) {
    ParsedAnswer out = answer;
    if (minScore <= 0)
        return out;
    out.items.erase(std::remove_if(out.items.begin(), out.items.end(),
                                   [minScore](const AnswerItem& item) {
                                       return isScored(item.score) && item.score < minScore;
                                   }),
                    out.items.end());
    return out;
}

QString scoreText(double score) {
    return isScored(score) ? QString::number(score, 'f', 3) : QString();
}

QString scoreExplanation() {
    return QObject::tr(
        "Score: the mean probability the model gave to the item's own tokens (its label and "
        "location tokens; an OCR line's text and corners), from 0 to 1. It says how sure the "
        "model was of what it wrote. It is not an IoU with the object and not the chance that "
        "the object is there: a well-placed box can score 0.3, because each corner is one of "
        "1,000 positions and the model shares its probability among the neighbouring ones, "
        "while a one-word category can score 1.000.");
}

QString scoreToolTip(double score, bool textAnswer) {
    if (!isScored(score))
        return {};
    if (textAnswer)
        return QObject::tr("%1: the mean probability the model gave to the words of its answer "
                           "(how sure it was of what it wrote, not whether it is right)")
            .arg(scoreText(score));
    return QObject::tr("%1. %2").arg(scoreText(score), scoreExplanation());
}

} // namespace florence::ui
