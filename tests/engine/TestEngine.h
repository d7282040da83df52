// The engine suite's fixture, shared by its three files: the fixture checkpoint imported through
// the exporter from both weight formats (pytorch_model.bin and model.safetensors) once for the
// whole suite, its reference tensors and the five reference tasks.
//   TestEngine.cpp        parity with the original code: features, logits, greedy and beam tokens
//   TestEngineRuns.cpp    streaming, cancel, load progress, feature reuse, encoding ahead,
//                         batching
//   TestEngineErrors.cpp  every promised error: bad packages, requests and imports
#pragma once

#include "Ops.h"
#include <florence/engine.h>
#include <florence/image.h>
#include <florence/importer.h>
#include <florence/package.h>
#include <florence/paths.h>
#include <florence/safetensors.h>
#include <florence/tasks.h>

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <fcntl.h>
#include <sys/stat.h>

using namespace florence;

inline const QString kFixture = QStringLiteral(FLORENCE_TEST_DATA_DIR "/florence2-tiny-random");

inline std::vector<int64_t> toIds(const QJsonArray& a) {
    std::vector<int64_t> v;
    for (const auto& x : a)
        v.push_back(x.toInteger());
    return v;
}

inline void copyDir(const QString& from, const QString& to) {
    QDir().mkpath(to);
    for (const QFileInfo& fi : QDir(from).entryInfoList(QDir::Files))
        QVERIFY(QFile::copy(fi.filePath(), to + "/" + fi.fileName()));
}

template <typename F> QString engineErrorOf(F&& f) {
    try {
        f();
    } catch (const EngineError& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return QStringLiteral("wrong exception type: ") + e.what();
    }
    return QStringLiteral("no error");
}

struct TaskRef {
    QString token;
    std::string prompt;
    std::vector<int64_t> inputIds;
    std::vector<int64_t> generated;
    std::string text;
};

class TestEngine : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_tmp;
    std::shared_ptr<const Model> m_models[2]; // 0: pytorch_model.bin, 1: model.safetensors
    std::vector<TaskRef> m_tasks;
    std::vector<float> m_pixels;
    SafetensorsFile m_ref;

    const Model& model(int format) { return *m_models[format]; }

private slots:
    void initTestCase();
    void imageFeatures_data();
    void imageFeatures();
    void encoderAndLogits_data();
    void encoderAndLogits();
    void fullLogits();
    void greedyGeneration_data();
    void greedyGeneration();
    void beamCachedMatchesUncached_data();
    void beamCachedMatchesUncached();
    void streamingTextIsUtf8Safe();
    void cancelMidRun_data();
    void cancelMidRun();
    void callbackStops();
    void cancelBeforeDecoding();
    void cancelStopsAPassMidWay();
    void cancelAtAnyMomentLeavesTheSessionWhole();
    void skippedPromptKeepsTheImage();
    void cancelStopsEveryRowOfABatch();
    void streamedDeltasAddUpToTheAnswer();
    void loadProgressInOrder_data();
    void loadProgressInOrder();
    void featureReuse();
    void sameImageTwiceInABatch();
    void encodeImageAheadOfRun();
    void encodePromptAheadOfRun_data();
    void encodePromptAheadOfRun();
    void verifiedRecordKeepsRecentEntries();
    void batchEqualsOneByOne_data();
    void batchEqualsOneByOne();
    void realImageRuns();
    void sharedEmbedding_data();
    void sharedEmbedding();
    void int8FixtureTokens();
    void badPackages_data();
    void badPackages();
    void badRequests_data();
    void badRequests();
    void importErrors_data();
    void importErrors();
};
