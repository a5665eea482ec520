#pragma once
// What measuring one candidate gives (its record's status, timings and compile time), and
// where the measuring time went.
#include <string>
#include <vector>

#include "tuning_db/tuning_record.h"

namespace tessel {

struct MeasureResult {
  RecordStatus status = RecordStatus::Ok;  // the status its tuning record gets
  std::string error;  // why, for every status but Ok
  double compile_seconds = 0;
  std::vector<double> seconds;  // every timed run
  double median_seconds = 0;
  /// The signature of the machine that measured it, when that was not this one (remote
  /// tuning's workers); empty: measured here.
  std::string machine;
};

/// A result that failed with `status` for the reason `why` (nothing timed).
MeasureResult measure_failure(RecordStatus status, std::string why);

/// Wall time a Measurer spent in each phase, summed over its batches: where a trial's
/// measuring time goes (the tuner reports it per trial).
struct MeasurePhaseSeconds {
  double build = 0;      // the Builder: forking workers until every one compiled (in parallel)
  double lock_wait = 0;  // the Runner waiting for the host timing lock (another tessel timing)
  double run = 0;        // the Runner verifying and timing, one worker at a time
};

}  // namespace tessel
