#pragma once
// `tessel compile --db/--log`: the best record of each task as the artifact compiler wants it.
#include <memory>
#include <optional>
#include <string>

#include "compiler/artifact_compiler.h"
#include "tuning_db/best_record_source.h"

namespace tessel {

/// The best ok record of a workload on `target` from a database or a log, or nothing. A
/// record that cannot be read is skipped for the next best, and told to `warn`.
inline DeployScheduleLookup deployed_schedule_lookup(std::shared_ptr<const BestRecordSource> source, std::string target,
                                                     std::function<void(const std::string &)> warn = nullptr) {
  return [source = std::move(source), target = std::move(target),
          warn = std::move(warn)](const std::string &key) -> Result<std::optional<DeployedSchedule>> {
    auto best = source->best(key, target);
    forward_warnings(*source, warn);
    if (!best.ok()) return best.error();
    if (!best.value()) return std::optional<DeployedSchedule>();
    const TuningRecord &r = *best.value();
    return std::optional<DeployedSchedule>(DeployedSchedule{r.schedule_text, r.schedule_hash, r.median_seconds});
  };
}

}  // namespace tessel
