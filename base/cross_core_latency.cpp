#include "base/cross_core_latency.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/spin_pool.h"

namespace tessel {
namespace {

constexpr int kBatches = 9;
constexpr int kRoundTripsPerBatch = 2000;

}  // namespace

std::optional<double> cross_core_round_trip_ns() {
  const std::vector<int> cpus = allowed_cpus(0);
  if (cpus.size() < 2) return std::nullopt;

  // One line written in turn: odd values by this thread, even ones by the echo thread.
  alignas(64) std::atomic<int64_t> line{0};
  const int64_t total = int64_t{kBatches} * kRoundTripsPerBatch;
  std::thread echo([&] {
    pin_current_thread(cpus[1]);
    for (int64_t i = 0; i < total; ++i) {
      while (line.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      line.store(2 * i + 2, std::memory_order_release);
    }
  });
  cpu_set_t saved;
  const bool restore = ::pthread_getaffinity_np(::pthread_self(), sizeof(saved), &saved) == 0;
  pin_current_thread(cpus[0]);
  std::vector<double> batch_ns;
  int64_t i = 0;
  for (int b = 0; b < kBatches; ++b) {
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < kRoundTripsPerBatch; ++k, ++i) {
      line.store(2 * i + 1, std::memory_order_release);
      while (line.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    batch_ns.push_back(ns / kRoundTripsPerBatch);
  }
  echo.join();
  if (restore) ::pthread_setaffinity_np(::pthread_self(), sizeof(saved), &saved);
  std::nth_element(batch_ns.begin(), batch_ns.begin() + kBatches / 2, batch_ns.end());
  return batch_ns[kBatches / 2];
}

}  // namespace tessel
