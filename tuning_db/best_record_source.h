#pragma once
// Where `tessel compile` finds the schedule to deploy for each task: a tuning database or
// a tuning log read into memory answer the same question the same way.
#include <functional>
#include <memory>
#include <optional>
#include <set>
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
  /// What best() and fastest() passed over since the last call (a record that cannot be
  /// read is skipped, named here, and the next best used), for the caller to warn about.
  virtual std::vector<std::string> take_warnings() const { return {}; }
};

/// Calls `warn` once for each warning `source` has collected.
inline void forward_warnings(const BestRecordSource &source, const std::function<void(const std::string &)> &warn) {
  for (const std::string &w : source.take_warnings())
    if (warn) warn(w);
}

/// What the executor's tuned-schedule hook (ExecutorOptions::schedule_for) asks: the schedule
/// text of the workload's best record on `target` (empty when that best is the built-in
/// schedule), or nothing when nothing was measured or the source cannot be read. A source that
/// cannot be read, or a record skipped, is told to `warn` (each message once), so that a run
/// on default schedules never passes for a tuned one.
inline std::function<std::optional<std::string>(const std::string &)> best_schedule_lookup(
    std::shared_ptr<const BestRecordSource> source, std::string target,
    std::function<void(const std::string &)> warn = nullptr) {
  auto said = std::make_shared<std::set<std::string>>();
  auto warn_once = [warn = std::move(warn), said](const std::string &message) {
    if (warn && said->insert(message).second) warn(message);
  };
  return [source = std::move(source), target = std::move(target),
          warn_once](const std::string &key) -> std::optional<std::string> {
    auto best = source->best(key, target);
    forward_warnings(*source, warn_once);
    if (!best.ok()) {
      warn_once("cannot read tuning records (" + best.error().message + "); tasks run their default schedules");
      return std::nullopt;
    }
    if (!best.value()) return std::nullopt;
    return best.value()->schedule_text;
  };
}

}  // namespace tessel
