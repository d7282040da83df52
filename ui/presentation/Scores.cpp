#include "presentation/Scores.h"

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

} // namespace florence::ui
