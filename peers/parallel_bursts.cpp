#include "peers/parallel_bursts.h"

#include <algorithm>
#include <limits>

namespace tessel::bench {

ParallelBursts::ParallelBursts(int threads) {
  threads = std::max(threads, 1);
  starts_.resize(size_t(threads));
  ends_.resize(size_t(threads));
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ParallelBursts::~ParallelBursts() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &w : workers_) w.join();
}

void ParallelBursts::worker_loop(int index) {
  long seen = 0;
  for (;;) {
    const std::function<void(int)> *work = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      work = work_;
    }
    const auto start = std::chrono::steady_clock::now();
    (*work)(index);
    const auto end = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      starts_[size_t(index)] = start;
      ends_[size_t(index)] = end;
      ++finished_;
    }
    done_.notify_one();
  }
}

double ParallelBursts::run(const std::function<void(int)> &work) {
  std::unique_lock<std::mutex> lock(mutex_);
  work_ = &work;
  finished_ = 0;
  ++generation_;
  wake_.notify_all();
  done_.wait(lock, [&] { return finished_ == threads(); });
  const auto first_start = *std::min_element(starts_.begin(), starts_.end());
  const auto last_end = *std::max_element(ends_.begin(), ends_.end());
  return std::chrono::duration<double>(last_end - first_start).count();
}

double best_burst_seconds(ParallelBursts &bursts, int repetitions, std::chrono::milliseconds gap,
                          const std::function<void(int)> &work) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < std::max(repetitions, 1); ++r) {
    std::this_thread::sleep_for(gap);
    best = std::min(best, bursts.run(work));
  }
  return best;
}

}  // namespace tessel::bench
