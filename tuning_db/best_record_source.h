#pragma once
// Where `tessel compile` finds the schedule to deploy for each task: a tuning database or
// a tuning log read into memory answer the same question the same way.
#include <optional>
#include <string>

#include "graph/result.h"
#include "tuning_db/tuning_record.h"

namespace tessel {

class BestRecordSource {
 public:
  virtual ~BestRecordSource() = default;
  /// The fastest ok record of the workload on the target (ties: the earliest recorded);
  /// nullopt when none was measured ok. Errors only for a database that cannot be read.
  virtual Result<std::optional<TuningRecord>> best(const std::string &workload_key,
                                                   const std::string &target) const = 0;
};

}  // namespace tessel
