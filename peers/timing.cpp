#include "peers/timing.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <sstream>
#include <thread>

namespace tessel::bench {

using Clock = std::chrono::steady_clock;

std::string TimingOptions::describe() const {
  std::ostringstream text;
  text << rounds << " interleaved rounds (row order rotated each round, " << gap_seconds
       << " s idle between rows); per row and round " << warmup_runs
       << " warm-up run(s), then timed runs until >= " << min_seconds << " s or >= " << min_runs
       << " runs; median and min over all timed runs"
       << (cold ? "; constant operands evicted from the caches before every run" : "");
  return text.str();
}

double Samples::median() const {
  if (seconds.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const size_t mid = sorted.size() / 2;
  return sorted.size() % 2 ? sorted[mid] : 0.5 * (sorted[mid - 1] + sorted[mid]);
}

double Samples::min() const {
  if (seconds.empty()) return std::numeric_limits<double>::quiet_NaN();
  return *std::min_element(seconds.begin(), seconds.end());
}

static void time_one_slice(const KernelRow &row, const TimingOptions &options, Samples &samples) {
  auto prepare_run = [&] {
    if (options.cold && row.evict_constants) row.evict_constants();
  };
  for (int i = 0; i < options.warmup_runs; ++i) {
    prepare_run();
    row.run();
  }
  double timed_seconds = 0;
  for (int runs = 0;;) {
    prepare_run();
    const auto start = Clock::now();
    row.run();
    const auto end = Clock::now();
    samples.seconds.push_back(std::chrono::duration<double>(end - start).count());
    ++runs;
    // Timed runs only: the untimed evictions would otherwise cut a cold row's slice short.
    timed_seconds += samples.seconds.back();
    if (runs >= options.min_runs || timed_seconds >= options.min_seconds) break;
  }
}

std::vector<Samples> time_rows_interleaved(const std::vector<KernelRow> &rows, const TimingOptions &options) {
  std::vector<Samples> samples(rows.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].unavailable.empty() && rows[i].run) order.push_back(i);
  if (order.empty()) return samples;
  for (int round = 0; round < options.rounds; ++round) {
    std::fprintf(stderr, "timing round %d/%d\n", round + 1, options.rounds);
    // Rotating the order keeps any row from always following the same neighbour.
    for (size_t j = 0; j < order.size(); ++j) {
      const size_t index = order[(j + size_t(round)) % order.size()];
      std::this_thread::sleep_for(std::chrono::duration<double>(options.gap_seconds));
      time_one_slice(rows[index], options, samples[index]);
    }
  }
  return samples;
}

}  // namespace tessel::bench
