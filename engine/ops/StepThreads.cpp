#include "StepThreads.h"

#include <ATen/Parallel.h>

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace florence::ops {

namespace {

thread_local bool isHelper = false;

// One call's work. Shared with the helpers through a shared_ptr, so a helper that wakes after
// the call returned still reads a live counter (and finds nothing left); fn is the caller's and
// is only called for chunks taken before the call returns.
struct Job {
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int64_t n = 0;
    int64_t chunk = 1;
    int64_t count = 0;               // chunks
    std::atomic<int64_t> next{0};    // the next chunk to take
    std::atomic<int64_t> done{0};    // chunks finished
    std::atomic<int> helperSlots{0}; // helpers that may still join (threads asked for - 1)

    // Takes and runs chunks until none is left.
    void work() {
        for (;;) {
            const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
            if (c >= count)
                return;
            const int64_t begin = c * chunk;
            (*fn)(begin, std::min(n, begin + chunk));
            done.fetch_add(1, std::memory_order_release);
        }
    }
};

class Helpers {
public:
    static Helpers& instance() {
        // Never destroyed: helpers may still be spinning when static destructors run at exit.
        static Helpers* helpers = new Helpers;
        return *helpers;
    }

    void run(int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& fn) {
        const int threads = at::get_num_threads();
        const int64_t count = (n + chunk - 1) / chunk;
        std::unique_lock<std::mutex> call(callMutex_, std::try_to_lock);
        if (count <= 1 || threads <= 1 || isHelper || !call.owns_lock() || alone()) {
            fn(0, n);
            return;
        }
        start(threads - 1);
        auto job = std::make_shared<Job>();
        job->fn = &fn;
        job->n = n;
        job->chunk = chunk;
        job->count = count;
        job->helperSlots.store(threads - 1, std::memory_order_relaxed);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_ = job;
            generation_.fetch_add(1, std::memory_order_seq_cst);
        }
        if (sleepers_.load(std::memory_order_seq_cst) > 0)
            wake_.notify_all();
        job->work();
        // Only chunks a helper has already started are left: wait for them, giving the core
        // away now and then in case that helper shares it with us.
        if (job->done.load(std::memory_order_acquire) < count) {
            const auto waitStart = std::chrono::steady_clock::now();
            for (int spins = 1; job->done.load(std::memory_order_acquire) < count; ++spins) {
                _mm_pause();
                if (spins % 1024 == 0)
                    std::this_thread::yield();
            }
            noteWait(std::chrono::steady_clock::now() - waitStart);
        }
    }

    // What the helpers read ahead while they wait (readNextWhileIdle). A helper reading the pair
    // while it changes may get the old end with the new start: prefetchSome skips a range longer
    // than any set (and prefetching never faults).
    void setIdleRange(const char* begin, const char* end) {
        idleEnd_.store(nullptr, std::memory_order_relaxed);
        idleBegin_.store(begin, std::memory_order_relaxed);
        idleEnd_.store(end, std::memory_order_release);
    }

private:
    void start(int helpers) {
        while (static_cast<int>(started_) < helpers) {
            std::thread(&Helpers::loop, this).detach();
            ++started_;
        }
    }

    void loop() {
        isHelper = true;
        uint64_t seen = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            seen = generation_.load();
        }
        const auto spinFor = std::chrono::microseconds(kSpinMicroseconds);
        for (;;) {
            waitForWork(seen, spinFor);
            std::shared_ptr<Job> job;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                job = job_;
                seen = generation_.load();
            }
            if (job && job->helperSlots.fetch_sub(1, std::memory_order_relaxed) > 0)
                job->work();
        }
    }

    void waitForWork(uint64_t seen, std::chrono::microseconds spinFor) {
        const auto start = std::chrono::steady_clock::now();
        for (int spins = 1; generation_.load(std::memory_order_acquire) == seen; ++spins) {
            if (!prefetchSome())
                _mm_pause();
            if (spins % 64 == 0 && std::chrono::steady_clock::now() - start > spinFor) {
                std::unique_lock<std::mutex> lock(mutex_);
                sleepers_.fetch_add(1, std::memory_order_seq_cst);
                wake_.wait(lock, [&] { return generation_.load() != seen; });
                sleepers_.fetch_sub(1, std::memory_order_relaxed);
                return;
            }
        }
    }

    // Backing off when the cores are taken: a helper that another program's thread preempts in
    // the middle of a chunk keeps the caller waiting for a scheduler slice (milliseconds, where
    // a chunk takes tens of microseconds). After kStallsToBackOff such waits, each within
    // kWindow calls of the one before, the next calls run on the caller alone, as they would on
    // one thread; then the helpers are tried again. The first back-off is short
    // (kMinAloneCalls, about three decoding steps), so a quiet machine's rare hiccup (a virtual
    // CPU descheduled for a moment) costs little; each one that follows within kCalmCalls calls
    // of the last doubles it up to kMaxAloneCalls (a few dozen steps), so a busy neighbour is
    // not retried every few steps. Under callMutex_.
    static constexpr auto kStall = std::chrono::microseconds(300);
    static constexpr int kWindow = 64;
    static constexpr int kStallsToBackOff = 4;
    static constexpr int kMinAloneCalls = 256;
    static constexpr int kMaxAloneCalls = 4096;
    static constexpr int kCalmCalls = 1024;
    int callsSinceStall_ = 0;
    int stalls_ = 0;
    int aloneLeft_ = 0;
    int nextAloneCalls_ = kMinAloneCalls;

    bool alone() {
        if (aloneLeft_ > 0) {
            --aloneLeft_;
            return true;
        }
        if (++callsSinceStall_ > kWindow)
            stalls_ = 0;
        if (callsSinceStall_ > kCalmCalls)
            nextAloneCalls_ = kMinAloneCalls;
        return false;
    }

    void noteWait(std::chrono::steady_clock::duration waited) {
        if (waited < kStall)
            return;
        callsSinceStall_ = 0;
        if (++stalls_ < kStallsToBackOff)
            return;
        aloneLeft_ = nextAloneCalls_;
        nextAloneCalls_ = std::min(2 * nextAloneCalls_, kMaxAloneCalls);
        stalls_ = 0;
    }

    // Prefetches the next kIdleBlock bytes of the idle range, if any is left; false when none.
    static constexpr size_t kIdleBlock = 1024;
    bool prefetchSome() {
        const char* end = idleEnd_.load(std::memory_order_acquire);
        const char* p = idleBegin_.load(std::memory_order_relaxed);
        const auto at = reinterpret_cast<uintptr_t>(p), stopAt = reinterpret_cast<uintptr_t>(end);
        if (!end || !p || at >= stopAt || stopAt - at > kReadAheadBytes)
            return false;
        const char* stop = std::min(end, p + kIdleBlock);
        if (!idleBegin_.compare_exchange_strong(p, stop, std::memory_order_relaxed))
            return true;
        for (; p < stop; p += 64)
            _mm_prefetch(p, _MM_HINT_T0);
        return true;
    }

    std::atomic<const char*> idleBegin_{nullptr};
    std::atomic<const char*> idleEnd_{nullptr};

    std::mutex callMutex_; // one call at a time; a concurrent call runs alone
    std::mutex mutex_;     // job_, and the sleep/wake handshake
    std::condition_variable wake_;
    std::shared_ptr<Job> job_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> sleepers_{0};
    int started_ = 0; // under callMutex_
};

} // namespace

void readNextWhileIdle(const void* weights, size_t bytes) {
    static const bool off = [] {
        const char* choice = std::getenv("FLORENCE_READ_AHEAD");
        return choice && std::string(choice) == "0";
    }();
    if (off || isHelper)
        return;
    thread_local ProductSequence sequence;
    const ProductSequence::Range next = sequence.after(weights, bytes);
    if (next.bytes > 0)
        Helpers::instance().setIdleRange(next.begin,
                                         next.begin + std::min(next.bytes, kReadAheadBytes));
}

ProductSequence::Range ProductSequence::after(const void* weights, size_t bytes) {
    if (last_ && last_ != weights) {
        if (next_.size() >= kMaxRemembered)
            next_.clear();
        next_[last_] = {static_cast<const char*>(weights), bytes};
    }
    last_ = weights;
    const auto it = next_.find(weights);
    return it == next_.end() ? Range{} : it->second;
}

void splitOverCores(int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0)
        return;
    Helpers::instance().run(n, std::max<int64_t>(1, chunk), fn);
}

} // namespace florence::ops
