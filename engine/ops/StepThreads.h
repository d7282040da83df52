#pragma once
// The threads that split a decoding step's short loops (florence::linear_rows' output columns,
// florence::attend_one's heads) over the cores, without OpenMP.
//
//     florence::ops::splitOverCores(columns, chunk, [&](int64_t begin, int64_t end) { ... });
//
// Why not at::parallel_for: a cached step is ~80 loops of 20-1500 us each. With OpenMP's threads
// sleeping between loops (OMP_WAIT_POLICY=PASSIVE, which the programs set so that a busy
// neighbour does not collapse them) every loop pays a futex wake-up and a barrier, and the
// step ran no faster on two threads than on one; spinning threads (ACTIVE) make it faster when
// the machine is quiet and 4-6x slower beside one busy process. Here:
// - the work is cut into chunks taken one at a time from a shared counter by the calling thread
//   and the helpers, so a helper the kernel has not scheduled yet takes nothing and the caller
//   does its part: the caller waits only for a chunk a helper has already started;
// - helpers spin for a short while (kSpinMicroseconds) after each loop, which covers the gap to
//   the next loop of the same step, then sleep on a condition variable until there is work.
// - when the caller keeps waiting for helpers that other programs preempt (a busy desktop), the
//   calls run on the caller alone for a while, then the helpers are tried again.
// The helpers are at::get_num_threads() - 1 threads, started on first use; a call from a helper,
// or while another thread's call is running, runs in the caller alone.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>

namespace florence::ops {

// How long an idle helper spins before it sleeps.
constexpr int kSpinMicroseconds = 200;

// Runs fn over [0, n) in chunks of `chunk` (the last may be shorter), each exactly once, split
// between the calling thread and the helpers; returns when all have run. fn must not throw.
void splitOverCores(int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& fn);

// A decoding step runs the same products in the same order every time, and between two of them
// the calling thread does work of its own (attention, norms, GELU, the interpreter) while the
// memory is idle. After each product, name the weights it read (where they start, and their
// size): each product's weights remember the weights of the product that followed it last time,
// and the helpers, while they wait for the next loop, bring the first kReadAheadBytes of those
// into the cache (prefetch instructions, which never fault: weights freed since cost bandwidth,
// nothing else). They stop as soon as work arrives. FLORENCE_READ_AHEAD=0 turns it off, to
// measure what it gives.
constexpr size_t kReadAheadBytes = size_t(4) << 20;
void readNextWhileIdle(const void* weights, size_t bytes);

// readNextWhileIdle's memory of which weights followed which (one per calling thread).
class ProductSequence {
public:
    struct Range {
        const char* begin = nullptr;
        size_t bytes = 0;
    };
    // Notes that `weights` (`bytes` long) ran after the product named before, and returns what
    // ran after `weights` last time (nothing the first time round).
    Range after(const void* weights, size_t bytes);

private:
    static constexpr size_t kMaxRemembered = 4096; // then forgotten: models loaded many times
    std::unordered_map<const void*, Range> next_;
    const void* last_ = nullptr;
};

} // namespace florence::ops
