// florence::runImages on the bundled model: each image's answer is what a run on that image
// alone gives, failures come in their place in the list without stopping the others, and the
// callback and the cancel flag stop the loop (an answer cut short is never reported).
#include <florence/batch.h>
#include <florence/engine.h>
#include <florence/paths.h>

#include <QTest>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace {

std::string scene(int i) {
    return std::string(FLORENCE_SAMPLES_DIR) + "/scenes/scene_0" + std::to_string(i) + ".png";
}

} // namespace

class TestRunImages : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void answersEqualSingleRuns_data();
    void answersEqualSingleRuns();
    void callbackStops();
    void cancelDropsTheInterruptedImage();

private:
    std::shared_ptr<const florence::Model> m_model;
    florence::GenerationOptions m_options;
    const florence::TaskRequest m_task{"<OD>", "", std::nullopt};
};

void TestRunImages::initTestCase() {
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    const std::string dir = florence::bundledModelDir();
    QVERIFY2(!dir.empty(), "build the florence_data target first");
    m_model = florence::Model::load(dir);
    m_options = m_model->defaultOptions();
    m_options.numBeams = 1;
    m_options.maxNewTokens = 40;
}

void TestRunImages::answersEqualSingleRuns_data() {
    QTest::addColumn<int>("batchSize");
    QTest::newRow("one at a time") << 1;
    QTest::newRow("two together") << 2;
}

void TestRunImages::answersEqualSingleRuns() {
    QFETCH(int, batchSize);
    // With two at a time, the first two run as one batch and the third chunk is half broken.
    const std::vector<std::string> paths = {scene(0), scene(1), "/nonexistent/missing.png",
                                            std::string(FLORENCE_SOURCE_DIR) + "/README.md",
                                            scene(2)};
    florence::Session session(m_model);
    std::vector<florence::ImageOutcome> got;
    std::vector<std::string> started;
    florence::ImageRunHooks hooks;
    hooks.onImageDone = [&](const florence::ImageOutcome& o) {
        got.push_back(o);
        return true;
    };
    hooks.onImageStarted = [&](size_t, const std::string& path, const florence::RgbImage& image) {
        QVERIFY(!image.empty());
        started.push_back(path);
    };
    const size_t reported =
        florence::runImages(session, paths, m_task, m_options, batchSize, hooks);
    QCOMPARE(reported, paths.size());
    QCOMPARE(got.size(), paths.size());
    QCOMPARE(started, (std::vector<std::string>{scene(0), scene(1), scene(2)}));
    for (size_t i = 0; i < paths.size(); ++i) {
        QCOMPARE(got[i].index, i);
        QCOMPARE(got[i].path, paths[i]);
    }
    QVERIFY(got[2].error.find("missing.png") != std::string::npos);
    QVERIFY(got[3].error.find("README.md") != std::string::npos);
    // Each answer is the one a run on that image alone gives.
    florence::Session alone(m_model);
    for (size_t i : {size_t(0), size_t(1), size_t(4)}) {
        QVERIFY2(got[i].error.empty(), got[i].error.c_str());
        florence::Request r;
        r.image = std::make_shared<const florence::RgbImage>(florence::loadImage(paths[i]));
        r.prompt = florence::buildPrompt(m_task, r.image->width, r.image->height);
        QCOMPARE(got[i].prompt, r.prompt);
        QCOMPARE(got[i].result.generatedIds, alone.generate(r, m_options).generatedIds);
        QCOMPARE(got[i].width, r.image->width);
        QVERIFY(!got[i].answer.items.empty());
    }
}

void TestRunImages::callbackStops() {
    florence::Session session(m_model);
    int calls = 0;
    florence::ImageRunHooks hooks;
    hooks.onImageDone = [&](const florence::ImageOutcome&) {
        ++calls;
        return calls < 2;
    };
    const size_t reported =
        florence::runImages(session, {scene(0), scene(1), scene(2)}, m_task, m_options, 1, hooks);
    QCOMPARE(reported, size_t(2));
    QCOMPARE(calls, 2);
}

void TestRunImages::cancelDropsTheInterruptedImage() {
    // Cancelled as the second image starts: its generation stops at the first step and it is
    // not reported, so a caller writes nothing for it.
    florence::Session session(m_model);
    std::atomic<bool> cancel{false};
    std::vector<std::string> reported;
    florence::ImageRunHooks hooks;
    hooks.onImageDone = [&](const florence::ImageOutcome& o) {
        reported.push_back(o.path);
        return true;
    };
    hooks.onImageStarted = [&](size_t index, const std::string&, const florence::RgbImage&) {
        if (index == 1)
            cancel = true;
    };
    florence::GenerationOptions options = m_options;
    options.cancel = &cancel;
    florence::runImages(session, {scene(0), scene(1), scene(2)}, m_task, options, 1, hooks);
    QCOMPARE(reported, (std::vector<std::string>{scene(0)}));
}

QTEST_GUILESS_MAIN(TestRunImages)
#include "TestRunImages.moc"
