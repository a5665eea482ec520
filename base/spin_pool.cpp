#include "base/spin_pool.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tessel {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/// Polls between two yields of a spinning thread whose pool is not pinned. When the OS has
/// put two of the pool's threads on one CPU (a busy host, or a process confined to fewer CPUs
/// than threads), a thread that only spins holds that CPU for its whole time slice while the
/// thread it waits for cannot run. Measured, MobileNet-V2 with 2 threads confined to one CPU:
/// 7.98 ms per run spinning, against 4.71 ms with 1 thread.
constexpr int kPollsPerYield = 64;
/// The same for a pool pinned one thread per CPU, where the thread waited for runs on another
/// CPU: a yield only lets other processes in now and then. A yield is a system call, 1.3 us
/// on a paravirtualized host (against 20 ns for a pause), during which the thread does not
/// see the loop it waits for start or end: yielding every 64 polls there, about half of every
/// wait was spent in the kernel. Measured with tuned artifacts of the zoo, 4 alternating
/// processes each, 2 threads: MobileNet-V2 0.831 -> 0.796 ms, MobileNet-V3-small 0.360 ->
/// 0.343, SqueezeNet 0.753 -> 0.743, ResNet-18 and the transformer encoder level.
constexpr int kPinnedPollsPerYield = 4096;

/// One poll of a wait loop: a pause, and every `polls_per_yield`-th time a yield.
inline void wait_a_little(int &polls, int polls_per_yield) {
  cpu_relax();
  if (++polls % polls_per_yield == 0) std::this_thread::yield();
}

/// How long an idle worker keeps polling for the next loop before it sleeps: longer than the
/// gap between two kernels of a model, short enough that an idle process soon stops burning
/// a core.
constexpr auto kSpinTime = std::chrono::microseconds(300);

thread_local bool t_inside_task = false;
thread_local bool t_serial = false;  // inside a SpinPoolSerialScope

/// One loop at a time, split into one contiguous block of iterations per thread (the caller
/// is thread 0): consecutive kernels split alike, so a thread mostly reads what it wrote in
/// the previous kernel, from its own core's L2 (measured against iterations handed out first
/// come, first served, 2 threads: MobileNet-V2 3.48 -> 3.21 ms, ResNet-18 11.58 -> 11.18 ms). A thread done with its block
/// claims from the others', so a slow thread does not hold the loop up. Each block's claim
/// is generation << 32 | next index: a thread still holding an old generation can never
/// claim from a newer loop, and the loop's fields are only rewritten after every claimed
/// iteration reported done.
class SpinPool {
 public:
  ~SpinPool() { stop_workers(); }

  void set_threads(int threads) { configure(threads, pin_); }
  void set_pinning(bool pin) { configure(-1, pin); }
  bool pinning() {
    std::lock_guard<std::mutex> submit(submit_mutex_);
    return pin_;
  }
  /// The CPU for threads running loops from outside the pool, or -1 when not pinning. Read
  /// on every Module::run: an atomic, not the submit mutex another thread's loop may hold.
  int caller_cpu() const { return caller_cpu_.load(std::memory_order_relaxed); }

  int threads() {
    std::lock_guard<std::mutex> submit(submit_mutex_);
    return static_cast<int>(blocks_.size());
  }

  int par_for(void *user_context, HalideTask task, int min, int extent, uint8_t *closure) {
    if (extent <= 0) return 0;
    std::unique_lock<std::mutex> submit(submit_mutex_, std::try_to_lock);
    if (t_inside_task || t_serial || !submit.owns_lock() || workers_.empty() || extent == 1) {
      int error = 0;
      for (int i = 0; i < extent; ++i) {
        const int r = task(user_context, min + i, closure);
        if (r != 0 && error == 0) error = r;
      }
      return error;
    }
    // First every block gets the new generation with no claimable index, so that a thread
    // still looking at the last loop's exhausted claims cannot win one once extent_ grows;
    // then the loop; then the blocks' first indices; then the generation the workers watch.
    const uint64_t generation = generation_.load() + 1;
    for (Block &b : blocks_) b.claim.store(generation << 32 | kNoIndex);
    task_ = task;
    user_context_ = user_context;
    closure_ = closure;
    min_ = min;
    extent_.store(static_cast<uint32_t>(extent));
    done_.store(0);
    error_.store(0);
    for (size_t q = 0; q < blocks_.size(); ++q) blocks_[q].claim.store(generation << 32 | block_begin(q, extent));
    generation_.store(generation);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      wake_.notify_all();
    }
    run_blocks(generation, 0);
    int polls = 0;
    while (done_.load(std::memory_order_acquire) < static_cast<uint32_t>(extent)) wait_a_little(polls, polls_per_yield_);
    return error_.load();
  }

 private:
  /// threads < 0 keeps the count.
  void configure(int threads, bool pin) {
    std::lock_guard<std::mutex> submit(submit_mutex_);
    const size_t participants = threads < 0 ? blocks_.size() : static_cast<size_t>(std::max(threads, 1));
    if (participants == blocks_.size() && pin == pin_ && !workers_.empty() == (participants > 1)) return;
    stop_workers();
    stop_.store(false);
    pin_ = pin;
    blocks_ = std::vector<Block>(participants);
    // A worker joins every loop after the current one, even one submitted before it starts.
    const uint64_t current = generation_.load();
    caller_cpu_.store(pinned() ? cpus_[0] : -1);
    polls_per_yield_ = pinned() ? kPinnedPollsPerYield : kPollsPerYield;
    for (size_t i = 1; i < participants; ++i) {
      const int cpu = pinned() ? cpus_[i] : -1;
      workers_.emplace_back([this, i, current, cpu] {
        if (cpu >= 0) pin_current_thread(cpu);
        work(i, current);
      });
    }
  }

  /// Pinning needs a CPU per thread: with fewer, threads would be pinned onto each other.
  bool pinned() const { return pin_ && cpus_.size() >= blocks_.size() && blocks_.size() > 1; }

  struct alignas(64) Block {  // one cache line each: threads claim from their own
    std::atomic<uint64_t> claim{0};
  };

  uint32_t block_begin(size_t q, uint32_t extent) const {
    return static_cast<uint32_t>(static_cast<uint64_t>(q) * extent / blocks_.size());
  }

  /// Runs the iterations of `generation` it can claim: its own block first, then the others'.
  void run_blocks(uint64_t generation, size_t home) {
    const size_t n = blocks_.size();
    const uint32_t extent = extent_.load();
    uint32_t finished = 0;
    for (size_t k = 0; k < n; ++k) {
      const size_t q = (home + k) % n;
      Block &block = blocks_[q];
      const uint32_t end = block_begin(q + 1, extent);
      for (;;) {
        uint64_t c = block.claim.load(std::memory_order_acquire);
        if ((c >> 32) != generation) break;  // a later loop has started: this one is over
        const uint32_t index = static_cast<uint32_t>(c & kNoIndex);
        if (index >= end) break;  // also kNoIndex
        if (!block.claim.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) continue;
        t_inside_task = true;
        const int r = task_(user_context_, min_ + static_cast<int>(index), closure_);
        t_inside_task = false;
        if (r != 0) {
          int expected = 0;
          error_.compare_exchange_strong(expected, r);
        }
        ++finished;
      }
      // Reported once per block, not per iteration (each report moves the counter's line
      // between cores), but before looking at the next block: the caller waits on it.
      if (finished) done_.fetch_add(finished, std::memory_order_release);
      finished = 0;
    }
  }

  void work(size_t home, uint64_t seen) {
    const int polls_per_yield = polls_per_yield_;  // set before the workers start
    while (!stop_.load()) {
      auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
      uint64_t generation;
      int polls = 0;
      while ((generation = generation_.load(std::memory_order_acquire)) == seen && !stop_.load()) {
        wait_a_little(polls, polls_per_yield);
        if (polls % 256 == 0 && std::chrono::steady_clock::now() > spin_until) {
          std::unique_lock<std::mutex> lock(sleep_mutex_);
          sleepers_.fetch_add(1);
          wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
          sleepers_.fetch_sub(1);
          spin_until = std::chrono::steady_clock::now() + kSpinTime;
        }
      }
      seen = generation;
      run_blocks(generation, home);
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (std::thread &t : workers_) t.join();
    workers_.clear();
  }

  static constexpr uint64_t kNoIndex = 0xffffffffu;
  std::mutex submit_mutex_;  // held by the thread whose loop runs on the workers
  std::vector<Block> blocks_ = std::vector<Block>(1);  // one per thread, the caller's first
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint32_t> extent_{0}, done_{0};
  std::atomic<int> error_{0};
  // Written by the submitter while no iteration is claimable, read after a successful claim.
  HalideTask task_ = nullptr;
  void *user_context_ = nullptr;
  uint8_t *closure_ = nullptr;
  int min_ = 0;

  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
  bool pin_ = true;
  int polls_per_yield_ = kPollsPerYield;  // written by configure() only, under the submit mutex
  std::atomic<int> caller_cpu_{-1};
  const std::vector<int> cpus_ = allowed_cpus(::getpid());  // the process's affinity mask, in order
};

/// Threads when nobody set them: HL_NUM_THREADS as Halide reads it, else every core.
int default_threads() {
  if (const char *env = std::getenv("HL_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::atomic<SpinPool *> g_pool{nullptr};
/// Whether some thread holds the callers' CPU: of several threads running Modules at once,
/// only the first is pinned there; the others stay where the OS puts them.
std::atomic<bool> g_caller_cpu_taken{false};

SpinPool &pool() {
  // Never destroyed: kernels may still run from other static destructors at exit. A forked
  // child (the tuner measures every candidate in one) has none of its parent's workers, and
  // may hold copies of locked mutexes: the fork handler drops the copy, and the child's
  // first loop starts a pool of its own. The check costs the hot path one atomic load.
  if (SpinPool *p = g_pool.load(std::memory_order_acquire)) return *p;
  static std::mutex creating;
  static const bool fork_handler = [] { return ::pthread_atfork(nullptr, nullptr, [] {
    g_pool.store(nullptr);
    g_caller_cpu_taken.store(false);
  }) == 0; }();
  (void)fork_handler;
  std::lock_guard<std::mutex> lock(creating);
  if (SpinPool *p = g_pool.load(std::memory_order_acquire)) return *p;
  auto *created = new SpinPool;
  created->set_threads(default_threads());
  g_pool.store(created, std::memory_order_release);
  return *created;
}

}  // namespace

std::vector<int> allowed_cpus(pid_t who) {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(who, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set) == 0;
}

void spin_pool_set_threads(int threads) { pool().set_threads(threads); }
void spin_pool_set_pinning(bool pin) { pool().set_pinning(pin); }
bool spin_pool_pinning() { return pool().pinning(); }

SpinPoolCallerPin::SpinPoolCallerPin() {
  const int cpu = pool().caller_cpu();
  if (cpu < 0) return;
  bool free = false;
  if (!g_caller_cpu_taken.compare_exchange_strong(free, true)) return;
  owner_ = true;
  if (::pthread_getaffinity_np(::pthread_self(), sizeof(saved_), &saved_) != 0) return;
  if (CPU_COUNT(&saved_) == 1 && CPU_ISSET(cpu, &saved_)) return;  // already there
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  restore_ = ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set) == 0;
}

SpinPoolCallerPin::~SpinPoolCallerPin() {
  if (restore_) ::pthread_setaffinity_np(::pthread_self(), sizeof(saved_), &saved_);
  if (owner_) g_caller_cpu_taken.store(false);
}

int spin_pool_threads() { return pool().threads(); }

SpinPoolSerialScope::SpinPoolSerialScope(bool serial) : previous_(t_serial) { t_serial = serial; }
SpinPoolSerialScope::~SpinPoolSerialScope() { t_serial = previous_; }

int spin_pool_par_for(void *user_context, HalideTask task, int min, int extent, uint8_t *closure) {
  return pool().par_for(user_context, task, min, extent, closure);
}

}  // namespace tessel
