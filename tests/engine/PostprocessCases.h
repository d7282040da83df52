// The original Florence-2 post-processor's reference cases (tests/data/postprocess-cases.json):
// task, generated text, image size and what the original returned, shared by the answer suites.
#pragma once

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>

inline QJsonArray loadPostprocessCases() {
    QFile file(QStringLiteral(FLORENCE_TEST_DATA_DIR "/postprocess-cases.json"));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll()).array();
}
