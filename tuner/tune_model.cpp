#include "tuner/tune_model.h"

#include <fstream>

#include "tuner/tuning_session.h"

namespace tessel {

std::string machine_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown CPU";
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
