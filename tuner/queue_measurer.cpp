#include "tuner/queue_measurer.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "tuner/tune_model.h"
#include "tuning_db/retry_unreachable.h"
#include "tuning_db/work_queue.h"

namespace tessel {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

MeasureResult result_of_record(const TuningRecord &record) {
  MeasureResult result;
  result.status = record.status;
  result.error = record.error_message;
  result.compile_seconds = record.compile_seconds;
  result.seconds = record.timings_seconds;
  result.median_seconds = record.median_seconds.value_or(0);
  result.machine = record.machine;
  return result;
}

QueueMeasurer::QueueMeasurer(Task task, std::string target_text, TuningDatabase &db, QueueMeasureOptions options)
    : task_(std::move(task)), target_text_(std::move(target_text)), db_(db), options_(std::move(options)) {}

Result<std::vector<MeasureResult>> QueueMeasurer::run_batch(
    TuningDatabase &db, const QueueMeasureOptions &options,
    const std::vector<std::pair<const QueueMeasurer *, const Candidate *>> &items) {
  RetryWindow retry;
  retry.seconds = options.reconnect_seconds;
  retry.log = options.log;
  std::vector<MeasureResult> results(items.size());
  std::vector<QueuedCandidate> queued;
  std::vector<size_t> waiting;  // indexes into items that go to the workers
  for (size_t i = 0; i < items.size(); ++i) {
    const auto &[measurer, candidate] = items[i];
    QueuedCandidate entry;
    entry.workload_key = measurer->task_.workload_key;
    entry.target = measurer->target_text_;
    if (candidate) {
      entry.schedule_text = to_text(candidate->schedule);
      entry.schedule_hash = schedule_hash(candidate->schedule);
      if (!candidate->features.empty()) entry.features = candidate->features;
    } else {
      entry.schedule_hash = kBuiltinScheduleHash;
    }
    // Measured before (an earlier run, another coordinator): its record is the answer.
    auto known =
        retry_unreachable([&] { return db.find_record(entry.workload_key, entry.target, entry.schedule_hash); }, retry);
    if (!known.ok()) return known.error();
    if (known.value()) {
      results[i] = result_of_record(*known.value());
      continue;
    }
    queued.push_back(std::move(entry));
    waiting.push_back(i);
  }
  if (queued.empty()) return results;

  WorkQueue queue(db);
  const std::string batch = new_batch_name();
  if (auto enqueued = retry_unreachable([&] { return queue.enqueue(batch, queued); }, retry); !enqueued.ok())
    return enqueued.error();
  int64_t left = static_cast<int64_t>(queued.size());
  auto last_progress = Clock::now();
  double next_notice = options.patience_seconds;
  while (left > 0) {
    queue.wait_for_progress(options.poll_seconds);
    auto unfinished = retry_unreachable([&] { return queue.unfinished(batch); }, retry);
    if (!unfinished.ok()) return unfinished.error();
    if (unfinished.value() < left) {
      left = unfinished.value();
      last_progress = Clock::now();
      next_notice = options.patience_seconds;
      continue;
    }
    const double stalled = seconds_since(last_progress);
    if (options.give_up_seconds > 0 && stalled >= options.give_up_seconds)
      return Error{std::to_string(left) + " queued candidates saw no worker progress for " +
                       std::to_string(static_cast<int>(stalled)) + " s; is a `tessel worker` running for target '" +
                       queued.front().target + "' on " + db.location() + "?",
                   ErrorKind::Timeout};
    if (options.log && options.patience_seconds > 0 && stalled >= next_notice) {
      options.log(std::to_string(left) + " candidates waiting in the queue for " +
                  std::to_string(static_cast<int>(stalled)) + " s: start workers with `tessel worker --db " +
                  db.location() + " --target " + queued.front().target + "`");
      next_notice += options.patience_seconds;
    }
  }
  for (size_t q = 0; q < queued.size(); ++q) {
    auto record = retry_unreachable(
        [&] { return db.find_record(queued[q].workload_key, queued[q].target, queued[q].schedule_hash); }, retry);
    if (!record.ok()) return record.error();
    results[waiting[q]] = record.value() ? result_of_record(*record.value())
                                         : measure_failure(RecordStatus::Crash, "the queue says done but no record was written");
  }
  if (auto forgotten = retry_unreachable([&] { return queue.forget(batch); }, retry); !forgotten.ok())
    return forgotten.error();
  return results;
}

Result<void> QueueMeasurer::prepare_references(const std::vector<QueueMeasurer *> &measurers) {
  std::vector<std::pair<const QueueMeasurer *, const Candidate *>> items;
  for (QueueMeasurer *m : measurers)
    if (!m->reference_) items.push_back({m, nullptr});
  if (items.empty()) return {};
  auto results = run_batch(measurers.front()->db_, measurers.front()->options_, items);
  if (!results.ok()) return results.error();
  for (size_t i = 0; i < items.size(); ++i) {
    auto *measurer = const_cast<QueueMeasurer *>(items[i].first);
    const MeasureResult &result = results.value()[i];
    if (result.status == RecordStatus::Ok) measurer->reference_ = Result<MeasureResult>(result);
    else
      measurer->reference_ = Result<MeasureResult>(
          Error{"the built-in schedule failed on the worker (" + std::string(to_text(result.status)) + "): " + result.error,
                ErrorKind::Unspecified});
  }
  return {};
}

Result<MeasureResult> QueueMeasurer::prepare_reference() {
  if (!reference_) {
    auto prepared = prepare_references({this});
    if (!prepared.ok()) return prepared.error();
  }
  return *reference_;
}

Result<std::vector<MeasureResult>> QueueMeasurer::measure(const std::vector<Candidate> &candidates) {
  std::vector<std::pair<const QueueMeasurer *, const Candidate *>> items;
  for (const Candidate &c : candidates) items.push_back({this, &c});
  return run_batch(db_, options_, items);
}

}  // namespace tessel
