#pragma once
// Short, timed bursts of work on a fixed set of threads, for measuring the machine's peaks on a
// shared machine: the threads sleep between bursts, and a thread that wakes from sleep preempts
// the busy processes around it (a freshly started thread queues behind them), so a burst of a
// few milliseconds gets whole cores even while something else keeps them busy.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessel::bench {

class ParallelBursts {
 public:
  explicit ParallelBursts(int threads);
  ~ParallelBursts();
  ParallelBursts(const ParallelBursts &) = delete;
  ParallelBursts &operator=(const ParallelBursts &) = delete;

  int threads() const { return int(workers_.size()); }

  /// Runs work(thread_index) once on every thread; returns the seconds from the first thread's
  /// start to the last one's end (wake-up latency is not counted).
  double run(const std::function<void(int)> &work);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)> *work_ = nullptr;
  long generation_ = 0;  // bumped for each burst
  int finished_ = 0;
  bool stopping_ = false;
  std::vector<std::chrono::steady_clock::time_point> starts_, ends_;
};

/// The shortest of `repetitions` bursts of work, each after an idle `gap` (see above).
double best_burst_seconds(ParallelBursts &bursts, int repetitions, std::chrono::milliseconds gap,
                          const std::function<void(int)> &work);

}  // namespace tessel::bench
