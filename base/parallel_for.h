#pragma once
// Plain threads for CPU work of the tuner's own (the search), not for kernels: a process that
// forks workers must not keep a pool alive, so these threads start and end in each call.
#include <functional>

namespace tessel {

/// Calls body(i) for every i in [0, count) on up to `threads` threads (0: one per core), each
/// taking the next index; returns once all are done. body must not throw.
void parallel_for_each(int count, int threads, const std::function<void(int)> &body);

}  // namespace tessel
