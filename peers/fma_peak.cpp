#include "peers/fma_peak.h"

#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "peers/parallel_bursts.h"

namespace tessel::bench {

namespace {

// Iterations per thread and run: about 2-4 ms at 4 GHz, long next to thread start-up.
constexpr long kIterations = 1L << 20;
// Idle gap before each measured repetition (see parallel_bursts.h).
constexpr int kIdleBetweenRunsMs = 10;
// Independent accumulators: FMA latency (4 cycles) x FMA pipes (2) x margin.
constexpr int kChains = 12;

// Each function returns a value derived from the accumulators so the loop cannot be removed.
__attribute__((target("avx512f"))) float fma_loop_avx512(long iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001f * c);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(long iterations) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(0.001f * c);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

enum class FmaIsa { None, Avx2, Avx512 };

FmaIsa widest_fma_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return FmaIsa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return FmaIsa::Avx2;
  return FmaIsa::None;
}

double flops_per_thread(FmaIsa isa) {
  const int lanes = isa == FmaIsa::Avx512 ? 16 : 8;
  return 2.0 * lanes * kChains * static_cast<double>(kIterations);
}

// One run: `threads` threads each run the FMA loop once.
void run_fma_threads(int threads, bool avx512, std::atomic<float> &sink) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([avx512, &sink] {
      const float v = avx512 ? fma_loop_avx512(kIterations) : fma_loop_avx2(kIterations);
      sink.store(v, std::memory_order_relaxed);
    });
  for (std::thread &w : workers) w.join();
}

}  // namespace

KernelRow make_fma_peak_row(const std::string &kernel_label, int threads) {
  KernelRow row;
  row.kernel = kernel_label;
  row.is_peer = false;
  row.is_peak = true;
  const FmaIsa isa = widest_fma_isa();
  if (isa == FmaIsa::None)
    return unavailable_row(kernel_label, "machine FMA peak", "the CPU has neither AVX-512 nor AVX2+FMA");
  const bool avx512 = isa == FmaIsa::Avx512;
  row.name = std::string("machine FMA peak (") + (avx512 ? "AVX-512" : "AVX2") + ", " + std::to_string(threads) +
             " threads)";
  row.flops = flops_per_thread(isa) * threads;
  auto sink = std::make_shared<std::atomic<float>>(0.0f);
  row.run = [threads, avx512, sink] { run_fma_threads(threads, avx512, *sink); };
  row.check_error = [] { return 0.0; };
  row.note = std::to_string(kChains) + " independent FMA chains per thread";
  return row;
}

double measure_fma_peak_gflops(int threads, int repetitions) {
  const FmaIsa isa = widest_fma_isa();
  if (isa == FmaIsa::None || threads < 1) return 0.0;
  const bool avx512 = isa == FmaIsa::Avx512;
  std::atomic<float> sink{0.0f};
  ParallelBursts bursts(threads);
  const double seconds =
      best_burst_seconds(bursts, repetitions, std::chrono::milliseconds(kIdleBetweenRunsMs), [&](int) {
        sink.store(avx512 ? fma_loop_avx512(kIterations) : fma_loop_avx2(kIterations), std::memory_order_relaxed);
      });
  return flops_per_thread(isa) * threads / seconds * 1e-9;
}

}  // namespace tessel::bench
