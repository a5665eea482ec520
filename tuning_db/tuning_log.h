#pragma once
// A tuning log (.jsonl) read into memory: deploys a model with `tessel compile --log`
// without a database, answering best() exactly as TuningDatabase does.
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/result.h"
#include "tuning_db/best_record_source.h"
#include "tuning_db/tuning_log_line.h"

namespace tessel {

class TuningLog : public BestRecordSource {
 public:
  /// Adds a record (its id becomes its position); false for a duplicate (workload, target,
  /// schedule_hash), which is dropped like the database drops it. A workload text that
  /// differs from the one already seen under the key is an error.
  Result<bool> add(TuningLogEntry entry);

  Result<std::optional<TuningRecord>> best(const std::string &workload_key, const std::string &target) const override;
  /// The k fastest ok records, fastest first.
  std::vector<TuningRecord> top_k(const std::string &workload_key, const std::string &target, int k) const;
  Result<std::vector<TuningRecord>> fastest(const std::string &workload_key, const std::string &target,
                                            int k) const override {
    return top_k(workload_key, target, k);
  }

  const std::vector<TuningRecord> &records() const { return records_; }
  std::optional<std::string> workload_text(const std::string &key) const;

 private:
  std::vector<TuningRecord> records_;
  std::map<std::string, std::string> workload_texts_;
  std::set<std::tuple<std::string, std::string, std::string>> measured_;
};

/// Reads a log; a malformed line is an error naming `source_name` and the line number.
/// Records keep their line number as id. Duplicate lines are skipped.
Result<TuningLog> read_tuning_log(std::istream &in, const std::string &source_name);
/// Reads the log at `path`; errors name the file.
Result<TuningLog> read_tuning_log(const std::string &path);

}  // namespace tessel
