#include "tuner/tune_model.h"

#include <cstdlib>
#include <fstream>
#include <thread>

#include "tuner/tuning_session.h"

namespace tessel {

std::string machine_description() {
  // A cluster can name its machine classes itself (and tests can fake a second machine).
  if (const char *named = std::getenv("TESSEL_MACHINE_SIGNATURE"); named && *named) return named;
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU", flags;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    // "power management:" and the like end at the colon.
    const std::string value = colon == std::string::npos || colon + 2 > line.size() ? std::string() : line.substr(colon + 2);
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU") model = value;
    if (line.rfind("flags", 0) == 0 && flags.empty()) flags = " " + value + " ";
  }
  // The vector ISA decides what a schedule's kernel compiles to: two hosts with the same
  // model name but different enabled features (a VM's) must not compare latencies.
  std::string isa;
  for (const char *feature : {"avx2", "fma", "avx512f", "avx512_bf16", "amx_tile"})
    if (flags.find(std::string(" ") + feature + " ") != std::string::npos) isa += std::string(isa.empty() ? "" : " ") + feature;
  return model + " (" + std::to_string(std::thread::hardware_concurrency()) + " cpus" + (isa.empty() ? "" : ", " + isa) + ")";
}

int TuneSummary::transferred_tasks() const {
  int count = 0;
  for (const TaskTuneSummary &t : tasks) count += t.transferred > 0;
  return count;
}

Result<TuneSummary> tune_model(const Graph &graph, const Target &target, TuningDatabase &db, const TuneOptions &options) {
  TuningSession session(graph, target, db, options);
  TESSEL_TRY_VOID(session.prepare_tasks());
  for (;;) {
    TESSEL_TRY(const bool more, session.run_round());
    if (!more) break;
  }
  return session.finish();
}

}  // namespace tessel
