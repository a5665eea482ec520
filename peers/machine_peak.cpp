#include "peers/machine_peak.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <vector>

#include "base/json.h"
#include "peers/fma_peak.h"

namespace tessel::bench {

namespace {

namespace fs = std::filesystem;

constexpr const char *kCacheFormat = "tessel machine peak cache v1";

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// The entry in `item` if it is well-formed.
std::optional<MachinePeak> read_entry(const Json &item) {
  const Json *cpu = json_find(item, "cpu"), *threads = json_find(item, "threads"), *fma = json_find(item, "fma_gflops"),
             *memory = json_find(item, "memory_gbs"), *when = json_find(item, "measured_at");
  if (!cpu || !cpu->is_string() || !threads || !json_int64(*threads) || !fma || !fma->is_number() || !memory ||
      !memory->is_number() || !when || !when->is_string())
    return std::nullopt;
  MachinePeak peak;
  peak.cpu = cpu->get<std::string>();
  peak.threads = int(*json_int64(*threads));
  peak.fma_gflops = fma->get<double>();
  peak.memory_gbs = memory->get<double>();
  peak.measured_at = when->get<std::string>();
  return peak;
}

// Every well-formed entry of the cache file; anything unreadable or malformed reads as none.
std::vector<MachinePeak> read_cache(const std::string &path) {
  std::vector<MachinePeak> entries;
  std::ifstream in(path, std::ios::binary);
  if (!in) return entries;
  std::stringstream text;
  text << in.rdbuf();
  const auto parsed = parse_json(text.str());
  if (!parsed.ok()) return entries;
  const Json *format = json_find(parsed.value(), "format");
  const Json *list = json_find(parsed.value(), "entries");
  if (!format || *format != kCacheFormat || !list || !list->is_array()) return entries;
  for (const Json &item : *list) {
    const std::optional<MachinePeak> peak = read_entry(item);
    // A zero or negative figure is not a ceiling anyone measured; measure again.
    if (peak && peak->fma_gflops > 0 && peak->memory_gbs > 0) entries.push_back(*peak);
  }
  return entries;
}

std::string cache_text(const std::vector<MachinePeak> &entries) {
  Json cache;
  cache["format"] = kCacheFormat;
  cache["entries"] = Json::array();
  for (const MachinePeak &e : entries) {
    Json entry;
    entry["cpu"] = e.cpu;
    entry["threads"] = e.threads;
    entry["fma_gflops"] = e.fma_gflops;
    entry["memory_gbs"] = e.memory_gbs;
    entry["measured_at"] = e.measured_at;
    cache["entries"].push_back(entry);
  }
  return dump_json(cache, 2) + "\n";
}

// Empty on success, else what went wrong.
std::string write_cache_atomically(const std::string &path, const std::string &text) {
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  if (error) return "cannot create " + fs::path(path).parent_path().string() + ": " + error.message();
  // Unique per process, in the same directory so the rename cannot cross file systems.
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      fs::remove(temporary, error);
      return "cannot write " + temporary;
    }
  }
  fs::rename(temporary, path, error);
  if (error) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return "cannot rename " + temporary + " to " + path + ": " + error.message();
  }
  return "";
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t begin = line.find_first_not_of(" \t", colon + 1);
    const size_t end = line.find_last_not_of(" \t\r");
    if (begin != std::string::npos && end >= begin) return line.substr(begin, end - begin + 1);
  }
  return "unknown CPU";
}

std::string machine_peak_cache_path() {
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return (fs::path(xdg) / "tessel" / "machine_peak.json").string();
  const char *home = std::getenv("HOME");
  if (home && home[0] != '\0') return (fs::path(home) / ".cache" / "tessel" / "machine_peak.json").string();
  return "";
}

MachinePeak machine_peak(int threads, bool remeasure, const PeakMeasurementSettings &settings) {
  const std::string cpu = cpu_model_name();
  const std::string path = machine_peak_cache_path();
  std::vector<MachinePeak> entries = path.empty() ? std::vector<MachinePeak>{} : read_cache(path);
  for (const MachinePeak &entry : entries)
    if (!remeasure && entry.cpu == cpu && entry.threads == threads) {
      MachinePeak cached = entry;
      cached.from_cache = true;
      return cached;
    }

  MachinePeak peak;
  peak.cpu = cpu;
  peak.threads = threads;
  peak.fma_gflops = measure_fma_peak_gflops(threads, settings.fma_repetitions);
  peak.memory_gbs =
      measure_memory_bandwidth_gbs(threads, settings.bandwidth_array_bytes, settings.bandwidth_repetitions);
  peak.measured_at = utc_now_iso8601();
  if (path.empty()) return peak;

  // Keep every other (CPU, threads) entry; replace ours.
  std::vector<MachinePeak> kept;
  for (const MachinePeak &entry : entries)
    if (!(entry.cpu == cpu && entry.threads == threads)) kept.push_back(entry);
  kept.push_back(peak);
  const std::string problem = write_cache_atomically(path, cache_text(kept));
  if (!problem.empty()) std::fprintf(stderr, "warning: machine peak not cached (%s)\n", problem.c_str());
  return peak;
}

std::string describe(const MachinePeak &peak) {
  char figures[160];
  std::snprintf(figures, sizeof figures, "%.1f GFLOP/s FMA, %.1f GB/s memory (STREAM triad)", peak.fma_gflops,
                peak.memory_gbs);
  return "peak (" + peak.cpu + ", " + std::to_string(peak.threads) + (peak.threads == 1 ? " thread" : " threads") +
         "): " + figures + ", measured " + peak.measured_at + (peak.from_cache ? ", cached" : ", just now");
}

}  // namespace tessel::bench
