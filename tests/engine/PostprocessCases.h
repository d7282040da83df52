// The original Florence-2 post-processor's reference cases (tests/data/postprocess-cases.json):
// task, generated text, image size and what the original returned, shared by the answer suites.
#pragma once

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

inline QJsonArray loadPostprocessCases() {
    QFile file(QStringLiteral(FLORENCE_TEST_DATA_DIR "/postprocess-cases.json"));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll()).array();
}

// The cases as Qt Test data rows "<n> <task>": task, text, width, height and, when asked for,
// the original's result (QJsonValue "expected").
inline void addPostprocessCaseRows(bool withExpected) {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    if (withExpected)
        QTest::addColumn<QJsonValue>("expected");
    const QJsonArray cases = loadPostprocessCases();
    QVERIFY(cases.size() >= 16);
    int i = 0;
    for (const QJsonValue& v : cases) {
        const QJsonObject c = v.toObject();
        const QJsonArray size = c["image_size"].toArray();
        QTestData& row = QTest::addRow("%d %s", i++, qPrintable(c["task"].toString()))
                         << c["task"].toString() << c["text"].toString() << size[0].toInt()
                         << size[1].toInt();
        if (withExpected)
            row << c["expected"];
    }
}
