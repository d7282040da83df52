// ops::InterruptScope and ops::throwIfInterrupted (Ops.h).
#include "Ops.h"

#include <stdexcept>

namespace florence::ops {

namespace {

// The flag of the innermost InterruptScope on this thread. The interpreter runs a module's
// operators on the thread that called forward() (the exporter's code uses no torch.jit.fork,
// whose tasks would run elsewhere and not stop), so the scope reaches every operator of a pass.
thread_local const std::atomic<bool>* t_interrupt = nullptr;

} // namespace

InterruptScope::InterruptScope(const std::atomic<bool>* flag) : m_previous(t_interrupt) {
    t_interrupt = flag;
}

InterruptScope::~InterruptScope() { t_interrupt = m_previous; }

void throwIfInterrupted() {
    if (t_interrupt && t_interrupt->load(std::memory_order_relaxed))
        throw std::runtime_error("interrupted: the pass was cancelled");
}

} // namespace florence::ops
