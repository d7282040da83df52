// What File › Export JSON writes: the answer in the Hugging Face form, the app's own form and,
// for answers with geometry, COCO (coordinates rounded to 0.01 px), with the raw text, prompt,
// image and model it came from.
//
//   florence::ui::ExportDocument doc{answer, rawText, prompt, "pier.png", 1000, 667, "demo"};
//   doc.write("/tmp/pier-OD.json");    // throws std::runtime_error naming the file
#pragma once

#include <florence/answer.h>

#include <QJsonObject>
#include <QString>

#include <string>

namespace florence::ui {

struct ExportDocument {
    ParsedAnswer answer;
    std::string rawText; // as generated, special tokens kept
    std::string prompt;
    QString imageName;
    int imageWidth = 0;
    int imageHeight = 0;
    QString modelName;

    QJsonObject toJson() const;
    // Throws std::runtime_error with the path and the system's reason when it cannot write.
    void write(const QString& path) const;
};

} // namespace florence::ui
