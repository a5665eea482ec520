#include "peers/bench_table.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>

#include "base/json.h"

namespace tessel {

namespace {

/// Percentile by nearest rank of sorted samples.
double percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(fraction * (values.size() - 1) + 0.5));
  return values[index];
}

struct RowFigures {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, gflops = 0, gbs = 0, of_peak = 0, tessel_speedup = 0;
  int runs = 0;
};

RowFigures figures(const TimedRow &r, const TaskBench &bench, const bench::MachinePeak &peak, double tessel_median,
                   bool memory_bound) {
  RowFigures f;
  const double median = r.samples.median();
  f.runs = static_cast<int>(r.samples.seconds.size());
  f.median_ms = median * 1e3;
  f.p10_ms = percentile(r.samples.seconds, 0.1) * 1e3;
  f.p90_ms = percentile(r.samples.seconds, 0.9) * 1e3;
  f.gflops = bench.flops / median / 1e9;
  f.gbs = bench.bytes / median / 1e9;
  f.of_peak = memory_bound ? (peak.memory_gbs > 0 ? f.gbs / peak.memory_gbs : 0)
                           : (peak.fma_gflops > 0 ? f.gflops / peak.fma_gflops : 0);
  f.tessel_speedup = tessel_median > 0 ? median / tessel_median : 0;
  return f;
}

std::string row_status(const TimedRow &r) {
  if (!r.row->unavailable.empty()) return "unavailable: " + r.row->unavailable;
  if (r.samples.seconds.empty()) return "did not run";
  if (!(r.error <= kBenchTolerance)) return "WRONG";
  return "ok";
}

/// The last-level cache's size in bytes, from sysfs (0 if unknown): a memory-bound kernel
/// whose working set fits in it is not limited by the DRAM bandwidth peak.
double last_level_cache_bytes() {
  double largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    double value = std::atof(text.c_str());
    if (text.back() == 'K') value *= 1024;
    if (text.back() == 'M') value *= 1024 * 1024;
    largest = std::max(largest, value);
  }
  return largest;
}

}  // namespace

bool is_memory_bound(double flops, double bytes, const bench::MachinePeak &peak) {
  if (bytes <= 0 || peak.memory_gbs <= 0 || peak.fma_gflops <= 0) return flops == 0;
  return flops / bytes < peak.fma_gflops / peak.memory_gbs;
}

std::string format_bench_table(const BenchTask &task, const TaskBench &bench, const std::vector<TimedRow> &rows,
                               const bench::MachinePeak &peak) {
  const bool memory_bound = is_memory_bound(bench.flops, bench.bytes, peak);
  const double tessel_median = rows.empty() || rows[0].samples.seconds.empty() ? 0 : rows[0].samples.median();
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%s  [%s, key %s%s]\n  %.4g GFLOP and %.4g MB per run (%.1f FLOP/byte: %s-bound here)\n",
                task.label.c_str(), task.ops.c_str(), task.workload_key.c_str(),
                task.weight > 1 ? (", x" + std::to_string(task.weight) + " in the model").c_str() : "",
                bench.flops / 1e9, bench.bytes / 1e6, bench.bytes > 0 ? bench.flops / bench.bytes : 0.0,
                memory_bound ? "memory" : "compute");
  out += line;
  std::snprintf(line, sizeof(line), "  %-38s %10s %21s %9s %8s %9s %8s %9s\n", "", "median ms", "p10..p90 ms", "GFLOP/s",
                "GB/s", memory_bound ? "% BW" : "% FMA", "runs", "tessel x");
  out += line;
  for (const TimedRow &r : rows) {
    const std::string status = row_status(r);
    std::string name = r.row->name.size() > 38 ? r.row->name.substr(0, 35) + "..." : r.row->name;
    if (status != "ok" && status != "WRONG") {
      std::snprintf(line, sizeof(line), "  %-38s %s\n", name.c_str(), status.c_str());
      out += line;
      continue;
    }
    const RowFigures f = figures(r, bench, peak, tessel_median, memory_bound);
    char speedup[32];
    if (&r == &rows[0]) std::snprintf(speedup, sizeof(speedup), "%9s", "-");
    else std::snprintf(speedup, sizeof(speedup), "%8.2fx", f.tessel_speedup);
    char spread[48];
    std::snprintf(spread, sizeof(spread), "%.4g..%.4g", f.p10_ms, f.p90_ms);
    std::snprintf(line, sizeof(line), "  %-38s %10.4g %21s %9.1f %8.1f %8.0f%% %8d %s%s\n", name.c_str(), f.median_ms,
                  spread, f.gflops, f.gbs, 100 * f.of_peak, f.runs, speedup,
                  status == "WRONG" ? "  WRONG OUTPUT" : "");
    out += line;
  }
  // What each row is: set-up costs and implementation notes, one line each.
  for (const TimedRow &r : rows) {
    std::string detail = r.row->setup;
    if (!r.row->note.empty()) detail += (detail.empty() ? "" : "; ") + r.row->note;
    if (r.row->unavailable.empty() && !r.samples.seconds.empty()) {
      char err[48];
      std::snprintf(err, sizeof(err), "%smax rel. error %.1e", detail.empty() ? "" : "; ", r.error);
      detail += err;
    }
    if (!detail.empty()) out += "    " + r.row->name + ": " + detail + "\n";
  }
  if (!bench.no_vendor_peer.empty()) out += "    vendor libraries: " + bench.no_vendor_peer + "\n";
  const double cache = last_level_cache_bytes();
  if (memory_bound && cache > 0 && bench.bytes < cache) {
    std::snprintf(line, sizeof(line),
                  "  the %.3g MB working set fits in the %.0f MiB last-level cache: %% BW is of the DRAM peak, so above "
                  "100%% is possible\n",
                  bench.bytes / 1e6, cache / (1024 * 1024));
    out += line;
  }
  out += "  tessel x = that row's median over tessel's (above 1: tessel is faster)\n";
  return out;
}

Json bench_json(const BenchTask &task, const TaskBench &bench, const std::vector<TimedRow> &rows,
                const bench::MachinePeak &peak) {
  const bool memory_bound = is_memory_bound(bench.flops, bench.bytes, peak);
  const double tessel_median = rows.empty() || rows[0].samples.seconds.empty() ? 0 : rows[0].samples.median();
  Json json;
  json["kernel"] = task.label;
  json["workload_key"] = task.workload_key;
  json["ops"] = task.ops;
  json["weight"] = task.weight;
  json["flops"] = bench.flops;
  json["bytes"] = bench.bytes;
  json["bound"] = memory_bound ? "memory" : "compute";
  if (!bench.no_vendor_peer.empty()) json["no_vendor_peer"] = bench.no_vendor_peer;
  json["rows"] = Json::array();
  for (const TimedRow &r : rows) {
    Json row;
    row["name"] = r.row->name;
    const std::string status = row_status(r);
    row["status"] = status == "ok" ? "ok" : status == "WRONG" ? "wrong" : "unavailable";
    if (!r.row->unavailable.empty()) row["reason"] = r.row->unavailable;
    if (!r.row->setup.empty()) row["setup"] = r.row->setup;
    if (!r.row->note.empty()) row["note"] = r.row->note;
    if (r.row->unavailable.empty() && !r.samples.seconds.empty()) {
      const RowFigures f = figures(r, bench, peak, tessel_median, memory_bound);
      row["median_ms"] = f.median_ms;
      row["p10_ms"] = f.p10_ms;
      row["p90_ms"] = f.p90_ms;
      row["min_ms"] = r.samples.min() * 1e3;
      row["runs"] = f.runs;
      row["gflops"] = f.gflops;
      row["gbs"] = f.gbs;
      row["peak_fraction"] = f.of_peak;
      row["tessel_speedup"] = &r == &rows[0] ? 1.0 : f.tessel_speedup;
      row["max_relative_error"] = r.error;
    }
    json["rows"].push_back(row);
  }
  return json;
}

}  // namespace tessel
