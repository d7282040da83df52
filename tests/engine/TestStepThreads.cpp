// The threads that split a decoding step's loops (engine/ops/StepThreads.h): every chunk runs
// exactly once whatever the thread count, calls from several threads at once and from inside a
// chunk each get their whole range, one thread runs everything on the caller, the helpers do
// take part (the point of them: florence::linear_rows on both cores), and helpers that keep the
// caller waiting are left out for a while, a short while when it happens once. Reading the next
// product's weights ahead: which weights followed which, and that it changes no result and
// survives weights freed since.
#include "StepThreads.h"

#include <ATen/Parallel.h>

#include <QtTest>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using florence::ops::splitOverCores;

namespace {

// Runs splitOverCores over [0, n) and counts how often each index was visited.
std::vector<int> visits(int64_t n, int64_t chunk) {
    std::vector<std::atomic<int>> counts(static_cast<size_t>(n));
    splitOverCores(n, chunk, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            counts[static_cast<size_t>(i)].fetch_add(1);
    });
    std::vector<int> out;
    for (const auto& c : counts)
        out.push_back(c.load());
    return out;
}

// Enough quick calls to end a back-off left by an earlier test (at most kMaxAloneCalls in
// StepThreads.cpp), to start a fresh window of calls and to make the next back-off a short one
// again (kCalmCalls).
void drainBackOff() {
    for (int i = 0; i < 6000; ++i)
        splitOverCores(2, 1, [](int64_t, int64_t) {});
}

bool allOnce(const std::vector<int>& v) {
    return std::all_of(v.begin(), v.end(), [](int c) { return c == 1; });
}

} // namespace

class TestStepThreads : public QObject {
    Q_OBJECT

private slots:
    void cleanup() { at::set_num_threads(saved_); }
    void everyChunkOnce_data();
    void everyChunkOnce();
    void concurrentCallers();
    void nestedCall();
    void oneThreadRunsOnTheCaller();
    void helpersTakePart();
    void backsOffWhenHelpersStall();
    void helpersReturnSoonAfterOneBackOff();
    void productSequenceRemembersWhatFollowed();
    void readingAheadChangesNothing();

private:
    int saved_ = at::get_num_threads();
};

void TestStepThreads::everyChunkOnce_data() {
    QTest::addColumn<int>("threads");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("chunk");
    for (int threads : {1, 2, 4})
        for (auto [n, chunk] : {std::pair{1, 1}, {7, 3}, {64, 1}, {1000, 7}, {100000, 999}, {5, 100}})
            QTest::addRow("%d threads, %d in chunks of %d", threads, n, chunk) << threads << n << chunk;
}

void TestStepThreads::everyChunkOnce() {
    QFETCH(int, threads);
    QFETCH(int, n);
    QFETCH(int, chunk);
    at::set_num_threads(threads);
    for (int repeat = 0; repeat < 50; ++repeat) // back-to-back calls, as in a step
        QVERIFY(allOnce(visits(n, chunk)));
    QVERIFY(visits(0, 4).empty());
}

void TestStepThreads::concurrentCallers() {
    // The engine runs one request at a time, but the exporter, tests or a second model may call
    // from other threads: a call that finds the helpers busy runs alone, and every call still
    // covers its range exactly once.
    at::set_num_threads(2);
    std::atomic<int> bad{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t)
        callers.emplace_back([&] {
            for (int repeat = 0; repeat < 200; ++repeat)
                if (!allOnce(visits(513, 8)))
                    bad.fetch_add(1);
        });
    for (auto& c : callers)
        c.join();
    QCOMPARE(bad.load(), 0);
}

void TestStepThreads::nestedCall() {
    at::set_num_threads(2);
    std::atomic<int64_t> inner{0};
    splitOverCores(16, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            splitOverCores(10, 2, [&](int64_t b, int64_t e) { inner.fetch_add(e - b); });
    });
    QCOMPARE(inner.load(), int64_t(160));
}

void TestStepThreads::oneThreadRunsOnTheCaller() {
    at::set_num_threads(1);
    const auto caller = std::this_thread::get_id();
    bool elsewhere = false;
    splitOverCores(100, 1, [&](int64_t, int64_t) {
        if (std::this_thread::get_id() != caller)
            elsewhere = true;
    });
    QVERIFY(!elsewhere);
}

void TestStepThreads::helpersTakePart() {
    // Chunks that take a while (sleeping, so this holds on a loaded machine too): with two
    // threads some of them run on the helper. Tried a few times, as a helper may be slow to wake.
    at::set_num_threads(2);
    drainBackOff();
    const auto caller = std::this_thread::get_id();
    bool helped = false;
    for (int attempt = 0; attempt < 20 && !helped; ++attempt) {
        std::mutex m;
        std::set<std::thread::id> ran;
        splitOverCores(32, 1, [&](int64_t, int64_t) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            std::lock_guard<std::mutex> lock(m);
            ran.insert(std::this_thread::get_id());
        });
        helped = ran.size() > 1 || (ran.size() == 1 && *ran.begin() != caller);
    }
    QVERIFY2(helped, "no chunk ran on a helper thread in 20 calls of 32 chunks");
}

namespace {

// Four calls in which a helper keeps the caller waiting (a chunk that ends 2 ms after the
// caller's whenever a helper runs it, as when another program preempts it); returns how many
// stalled (4, unless a helper never took part in 200 calls).
int stallFourTimes() {
    const auto caller = std::this_thread::get_id();
    int stalled = 0;
    for (int attempt = 0; attempt < 200 && stalled < 4; ++attempt) {
        std::atomic<bool> helped{false}, callerDone{false};
        // The caller's chunk takes 1 ms, so the helper has time to take the other one; the
        // helper's ends 2 ms after the caller's, so the caller waits for it.
        splitOverCores(2, 1, [&](int64_t, int64_t) {
            if (std::this_thread::get_id() == caller) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
                callerDone = true;
                return;
            }
            helped = true;
            while (!callerDone)
                std::this_thread::yield();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        });
        stalled += helped.load();
    }
    return stalled;
}

} // namespace

void TestStepThreads::backsOffWhenHelpersStall() {
    // Four stalls make the following calls run on the caller alone.
    at::set_num_threads(2);
    drainBackOff();
    const auto caller = std::this_thread::get_id();
    QCOMPARE(stallFourTimes(), 4);
    bool elsewhere = false;
    splitOverCores(64, 1, [&](int64_t, int64_t) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (std::this_thread::get_id() != caller)
            elsewhere = true;
    });
    QVERIFY2(!elsewhere, "a helper took part right after four stalls");
}

void TestStepThreads::helpersReturnSoonAfterOneBackOff() {
    // One burst of stalls on an otherwise quiet machine (a virtual CPU descheduled for a moment)
    // leaves the helpers out for a few decoding steps, not for dozens: within a few hundred calls
    // (a step makes about 80) they take part again. Counted in calls of 32 chunks of 50 us, so
    // a helper has time to wake and take one; 4000 calls would not be enough for the longest
    // back-off, which a machine this busy would have earned.
    at::set_num_threads(2);
    drainBackOff();
    const auto caller = std::this_thread::get_id();
    QCOMPARE(stallFourTimes(), 4);
    int calls = 0;
    bool helped = false;
    for (; calls < 4000 && !helped; ++calls) {
        std::atomic<bool> elsewhere{false};
        splitOverCores(32, 1, [&](int64_t, int64_t) {
            std::this_thread::sleep_for(std::chrono::microseconds(50));
            if (std::this_thread::get_id() != caller)
                elsewhere = true;
        });
        helped = elsewhere.load();
    }
    QVERIFY2(helped, "no helper took part in 4000 calls after one back-off");
    qInfo("helpers took part again after %d calls", calls);
}

void TestStepThreads::productSequenceRemembersWhatFollowed() {
    using florence::ops::ProductSequence;
    const char weights[4][64] = {};
    const char *a = weights[0], *b = weights[1], *c = weights[2], *d = weights[3];
    ProductSequence sequence;
    // The first step teaches, the second is read ahead.
    QCOMPARE(sequence.after(a, 10).bytes, size_t(0));
    QCOMPARE(sequence.after(b, 20).bytes, size_t(0));
    QCOMPARE(sequence.after(c, 30).bytes, size_t(0));
    ProductSequence::Range next = sequence.after(a, 10);
    QCOMPARE(next.begin, b);
    QCOMPARE(next.bytes, size_t(20));
    next = sequence.after(b, 20);
    QCOMPARE(next.begin, c);
    QCOMPARE(next.bytes, size_t(30));
    // Another product after b (another task's path, a model loaded again): the latest counts.
    sequence.after(d, 40);
    QCOMPARE(sequence.after(b, 20).begin, d);
    // The same weights twice in a row (a batch cut in two) do not point at themselves.
    sequence.after(b, 20);
    QCOMPARE(sequence.after(b, 20).begin, d);
    // What came after c is known, and after the last step a followed c.
    QCOMPARE(sequence.after(c, 30).begin, a);
}

void TestStepThreads::readingAheadChangesNothing() {
    // Steps of "products" over weights that are then freed: the helpers, reading ahead between
    // the calls, must neither change a result nor touch freed memory in a way that faults (they
    // prefetch, which never does).
    at::set_num_threads(2);
    drainBackOff();
    for (int round = 0; round < 3; ++round) {
        std::vector<std::vector<float>> weights;
        for (size_t bytes : {size_t(64) << 10, size_t(8) << 20, size_t(1) << 20})
            weights.emplace_back(bytes / sizeof(float), 1.0f);
        for (int step = 0; step < 20; ++step)
            for (const auto& w : weights) {
                QVERIFY(allOnce(visits(257, 3)));
                florence::ops::readNextWhileIdle(w.data(), w.size() * sizeof(float));
            }
        // Freed (and with 8 MB, given back to the system) while the helpers may still read
        // ahead the first weights of the next step.
    }
    QVERIFY(allOnce(visits(1000, 7)));
}

QTEST_GUILESS_MAIN(TestStepThreads)
#include "TestStepThreads.moc"
