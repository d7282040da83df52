// CPU-bound background threads for the benchmark job's BenchParams::busy (`bench --busy N`):
// the load of other programs on a desktop, reproducibly. Each thread spins on arithmetic (no
// memory traffic to speak of) until the object is destroyed, so the measurement sees N cores'
// worth of competition and nothing else. Internal to the engine.
//
//   detail::BusyLoad busy(1);   // one busy thread while `busy` lives
#pragma once

#include <atomic>
#include <thread>
#include <vector>

namespace florence::detail {

class BusyLoad {
public:
    explicit BusyLoad(int threads);
    ~BusyLoad();
    BusyLoad(const BusyLoad&) = delete;
    BusyLoad& operator=(const BusyLoad&) = delete;

    int threads() const { return static_cast<int>(m_threads.size()); }

private:
    std::atomic<bool> m_stop{false};
    std::vector<std::thread> m_threads;
};

} // namespace florence::detail
