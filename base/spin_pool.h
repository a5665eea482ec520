#pragma once
// The deploy runtime's thread pool for Halide's parallel loops (installed in every kernels.so
// with halide_set_custom_do_par_for). Halide's own pool parks its workers on a futex as soon
// as a loop has no work left, so each of a model's parallel loops (dozens per run) pays a
// wake-up; on virtual machines that costs tens of microseconds per loop. These workers spin
// for a while after each loop before they sleep, so back-to-back kernels find them awake, and
// each thread starts on the same contiguous share of every loop (see spin_pool.cpp).
#include <sched.h>
#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace tessel {

/// Halide's task and do_par_for signatures (HalideRuntime.h), repeated so that this header
/// needs no Halide include.
using HalideTask = int (*)(void *user_context, int task_number, uint8_t *closure);

/// Sets the number of threads running a loop, the caller included (>= 1). Waits for a loop in
/// flight to finish. The pool is process-wide, like Halide's.
void spin_pool_set_threads(int threads);
/// Threads the pool runs a loop on, the caller included.
int spin_pool_threads();
/// Runs task(min .. min + extent - 1) on the pool; the first non-zero result is returned
/// (every task still runs). A loop started inside a task, or while another thread's loop
/// holds the pool, runs serially on the calling thread.
int spin_pool_par_for(void *user_context, HalideTask task, int min, int extent, uint8_t *closure);

/// While alive, loops started by the calling thread run serially on it: for kernels too
/// small to gain from a second thread (they lose more to the cross-core traffic of reading
/// and writing data the other CPU's cache holds than they gain).
class SpinPoolSerialScope {
 public:
  explicit SpinPoolSerialScope(bool serial = true);
  ~SpinPoolSerialScope();
  SpinPoolSerialScope(const SpinPoolSerialScope &) = delete;
  SpinPoolSerialScope &operator=(const SpinPoolSerialScope &) = delete;

 private:
  bool previous_;
};

/// Whether the pool's threads are pinned, one per CPU of the process's affinity mask: worker
/// i to the mask's (i+1)-th CPU, and a thread inside a SpinPoolCallerPin to its first. On by
/// default. Left to the OS, the two threads of a 2-CPU process often shared one CPU for the
/// process's whole life while the other idled: MobileNet-V2 runs of 2.8-6.4 ms, against
/// 2.4-3.2 ms pinned, in alternating batches of fresh processes on a busy host. ONNX Runtime
/// sets affinity for its intra-op threads only when their count is left at its default, never
/// for the calling thread. With fewer CPUs than threads, nothing is pinned.
void spin_pool_set_pinning(bool pin);
bool spin_pool_pinning();

/// The CPUs in an affinity mask, ascending: `who` as sched_getaffinity takes it (0: the
/// calling thread; getpid(): the process's main thread). Empty when it cannot be read.
std::vector<int> allowed_cpus(pid_t who);
/// Restricts the calling thread to `cpu`; false when the OS refused.
bool pin_current_thread(int cpu);

/// While alive, pins the calling thread to the CPU the pool keeps for its callers (when
/// pinning is on, and no other thread holds that CPU: concurrent Modules are not crowded
/// onto one CPU), and then restores the thread's own affinity. Module::run holds one.
class SpinPoolCallerPin {
 public:
  SpinPoolCallerPin();
  ~SpinPoolCallerPin();
  SpinPoolCallerPin(const SpinPoolCallerPin &) = delete;
  SpinPoolCallerPin &operator=(const SpinPoolCallerPin &) = delete;

 private:
  bool owner_ = false;    // holds the callers' CPU
  bool restore_ = false;  // changed this thread's affinity
  cpu_set_t saved_;
};

}  // namespace tessel
