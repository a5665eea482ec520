#include "peers/memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>

#include "peers/parallel_bursts.h"

namespace tessel::bench {

double measure_memory_bandwidth_gbs(int threads, size_t array_bytes, int repetitions) {
  threads = std::max(threads, 1);
  const size_t count = std::max<size_t>(array_bytes / sizeof(float), size_t(threads) * 16);
  const size_t per_thread = (count + size_t(threads) - 1) / size_t(threads);
  auto slice = [=](int index) {
    const size_t begin = std::min(count, per_thread * size_t(index));
    return std::make_pair(begin, std::min(count, begin + per_thread));
  };
  // new float[] leaves the pages untouched: each thread's first touch of its own slice places
  // them (and takes the page faults) before anything is timed.
  std::unique_ptr<float[]> a(new float[count]), b(new float[count]), c(new float[count]);
  float *pa = a.get(), *pb = b.get(), *pc = c.get();
  ParallelBursts bursts(threads);
  bursts.run([&](int index) {
    const auto [begin, end] = slice(index);
    for (size_t i = begin; i < end; ++i) {
      pa[i] = 0.0f;
      pb[i] = 1.0f;
      pc[i] = 2.0f;
    }
  });

  const float scale = 3.0f;
  std::atomic<float> sink{0.0f};
  const double seconds = best_burst_seconds(bursts, repetitions, std::chrono::milliseconds(10), [&](int index) {
    const auto [begin, end] = slice(index);
    for (size_t i = begin; i < end; ++i) pa[i] = pb[i] + scale * pc[i];
    if (end > begin) sink.store(pa[begin], std::memory_order_relaxed);  // keeps the stores observable
  });
  const double counted_bytes = 3.0 * double(count) * sizeof(float);
  return counted_bytes / seconds * 1e-9;
}

}  // namespace tessel::bench
