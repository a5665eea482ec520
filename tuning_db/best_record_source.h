#pragma once
// Where `tessel compile` finds the schedule to deploy for each task: a tuning database or
// a tuning log read into memory answer the same question the same way.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "tuning_db/tuning_record.h"

namespace tessel {

class BestRecordSource {
 public:
  virtual ~BestRecordSource() = default;
  /// The fastest ok record of the workload on the target (ties: the earliest recorded);
  /// nullopt when none was measured ok. Errors only for a database that cannot be read.
  virtual Result<std::optional<TuningRecord>> best(const std::string &workload_key,
                                                   const std::string &target) const = 0;
  /// The k fastest ok records of the workload on the target, fastest first.
  virtual Result<std::vector<TuningRecord>> fastest(const std::string &workload_key, const std::string &target,
                                                    int k) const = 0;
};

/// What the executor's tuned-schedule hook (ExecutorOptions::schedule_for) asks: the schedule
/// text of the workload's best record on `target`, or nothing when that best is the built-in
/// schedule (empty text), nothing was measured, or the source cannot be read.
inline std::function<std::optional<std::string>(const std::string &)> best_schedule_lookup(
    std::shared_ptr<const BestRecordSource> source, std::string target) {
  return [source = std::move(source), target = std::move(target)](const std::string &key) -> std::optional<std::string> {
    auto best = source->best(key, target);
    if (!best.ok() || !best.value() || best.value()->schedule_text.empty()) return std::nullopt;
    return best.value()->schedule_text;
  };
}

}  // namespace tessel
