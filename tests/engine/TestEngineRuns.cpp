// The engine on the fixture checkpoint as the app and the CLI drive it: streamed text that is
// always whole characters and adds up to the answer, cancel at every stage, a callback that
// stops, load progress, feature reuse, encoding ahead of a run, batches that equal one-by-one
// runs.
#include "TestEngine.h"

#include <chrono>
#include <thread>

void TestEngine::streamingTextIsUtf8Safe() {
    // Task 4's answer has a character split across tokens ("の�").
    Session s(m_models[0]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = m_tasks[4].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    std::string streamed;
    o.onToken = [&](const TokenEvent& e) {
        if (e.rewound)
            streamed.clear();
        streamed += e.textDelta;
        // Every delta is whole UTF-8: a QString round trip keeps it byte for byte.
        const QString q = QString::fromUtf8(e.textDelta.data(), int(e.textDelta.size()));
        if (q.toUtf8().toStdString() != e.textDelta)
            return false;
        return true;
    };
    const Result r = s.generate(req, o);
    QVERIFY(!r.cancelled);
    QCOMPARE(streamed, r.text);
}

void TestEngine::cancelMidRun_data() {
    QTest::addColumn<bool>("cache");
    QTest::addColumn<int>("beams");
    QTest::newRow("greedy cached") << true << 1;
    QTest::newRow("greedy uncached") << false << 1;
    QTest::newRow("beams cached") << true << 3;
    QTest::newRow("beams uncached") << false << 3;
}

void TestEngine::cancelMidRun() {
    QFETCH(bool, cache);
    QFETCH(int, beams);
    Session s(m_models[0]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = m_tasks[0].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = beams;
    o.maxNewTokens = 1024;
    o.ignoreEos = true; // would run 1024 steps if the cancel were ignored
    o.useCache = cache;
    std::atomic<bool> cancel{false};
    o.cancel = &cancel;
    o.onToken = [&](const TokenEvent& e) {
        if (e.step == 4)
            cancel = true;
        return true;
    };
    const Result r = s.generate(req, o);
    QVERIFY(r.cancelled);
    QCOMPARE(r.timings.stepMs.size(), size_t(5));
    // Promptly: the step after the cancel is not run (the count, not wall time, which depends on
    // the machine's load).
    QCOMPARE(r.generatedIds.size(), size_t(6)); // start token + the 5 generated before cancel
}

void TestEngine::callbackStops() {
    Session s(m_models[0]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = m_tasks[1].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.onToken = [](const TokenEvent& e) { return e.step < 2; };
    const Result r = s.generate(req, o);
    QVERIFY(r.cancelled);
    QCOMPARE(r.generatedIds.size(), size_t(4));
    QCOMPARE(r.generatedIds,
             std::vector<int64_t>(m_tasks[1].generated.begin(), m_tasks[1].generated.begin() + 4));
}

void TestEngine::cancelBeforeDecoding() {
    // A cancel that arrives while the image is being prepared skips the encoders.
    Session s(m_models[0]);
    Request req;
    req.image = std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/pier.png"));
    req.prompt = m_tasks[0].prompt;
    std::atomic<bool> cancel{true};
    int events = 0;
    GenerationOptions o = model(0).defaultOptions();
    o.cancel = &cancel;
    o.onToken = [&](const TokenEvent&) {
        ++events;
        return true;
    };
    const Result r = s.generate(req, o);
    QVERIFY(r.cancelled);
    QVERIFY(r.generatedIds.empty());
    QCOMPARE(r.timings.visionMs, 0.0);
    QCOMPARE(events, 0);
}

void TestEngine::cancelStopsAPassMidWay() {
    // A cancel set while a pass runs (a large model's vision encoder takes seconds) stops it at
    // its next own operator, with nothing returned. The diagnostics run the passes without the
    // checks a run makes before each, so a flag set before the call reaches the operators.
    Session s(m_models[0]);
    const std::vector<int64_t>& prompt = m_tasks[0].inputIds;
    const std::vector<int64_t> decoderIds{2, 0};
    const FloatArray features = s.imageFeatures(m_pixels);
    const FloatArray hidden = s.encoderHidden(m_pixels, prompt);
    const FloatArray logits = s.decoderLogits(m_pixels, prompt, decoderIds);
    std::atomic<bool> cancel{true};
    QVERIFY(s.imageFeatures(m_pixels, &cancel).shape.empty());
    QVERIFY(s.encoderHidden(m_pixels, prompt, &cancel).shape.empty());
    QVERIFY(s.decoderLogits(m_pixels, prompt, decoderIds, &cancel).shape.empty());
    // The flag reaches only the passes it was given to, and a stopped pass leaves nothing
    // behind: the next ones compute what they did before.
    QCOMPARE(s.imageFeatures(m_pixels).data, features.data);
    cancel = false;
    QCOMPARE(s.imageFeatures(m_pixels, &cancel).data, features.data);
    QCOMPARE(s.encoderHidden(m_pixels, prompt, &cancel).data, hidden.data);
    QCOMPARE(s.decoderLogits(m_pixels, prompt, decoderIds, &cancel).data, logits.data);
    // A failure inside a pass that is not the cancel is still thrown (more decoder positions
    // than the model has).
    QVERIFY_THROWS_EXCEPTION(
        std::exception, s.decoderLogits(m_pixels, prompt, std::vector<int64_t>(5000, 2), &cancel));
}

void TestEngine::cancelAtAnyMomentLeavesTheSessionWhole() {
    // A cancel from another thread may land in any stage, within an encoder's pass too: the run
    // and the encode ahead come back cancelled or whole and never throw, and the session (its
    // cached features above all) answers the next run as a fresh one does. When each lands
    // depends on the machine; what is checked holds wherever it lands.
    const auto image =
        std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/pier.png"));
    Request req;
    req.image = image;
    req.prompt = m_tasks[1].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 8;
    const std::vector<int64_t> reference = Session(m_models[0]).generate(req, o).generatedIds;
    for (const int us : {0, 100, 300, 1000, 2000, 4000, 8000, 16000, 32000}) {
        Session s(m_models[0]);
        for (const bool ahead : {false, true}) {
            std::atomic<bool> cancel{false};
            std::thread canceller([&] {
                std::this_thread::sleep_for(std::chrono::microseconds(us));
                cancel = true;
            });
            try {
                if (ahead) {
                    EncodeOptions e;
                    e.prompt = req.prompt;
                    e.cancel = &cancel;
                    s.encodeImage(*image, e);
                } else {
                    GenerationOptions c = o;
                    c.cancel = &cancel;
                    const Result r = s.generate(req, c);
                    QVERIFY(r.cancelled || r.generatedIds == reference);
                }
            } catch (const std::exception& e) {
                canceller.join();
                QFAIL(qPrintable(QString("cancelled after %1 us: %2").arg(us).arg(e.what())));
            }
            canceller.join();
            const Result again = s.generate(req, o);
            QVERIFY2(!again.cancelled && again.generatedIds == reference,
                     qPrintable(QString("after a cancel at %1 us").arg(us)));
        }
    }
}

void TestEngine::skippedPromptKeepsTheImage() {
    // A newer prompt for the same image skips only the older encode's prompt: the image's
    // features are made and kept, and the newer encode finds them.
    Session s(m_models[0]);
    const RgbImage pier = loadImage(FLORENCE_SAMPLES_DIR "/pier.png");
    std::atomic<bool> cancel{false}, skip{true};
    EncodeOptions older;
    older.prompt = m_tasks[1].prompt;
    older.cancel = &cancel;
    older.skipPrompt = &skip;
    const ImageEncoding skipped = s.encodeImage(pier, older);
    QVERIFY(skipped.cancelled && !skipped.promptEncoded);
    QVERIFY(skipped.visionMs > 0);
    EncodeOptions newer;
    newer.prompt = m_tasks[0].prompt;
    const ImageEncoding found = s.encodeImage(pier, newer);
    QVERIFY(found.alreadyEncoded && found.promptEncoded && !found.cancelled);
}

void TestEngine::cancelStopsEveryRowOfABatch() {
    // The options' cancel flag stops a batch: every row at the same step.
    Session s(m_models[0]);
    std::vector<Request> reqs;
    for (int task : {0, 1, 3}) {
        Request r;
        r.pixelValues = m_pixels;
        r.prompt = m_tasks[task].prompt;
        reqs.push_back(r);
    }
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 1024;
    o.ignoreEos = true; // would run 1024 steps if the cancel were ignored
    std::atomic<bool> cancel{false};
    o.cancel = &cancel;
    o.onToken = [&](const TokenEvent& e) {
        if (e.step == 3)
            cancel = true;
        return true;
    };
    const std::vector<Result> results = s.generateBatch(reqs, o);
    QCOMPARE(results.size(), reqs.size());
    for (const Result& r : results) {
        QVERIFY(r.cancelled);
        QCOMPARE(r.generatedIds.size(), size_t(5)); // start token + steps 0..3
    }
}

void TestEngine::streamedDeltasAddUpToTheAnswer() {
    // What a listener shows (the app's raw text, the CLI's stream): each step's delta appended,
    // or the whole text when beam search switches to a hypothesis whose text differs. At the
    // end it is the answer, for greedy and beam runs of every reference task.
    int rewinds = 0;
    for (int beams : {1, 3, 4}) {
        for (size_t task = 0; task < m_tasks.size(); ++task) {
            Session s(m_models[0]);
            Request req;
            req.pixelValues = m_pixels;
            req.prompt = m_tasks[task].prompt;
            GenerationOptions o = model(0).defaultOptions();
            o.numBeams = beams;
            o.maxNewTokens = 40;
            std::string shown;
            int steps = 0;
            bool inOrder = true;
            o.onToken = [&](const TokenEvent& e) {
                inOrder = inOrder && e.step == steps++ && e.index == 0;
                if (e.rewound) {
                    ++rewinds;
                    shown = e.textDelta;
                } else {
                    shown += e.textDelta;
                }
                return true;
            };
            const Result r = s.generate(req, o);
            QVERIFY(!r.cancelled);
            QVERIFY(inOrder);
            QCOMPARE(steps, int(r.timings.stepMs.size()));
            QVERIFY2(shown == r.text, qPrintable(QStringLiteral("%1 beams, task %2: '%3' != '%4'")
                                                     .arg(beams)
                                                     .arg(task)
                                                     .arg(QString::fromStdString(shown),
                                                          QString::fromStdString(r.text))));
        }
    }
    // The fixture's beams do switch to hypotheses of other text: the rewind path ran.
    QVERIFY2(rewinds > 0, "no beam run rewound");
}

void TestEngine::loadProgressInOrder_data() {
    QTest::addColumn<int>("precision");
    QTest::newRow("float32") << int(Precision::Float32);
    QTest::newRow("int8") << int(Precision::Int8);
}

void TestEngine::loadProgressInOrder() {
    // The bundled model as the app loads it: every stage in order, the fraction never going
    // back, and 1 exactly once, at the end.
    QFETCH(int, precision);
    const std::string dir = bundledModelDir();
    QVERIFY2(!dir.empty(), "this build has no bundled model");
    std::vector<std::pair<LoadStage, double>> seen;
    LoadOptions lo;
    lo.precision = static_cast<Precision>(precision);
    lo.onProgress = [&](LoadStage stage, double fraction) { seen.emplace_back(stage, fraction); };
    const std::shared_ptr<const Model> loaded = Model::load(dir, lo);
    QVERIFY(!seen.empty());
    std::vector<LoadStage> stages;
    for (size_t i = 0; i < seen.size(); ++i) {
        const auto [stage, fraction] = seen[i];
        QVERIFY2(fraction >= 0 && fraction <= 1, qPrintable(QString::number(fraction)));
        if (i > 0) {
            QVERIFY(stage >= seen[i - 1].first);
            QVERIFY(fraction >= seen[i - 1].second);
        }
        if (stages.empty() || stages.back() != stage)
            stages.push_back(stage);
        if (i + 1 < seen.size())
            QVERIFY(fraction < 1);
    }
    QCOMPARE(seen.back().second, 1.0);
    std::vector<LoadStage> expected = {LoadStage::VerifyingFiles, LoadStage::ReadingVision,
                                       LoadStage::ReadingTextEncoder, LoadStage::ReadingDecoder,
                                       LoadStage::PreparingWeights};
    if (lo.precision == Precision::Int8)
        expected.push_back(LoadStage::Quantizing);
    QCOMPARE(stages, expected);
    QCOMPARE(QString(loadStageName(LoadStage::ReadingVision)),
             QString("reading the vision encoder"));
    // The hook was this load's: the model does not keep it.
    QVERIFY(!loaded->loadOptions().onProgress);
}

void TestEngine::verifiedRecordKeepsRecentEntries() {
    // The record of verified files (so a load does not rehash a 1 GB package) is capped at 200
    // entries; the cap must drop the oldest, never the one just added, or a package in use is
    // hashed again on every load once the record is full.
    QTemporaryDir cache;
    QVERIFY(cache.isValid());
    const QByteArray oldCache = qgetenv("XDG_CACHE_HOME");
    qputenv("XDG_CACHE_HOME", cache.path().toUtf8());
    const QString dir = m_tmp.path() + "/record-pkg";
    QVERIFY(QDir().mkpath(dir));
    const QString file = dir + "/weights.bin";
    {
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("hello");
    }
    Manifest m;
    m.dir = dir.toStdString();
    PackageFile pf;
    pf.name = "weights.bin";
    pf.size = 5;
    pf.sha256 = sha256File(file.toStdString());
    m.files["vision"] = pf;
    // 250 older entries that sort after any hex digest.
    const QString record = cache.path() + "/florence-studio/verified-files.txt";
    QVERIFY(QDir().mkpath(cache.path() + "/florence-studio"));
    {
        QFile f(record);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Text));
        for (int i = 0; i < 250; ++i)
            f.write(QStringLiteral("~old %1\n").arg(i, 3, 10, QLatin1Char('0')).toUtf8());
    }
    verifyPackageFiles(m);
    QFile f(record);
    QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    f.close();
    QCOMPARE(lines.size(), 200);
    QCOMPARE(lines.first(), QStringLiteral("~old 051"));
    QVERIFY2(lines.last().endsWith(QFileInfo(file).absoluteFilePath()), qPrintable(lines.last()));
    // Verified again unchanged: the record stays as it was (nothing rehashed or added).
    verifyPackageFiles(m);
    {
        QFile again(record);
        QVERIFY(again.open(QIODevice::ReadOnly | QIODevice::Text));
        QCOMPARE(QString::fromUtf8(again.readAll()).split('\n', Qt::SkipEmptyParts), lines);
    }
    // Changed in place, same size, and its modification time set back to the nanosecond (after
    // the bytes are on disk: the write is closed first): the status-change time moved, so the
    // record no longer matches, the file is hashed again and refused.
    struct stat before {};
    QCOMPARE(::stat(QFile::encodeName(file).constData(), &before), 0);
    {
        QFile w(file);
        QVERIFY(w.open(QIODevice::ReadWrite));
        QCOMPARE(w.write("HELLO"), qint64(5));
    }
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    QCOMPARE(::utimensat(AT_FDCWD, QFile::encodeName(file).constData(), times, 0), 0);
    struct stat after {};
    QCOMPARE(::stat(QFile::encodeName(file).constData(), &after), 0);
    QCOMPARE(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    QCOMPARE(after.st_size, before.st_size);
    QVERIFY_THROWS_EXCEPTION(PackageError, verifyPackageFiles(m));
    VerifyOptions unrecorded;
    unrecorded.useRecord = false;
    QVERIFY_THROWS_EXCEPTION(PackageError, verifyPackageFiles(m, unrecorded));
    if (oldCache.isNull())
        qunsetenv("XDG_CACHE_HOME");
    else
        qputenv("XDG_CACHE_HOME", oldCache);
}

void TestEngine::featureReuse() {
    Session s(m_models[0]);
    Request req;
    req.image = std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/pier.png"));
    req.prompt = m_tasks[0].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    const Result first = s.generate(req, o);
    QVERIFY(!first.timings.featuresReused);
    QVERIFY(first.timings.visionMs > 0);
    req.prompt = m_tasks[1].prompt;
    const Result second = s.generate(req, o);
    QVERIFY(second.timings.featuresReused);
    QCOMPARE(second.timings.visionMs, 0.0);
    QCOMPARE(second.generatedIds, m_tasks[1].generated);
    // Without reuse the same answer comes out of a fresh vision pass.
    o.reuseFeatures = false;
    const Result third = s.generate(req, o);
    QVERIFY(!third.timings.featuresReused);
    QCOMPARE(third.generatedIds, second.generatedIds);
}

void TestEngine::sameImageTwiceInABatch() {
    // A batch that names one image twice encodes it once: the second row takes the first's
    // features, and its answer is the one it has alone.
    Session s(m_models[0]);
    const auto pier = std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/pier.png"));
    const auto chelsea =
        std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/chelsea.png"));
    std::vector<Request> reqs(4);
    reqs[0].image = pier;
    reqs[0].prompt = m_tasks[0].prompt;
    reqs[1].pixelValues = m_pixels;
    reqs[1].prompt = m_tasks[0].prompt;
    reqs[2].image = chelsea;
    reqs[2].prompt = m_tasks[1].prompt;
    reqs[3].image = std::make_shared<const RgbImage>(*pier); // equal pixels, another object
    reqs[3].prompt = m_tasks[1].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    const std::vector<Result> batched = s.generateBatch(reqs, o);
    QVERIFY(!batched[0].timings.featuresReused);
    QVERIFY(!batched[1].timings.featuresReused);
    QVERIFY(!batched[2].timings.featuresReused);
    QVERIFY(batched[3].timings.featuresReused);
    QCOMPARE(batched[1].generatedIds, m_tasks[0].generated);

    Session fresh(m_models[0]);
    o.reuseFeatures = false;
    for (size_t i : {size_t(0), size_t(3)})
        QCOMPARE(batched[i].generatedIds, fresh.generate(reqs[i], o).generatedIds);

    // Both images are remembered for the next request.
    o.reuseFeatures = true;
    QVERIFY(s.generate(reqs[2], o).timings.featuresReused);
    QVERIFY(s.generate(reqs[0], o).timings.featuresReused);
}

void TestEngine::encodeImageAheadOfRun() {
    // The app's encode on open: features computed before the request are what the run uses,
    // and its answer is the one a run that encodes itself gives.
    Session s(m_models[0]);
    const RgbImage pier = loadImage(FLORENCE_SAMPLES_DIR "/pier.png");
    std::atomic<bool> cancel{true};
    EncodeOptions cancelled;
    cancelled.cancel = &cancel;
    const ImageEncoding skipped = s.encodeImage(pier, cancelled);
    QVERIFY(skipped.cancelled);
    const ImageEncoding done = s.encodeImage(pier);
    QVERIFY(!done.cancelled && !done.alreadyEncoded);
    QVERIFY(done.visionMs > 0);
    QVERIFY(s.encodeImage(pier).alreadyEncoded);
    Request req;
    req.image = std::make_shared<const RgbImage>(pier);
    req.prompt = m_tasks[1].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    const Result ahead = s.generate(req, o);
    QVERIFY(ahead.timings.featuresReused);
    QCOMPARE(ahead.timings.visionMs, 0.0);
    QCOMPARE(ahead.generatedIds, m_tasks[1].generated);
}

void TestEngine::encodePromptAheadOfRun_data() {
    QTest::addColumn<bool>("cache");
    QTest::addColumn<int>("beams");
    QTest::newRow("cache, greedy") << true << 1;
    QTest::newRow("no cache, greedy") << false << 1;
    QTest::newRow("cache, 3 beams") << true << 3;
}

void TestEngine::encodePromptAheadOfRun() {
    // The app's encode on open with the chosen task's prompt: the text encoder's output (and
    // the cross-attention keys and values) made before Run is what a run of that prompt on that
    // image uses, with the answer of a run that encodes everything itself; any other prompt or
    // image runs the text encoder as before.
    QFETCH(bool, cache);
    QFETCH(int, beams);
    const RgbImage pier = loadImage(FLORENCE_SAMPLES_DIR "/pier.png");
    Request req;
    req.image = std::make_shared<const RgbImage>(pier);
    req.prompt = m_tasks[1].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = beams;
    o.maxNewTokens = 24;
    o.useCache = cache;
    const Result fresh = Session(m_models[0]).generate(req, o);
    if (beams == 1)
        QCOMPARE(fresh.generatedIds, m_tasks[1].generated);

    Session s(m_models[0]);
    std::atomic<bool> cancel{true};
    EncodeOptions withPrompt;
    withPrompt.prompt = req.prompt;
    EncodeOptions cancelled = withPrompt;
    cancelled.cancel = &cancel;
    QVERIFY(s.encodeImage(pier, cancelled).cancelled);
    const ImageEncoding done = s.encodeImage(pier, withPrompt);
    QVERIFY(done.promptEncoded && !done.promptAlreadyEncoded && !done.alreadyEncoded);
    QVERIFY(done.visionMs > 0 && done.textEncoderMs > 0);
    const ImageEncoding again = s.encodeImage(pier, withPrompt);
    QVERIFY(again.alreadyEncoded && again.promptAlreadyEncoded);
    QCOMPARE(again.textEncoderMs, 0.0);

    const Result ahead = s.generate(req, o);
    QVERIFY(ahead.timings.promptReused && ahead.timings.featuresReused);
    QCOMPARE(ahead.timings.textEncoderMs, 0.0);
    QCOMPARE(ahead.timings.visionMs, 0.0);
    QCOMPARE(ahead.promptIds, fresh.promptIds);
    QCOMPARE(ahead.generatedIds, fresh.generatedIds);
    QCOMPARE(s.generate(req, o).generatedIds, fresh.generatedIds); // kept for the next run

    // Another prompt on the same image: the features are reused, the text encoder runs.
    Request other = req;
    other.prompt = m_tasks[2].prompt;
    const Result second = s.generate(other, o);
    QVERIFY(second.timings.featuresReused && !second.timings.promptReused);
    QVERIFY(second.timings.textEncoderMs > 0);
    if (beams == 1)
        QCOMPARE(second.generatedIds, m_tasks[2].generated);
    // Another image with the same prompt, and a run that asks for no reuse: nothing reused.
    Request flipped = req;
    flipped.image = std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/coffee.png"));
    QVERIFY(!s.generate(flipped, o).timings.promptReused);
    o.reuseFeatures = false;
    const Result without = s.generate(req, o);
    QVERIFY(!without.timings.promptReused && !without.timings.featuresReused);
    QCOMPARE(without.generatedIds, fresh.generatedIds);
}

void TestEngine::batchEqualsOneByOne_data() {
    QTest::addColumn<bool>("cache");
    QTest::newRow("cache") << true;
    QTest::newRow("no cache") << false;
}

void TestEngine::batchEqualsOneByOne() {
    QFETCH(bool, cache);
    // The five reference tasks as one batch: prompts of 8 to 18 tokens, padded to the longest.
    // Padding that leaked into attention would change the tokens.
    Session s(m_models[0]);
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    o.useCache = cache;
    std::vector<Request> reqs;
    for (const TaskRef& t : m_tasks) {
        Request r;
        r.pixelValues = m_pixels;
        r.prompt = t.prompt;
        reqs.push_back(r);
    }
    std::vector<int> events(reqs.size(), 0);
    std::vector<std::string> streamed(reqs.size());
    o.onToken = [&](const TokenEvent& e) {
        ++events[e.index];
        streamed[e.index] = e.rewound ? e.textDelta : streamed[e.index] + e.textDelta;
        return true;
    };
    const std::vector<Result> results = s.generateBatch(reqs, o);
    o.onToken = nullptr;
    QCOMPARE(results.size(), m_tasks.size());
    for (size_t i = 0; i < results.size(); ++i) {
        QCOMPARE(results[i].generatedIds, m_tasks[i].generated);
        QCOMPARE(results[i].text, m_tasks[i].text);
        QCOMPARE(events[i], int(m_tasks[i].generated.size()) - 1);
        QCOMPARE(streamed[i], results[i].text); // each row's deltas, told apart by index
    }

    // Different images, tasks of different lengths, ending at different steps.
    std::vector<Request> mixed;
    for (const char* name : {"pier.png", "chelsea.png", "coffee.png"}) {
        Request r;
        r.image = std::make_shared<const RgbImage>(
            loadImage(std::string(FLORENCE_SAMPLES_DIR "/") + name));
        mixed.push_back(r);
    }
    mixed[0].prompt = m_tasks[3].prompt;
    mixed[1].prompt = m_tasks[0].prompt;
    mixed[2].prompt = m_tasks[1].prompt;
    o.maxNewTokens = 40;
    o.reuseFeatures = false;
    const std::vector<Result> batched = s.generateBatch(mixed, o);
    for (size_t i = 0; i < mixed.size(); ++i) {
        const Result alone = s.generate(mixed[i], o);
        QCOMPARE(batched[i].generatedIds, alone.generatedIds);
    }
}
