#include "base/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace tessel {

void parallel_for_each(int count, int threads, const std::function<void(int)> &body) {
  if (count <= 0) return;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min(threads, count);
  std::atomic<int> next{0};
  auto drain = [&] {
    for (int i = next++; i < count; i = next++) body(i);
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(drain);
  drain();
  for (std::thread &h : helpers) h.join();
}

}  // namespace tessel
