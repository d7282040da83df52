// The engine against the original Florence-2 code: the fixture checkpoint, imported through the
// exporter from both weight formats, must reproduce the reference image features, encoder
// outputs, logits and every greedily generated token, with and without the key/value cache.
// Also: beam search in both modes, streaming, cancel, feature reuse and every promised error.
#include "TestEngine.h"

void TestEngine::initTestCase() {
    if (qEnvironmentVariableIsEmpty("FLORENCE_STUDIO_DATA"))
        qputenv("FLORENCE_STUDIO_DATA", FLORENCE_BUILD_DATA_DIR);
    QVERIFY(m_tmp.isValid());

    // The fixture as published (pytorch_model.bin, tied weights under all four names).
    ImportJobParams job;
    job.hfDir = kFixture.toStdString();
    job.outDir = (m_tmp.path() + "/pkg-bin").toStdString();
    runImport(job);

    // The same weights as model.safetensors with the embedding stored once.
    QProcess convert;
    convert.start(FLORENCE_PYTHON,
                  {FLORENCE_SOURCE_DIR "/tests/engine/make_safetensors_checkpoint.py", kFixture,
                   m_tmp.path() + "/hf-st"});
    QVERIFY(convert.waitForFinished(120000));
    QCOMPARE(convert.exitCode(), 0);
    QVERIFY(QFile::exists(m_tmp.path() + "/hf-st/model.safetensors"));
    QVERIFY(!QFile::exists(m_tmp.path() + "/hf-st/pytorch_model.bin"));
    job.hfDir = (m_tmp.path() + "/hf-st").toStdString();
    job.outDir = (m_tmp.path() + "/pkg-st").toStdString();
    runImport(job);

    m_models[0] = Model::load(m_tmp.path().toStdString() + "/pkg-bin");
    m_models[1] = Model::load(m_tmp.path().toStdString() + "/pkg-st");

    m_ref = SafetensorsFile::open((kFixture + "/reference.safetensors").toStdString());
    m_pixels = m_ref.toFloat("pixel_values");

    QFile f(kFixture + "/reference.json");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject tasks = QJsonDocument::fromJson(f.readAll()).object()["tasks"].toObject();
    for (const char* token : {"<CAPTION>", "<OD>", "<OCR_WITH_REGION>",
                              "<CAPTION_TO_PHRASE_GROUNDING>", "<REGION_TO_DESCRIPTION>"}) {
        const QJsonObject t = tasks[token].toObject();
        m_tasks.push_back({token, t["prompt"].toString().toStdString(),
                           toIds(t["input_ids"].toArray()), toIds(t["generated"].toArray()),
                           t["text"].toString().toStdString()});
    }
    QCOMPARE(m_tasks.size(), size_t(5));
}

void TestEngine::imageFeatures_data() {
    QTest::addColumn<int>("format");
    QTest::newRow("pytorch_model.bin") << 0;
    QTest::newRow("model.safetensors") << 1;
}

void TestEngine::imageFeatures() {
    QFETCH(int, format);
    Session s(m_models[format]);
    const FloatArray f = s.imageFeatures(m_pixels);
    const std::vector<float> ref = m_ref.toFloat("image_features");
    QCOMPARE(f.shape, (std::vector<int64_t>{1, 577, 64}));
    QCOMPARE(f.data.size(), ref.size());
    double maxDiff = 0;
    for (size_t i = 0; i < ref.size(); ++i)
        maxDiff = std::max(maxDiff, double(std::abs(f.data[i] - ref[i])));
    qInfo() << "image features max diff" << maxDiff;
    QVERIFY2(maxDiff < 1e-3, qPrintable(QString::number(maxDiff)));
}

void TestEngine::encoderAndLogits_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<int>("task");
    for (int format = 0; format < 2; ++format)
        for (int t = 0; t < 5; ++t)
            QTest::addRow("%s %d", format ? "safetensors" : "bin", t) << format << t;
}

void TestEngine::encoderAndLogits() {
    QFETCH(int, format);
    QFETCH(int, task);
    const TaskRef& t = m_tasks[task];
    QCOMPARE(model(format).tokenizer().encode(t.prompt), t.inputIds);
    Session s(m_models[format]);

    const FloatArray h = s.encoderHidden(m_pixels, t.inputIds);
    const std::string key = "task" + std::to_string(task);
    const std::vector<float> refH = m_ref.toFloat(key + ".encoder_hidden");
    QCOMPARE(h.data.size(), refH.size());
    double maxDiff = 0;
    for (size_t i = 0; i < refH.size(); ++i)
        maxDiff = std::max(maxDiff, double(std::abs(h.data[i] - refH[i])));
    QVERIFY2(maxDiff < 1e-3, qPrintable(QString("encoder max diff %1").arg(maxDiff)));

    // One decoder pass over generated[:-1]; the reference keeps the 16 best logits per step.
    std::vector<int64_t> dec(t.generated.begin(), t.generated.end() - 1);
    const FloatArray logits = s.decoderLogits(m_pixels, t.inputIds, dec);
    const int64_t vocab = logits.shape[1];
    QCOMPARE(logits.shape[0], int64_t(dec.size()));
    const std::vector<int64_t> topIds = m_ref.toInt64(key + ".decoder_top16_ids");
    const std::vector<float> topValues = m_ref.toFloat(key + ".decoder_top16_values");
    double maxLogitDiff = 0;
    for (size_t step = 0; step < dec.size(); ++step)
        for (int k = 0; k < 16; ++k) {
            const float v = logits.data[step * vocab + topIds[step * 16 + k]];
            maxLogitDiff = std::max(maxLogitDiff, double(std::abs(v - topValues[step * 16 + k])));
        }
    QVERIFY2(maxLogitDiff < 1e-3,
             qPrintable(QString("top-16 logits max diff %1").arg(maxLogitDiff)));
}

void TestEngine::fullLogits() {
    // task0's logits are stored whole, as f16: compare within f16's rounding of each value.
    const TaskRef& t = m_tasks[0];
    Session s(m_models[0]);
    std::vector<int64_t> dec(t.generated.begin(), t.generated.end() - 1);
    const FloatArray logits = s.decoderLogits(m_pixels, t.inputIds, dec);
    const std::vector<float> ref = m_ref.toFloat("task0.decoder_logits");
    QCOMPARE(logits.data.size(), ref.size());
    int64_t outside = 0;
    double maxDiff = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double d = std::abs(logits.data[i] - ref[i]);
        maxDiff = std::max(maxDiff, d);
        const double f16Step = std::ldexp(1.0, std::ilogb(std::max(std::abs(ref[i]), 1e-4f)) - 10);
        if (d > 1e-3 + f16Step)
            ++outside;
    }
    qInfo() << "full logits max diff" << maxDiff;
    QCOMPARE(outside, int64_t(0));
}

void TestEngine::greedyGeneration_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<int>("task");
    QTest::addColumn<bool>("cache");
    for (int format = 0; format < 2; ++format)
        for (int t = 0; t < 5; ++t)
            for (bool cache : {true, false})
                QTest::addRow("%s task%d %s", format ? "safetensors" : "bin", t,
                              cache ? "cache" : "no-cache")
                    << format << t << cache;
}

void TestEngine::greedyGeneration() {
    QFETCH(int, format);
    QFETCH(int, task);
    QFETCH(bool, cache);
    const TaskRef& t = m_tasks[task];
    Session s(m_models[format]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = t.prompt;
    GenerationOptions o = model(format).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    o.useCache = cache;
    int events = 0;
    double visionMs = -1;
    o.onToken = [&](const TokenEvent& e) {
        ++events;
        visionMs = e.visionMs;
        return true;
    };
    const Result r = s.generate(req, o);
    QCOMPARE(visionMs, r.timings.visionMs); // stage timings arrive with the tokens
    QCOMPARE(r.promptIds, t.inputIds);
    QCOMPARE(r.generatedIds, t.generated);
    QCOMPARE(r.text, t.text);
    QCOMPARE(events, int(t.generated.size()) - 1);
    QCOMPARE(r.timings.stepMs.size(), t.generated.size() - 1);
    QVERIFY(!r.cancelled);

    // One log-probability per generated token: forced tokens (<s> first, </s> at the limit) are
    // certain, and every other is at least its raw log-softmax (the logits processors only take
    // probability away from other tokens).
    QCOMPARE(r.tokenLogprobs.size(), t.generated.size() - 1);
    QCOMPARE(r.tokenLogprobs.front(), 0.0f);
    if (int(t.generated.size()) - 1 == o.maxNewTokens)
        QCOMPARE(r.tokenLogprobs.back(), 0.0f);
    const std::vector<int64_t> decoderIds(t.generated.begin(), t.generated.end() - 1);
    const FloatArray logits = s.decoderLogits(m_pixels, t.inputIds, decoderIds);
    const int64_t vocab = logits.shape.back();
    for (size_t i = 0; i < r.tokenLogprobs.size(); ++i) {
        const float lp = r.tokenLogprobs[i];
        QVERIFY2(std::isfinite(lp) && lp <= 1e-6f, qPrintable(QString::number(lp)));
        const float* row = logits.data.data() + i * vocab;
        const float top = *std::max_element(row, row + vocab);
        double sum = 0;
        for (int64_t v = 0; v < vocab; ++v)
            sum += std::exp(double(row[v]) - top);
        const double raw = double(row[t.generated[i + 1]]) - top - std::log(sum);
        QVERIFY2(
            lp >= raw - 1e-3,
            qPrintable(QStringLiteral("step %1: %2 < raw %3").arg(i).arg(double(lp)).arg(raw)));
    }
}

void TestEngine::beamCachedMatchesUncached_data() {
    QTest::addColumn<int>("task");
    QTest::addColumn<int>("beams");
    QTest::addColumn<int>("maxNew");
    QTest::newRow("caption 3 beams") << 0 << 3 << 40;
    QTest::newRow("od 3 beams") << 1 << 3 << 40;
    QTest::newRow("grounding 4 beams") << 3 << 4 << 30;
    QTest::newRow("region 2 beams") << 4 << 2 << 30;
}

void TestEngine::beamCachedMatchesUncached() {
    QFETCH(int, task);
    QFETCH(int, beams);
    QFETCH(int, maxNew);
    Session s(m_models[0]);
    Request req;
    req.pixelValues = m_pixels;
    req.prompt = m_tasks[task].prompt;
    GenerationOptions o = model(0).defaultOptions();
    o.numBeams = beams;
    o.maxNewTokens = maxNew;
    o.useCache = true;
    std::string shown;
    o.onToken = [&](const TokenEvent& e) {
        shown = e.rewound ? e.textDelta : shown + e.textDelta;
        return true;
    };
    const Result cached = s.generate(req, o);
    o.onToken = nullptr;
    o.useCache = false;
    const Result full = s.generate(req, o);
    QCOMPARE(cached.generatedIds, full.generatedIds);
    QVERIFY(std::abs(cached.score - full.score) < 1e-3);
    // The returned beam's token log-probabilities: the same with and without the cache, and
    // they add up to its beam score (the sum over its tokens divided by its length to the power
    // of the length penalty, as Hugging Face scores a finished hypothesis).
    QCOMPARE(cached.tokenLogprobs.size(), cached.generatedIds.size() - 1);
    QCOMPARE(full.tokenLogprobs.size(), cached.tokenLogprobs.size());
    double sum = 0;
    for (size_t i = 0; i < cached.tokenLogprobs.size(); ++i) {
        QVERIFY(std::isfinite(cached.tokenLogprobs[i]) && cached.tokenLogprobs[i] <= 1e-6f);
        QVERIFY(std::abs(cached.tokenLogprobs[i] - full.tokenLogprobs[i]) < 1e-4);
        sum += cached.tokenLogprobs[i];
    }
    const double length = double(cached.generatedIds.size()) - 1;
    QVERIFY2(std::abs(sum - cached.score * std::pow(length, o.lengthPenalty)) < 1e-3,
             qPrintable(QStringLiteral("sum %1, score %2").arg(sum).arg(cached.score)));
    QCOMPARE(cached.generatedIds.front(), int64_t(2));
    QCOMPARE(cached.generatedIds[1], int64_t(0)); // forced <s>
    QCOMPARE(cached.generatedIds.back(), int64_t(2));
    QVERIFY(int(cached.generatedIds.size()) <= maxNew + 1);
    // What was streamed adds up to what was returned.
    QCOMPARE(shown, cached.text);
}

void TestEngine::realImageRuns() {
    // pier.png preprocessed in C++ gives the same tokens as the reference pixel values (the
    // resize matches PIL's to the bit), through the public request path.
    Session s(m_models[1]);
    Request req;
    req.image = std::make_shared<const RgbImage>(loadImage(FLORENCE_SAMPLES_DIR "/pier.png"));
    req.prompt =
        buildPrompt({"<OCR_WITH_REGION>", "", std::nullopt}, req.image->width, req.image->height);
    GenerationOptions o = model(1).defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    const Result r = s.generate(req, o);
    QCOMPARE(r.generatedIds, m_tasks[2].generated);
    QVERIFY(r.timings.preprocessMs > 0);
    QVERIFY(r.timings.totalMs >= r.timings.decodeMs);
}

void TestEngine::int8FixtureTokens() {
    // The reference fixture's greedy tokens in int8 mode (decoder int8; encoders bfloat16, its
    // layers all below the 512 that oneDNN's int8 encoders need, or float32 with the own int8
    // GEMM's products where both sides reach 128): the cached step (the VNNI kernel,
    // four rows at most) and the uncached path (every row of the prefix at once) give the same
    // tokens, and every token that differs from the reference is listed (the README lists them
    // too).
    LoadOptions lo;
    lo.precision = Precision::Int8;
    const auto int8 = Model::load((m_tmp.path() + "/pkg-st").toStdString(), lo);
    Session s(int8);
    GenerationOptions o = int8->defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    int same = 0, total = 0;
    for (const TaskRef& t : m_tasks) {
        Request req;
        req.pixelValues = m_pixels;
        req.prompt = t.prompt;
        o.useCache = true;
        const Result cached = s.generate(req, o);
        o.useCache = false;
        QCOMPARE(s.generate(req, o).generatedIds, cached.generatedIds);
        const size_t n = std::min(cached.generatedIds.size(), t.generated.size());
        size_t first = n;
        for (size_t i = 0; i < n && first == n; ++i)
            if (cached.generatedIds[i] != t.generated[i])
                first = i;
        total += int(t.generated.size());
        same += int(first);
        if (first < n || cached.generatedIds.size() != t.generated.size())
            qInfo("int8 %s: first difference at token %d of %d: '%s' (float32 '%s')",
                  qPrintable(t.token), int(first), int(t.generated.size()), cached.text.c_str(),
                  t.text.c_str());
    }
    qInfo("int8: %d of %d reference tokens before the first difference", same, total);
}

void TestEngine::sharedEmbedding_data() {
    QTest::addColumn<int>("precision");
    QTest::newRow("float32") << int(Precision::Float32);
    QTest::newRow("bfloat16") << int(Precision::BFloat16);
    // The LM head gets an int8 copy of the shared embedding; the embedding stays float32.
    QTest::newRow("int8") << int(Precision::Int8);
}

void TestEngine::sharedEmbedding() {
    // The fixture's token embedding is one matrix (encoder, decoder, LM head): the package stores
    // it once, in decoder.pt, and the engine gives the text encoder the decoder's tensor. The
    // same package written the old way (format 1, an embedding in each file) must still load
    // and give the same tokens, from one more copy of the embedding in memory.
    QFETCH(int, precision);
    const QString shared = m_tmp.path() + "/pkg-st";
    const QString separate = m_tmp.path() + "/pkg-st-separate";
    if (!QFile::exists(separate + "/manifest.json")) {
        QProcess p;
        // The operators the package's modules call, from this build (not another build/).
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("FLORENCE_OPS_LIBRARY", QString::fromUtf8(florence_ops_library_path()));
        p.setProcessEnvironment(env);
        p.start(FLORENCE_PYTHON,
                {FLORENCE_SOURCE_DIR "/tests/engine/unshare_package.py", shared, separate});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    }
    LoadOptions options;
    options.precision = static_cast<Precision>(precision);
    const auto one = Model::load(shared.toStdString(), options);
    const auto two = Model::load(separate.toStdString(), options);
    QCOMPARE(one->manifest().formatVersion, 2);
    QCOMPARE(one->manifest().sharedParameters.size(), size_t(1));
    QCOMPARE(one->manifest().sharedParameters[0].name, std::string("encoder.embed_tokens.weight"));
    QCOMPARE(two->manifest().formatVersion, 1);
    QVERIFY(two->manifest().sharedParameters.empty());

    const Manifest& m = one->manifest();
    const int64_t embeddingBytes = int64_t(m.vocabSize) * m.dModel * 4; // float32 in memory
    QCOMPARE(two->weightBytes() - one->weightBytes(), embeddingBytes);
    const qint64 fileSaving = QFileInfo(separate + "/text_encoder.pt").size() -
                              QFileInfo(shared + "/text_encoder.pt").size();
    // The embedding's bytes, give or take the archive's per-record headers and 64-byte
    // alignment padding (which depend on where the files were written: 64 bytes short in one
    // checkout, over in another).
    QVERIFY2(fileSaving >= embeddingBytes - 4096,
             qPrintable(QStringLiteral("%1 of %2").arg(fileSaving).arg(embeddingBytes)));

    Session a(one), b(two);
    GenerationOptions o = one->defaultOptions();
    o.numBeams = 1;
    o.maxNewTokens = 24;
    for (const TaskRef& t : m_tasks) {
        Request req;
        req.pixelValues = m_pixels;
        req.prompt = t.prompt;
        const Result ra = a.generate(req, o);
        QCOMPARE(ra.generatedIds, b.generate(req, o).generatedIds);
        if (options.precision == Precision::Float32)
            QCOMPARE(ra.generatedIds, t.generated);
    }
}

QTEST_GUILESS_MAIN(TestEngine)
