// Evicting memory from the caches: harmless on any range, the data intact, and a read right
// after it visibly slower than a read of the same memory while it is cached.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <vector>

#include "base/cache_eviction.h"

using namespace tessel;

namespace {

/// Seconds to read one word of every cache line of `values` (summed into `sink`, so the
/// reads stay); integer adds, so the time is the memory's, not an add chain's.
double seconds_to_read(const std::vector<uint32_t> &values, uint32_t &sink) {
  const auto start = std::chrono::steady_clock::now();
  uint32_t sum = 0;
  for (size_t i = 0; i < values.size(); i += 16) sum += values[i];
  sink += sum;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("evicting any range leaves the data as it was", "[base][cache]") {
  std::vector<float> values(10007);
  std::iota(values.begin(), values.end(), 1.0f);
  const std::vector<float> copy = values;
  evict_from_caches(nullptr, 100);
  evict_from_caches(values.data(), 0);
  evict_from_caches(reinterpret_cast<const char *>(values.data()) + 3, 4001);  // unaligned both ends
  evict_from_caches(values.data(), values.size() * sizeof(float));
  CHECK(values == copy);
}

TEST_CASE("memory read right after eviction comes slower than from the cache", "[base][cache]") {
  if (!cache_eviction_supported()) SUCCEED("eviction is a no-op on this CPU");
  else {
    // 4 MiB: inside the last-level cache of every host tessel runs on, far beyond L1/L2.
    std::vector<uint32_t> values(size_t(1) << 20, 1);
    uint32_t sink = 0;
    double warm = 1e9, cold = 1e9;
    for (int trial = 0; trial < 9; ++trial) {  // the fastest of several: this machine is shared
      seconds_to_read(values, sink);
      warm = std::min(warm, seconds_to_read(values, sink));
      evict_from_caches(values.data(), values.size() * sizeof(float));
      cold = std::min(cold, seconds_to_read(values, sink));
    }
    CAPTURE(warm, cold);
    CHECK(cold > 1.2 * warm);
    CHECK(sink > 0);
  }
}
