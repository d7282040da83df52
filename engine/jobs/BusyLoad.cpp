#include "jobs/BusyLoad.h"

#include <cstdint>

namespace florence::detail {

namespace {

// Integer arithmetic the compiler cannot drop: the result is published once at the end.
std::atomic<uint64_t> g_sink{0};

void spin(const std::atomic<bool>& stop) {
    uint64_t x = 88172645463325252ull;
    while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 4096; ++i) { // xorshift: a few cycles an iteration, no memory
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
    }
    g_sink.fetch_add(x, std::memory_order_relaxed);
}

} // namespace

BusyLoad::BusyLoad(int threads) {
    for (int i = 0; i < threads; ++i)
        m_threads.emplace_back(spin, std::cref(m_stop));
}

BusyLoad::~BusyLoad() {
    m_stop.store(true);
    for (std::thread& t : m_threads)
        t.join();
}

} // namespace florence::detail
