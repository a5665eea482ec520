#include "tuner/queue_worker.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include "base/child_process.h"
#include "graph/fusion/workload_graph.h"
#include "schedule/schedule_ir.h"
#include "task/task.h"
#include "tuner/tune_model.h"
#include "tuning_db/retry_unreachable.h"
#include "tuning_db/work_queue.h"

namespace tessel {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string default_worker_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "worker") + ":" + std::to_string(::getpid());
}

/// The heartbeat: a child process that renews the worker's leases every lease/3 seconds
/// over its own connection. It dies with the worker (PR_SET_PDEATHSIG), so a killed
/// worker's leases run out; destroying the ChildProcess stops it. A process, not a thread:
/// the worker forks measuring children all the time, and a fork must not copy a thread in
/// the middle of a database call.
Result<ChildProcess> start_heartbeat(const std::string &db_location, const std::string &worker, double lease_seconds) {
  const pid_t parent = ::getpid();
  return ChildProcess::start([&, parent](ParentLink &) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) return;
    const auto period = std::chrono::duration<double>(std::max(0.05, lease_seconds / 3));
    std::unique_ptr<TuningDatabase> db;
    while (true) {
      // A lost server is retried every period; the worker's own calls report it.
      if (!db) {
        auto opened = TuningDatabase::open(db_location);
        if (opened.ok()) db = std::make_unique<TuningDatabase>(std::move(opened.value()));
      }
      if (db) (void)WorkQueue(*db).renew_leases(worker, lease_seconds);
      std::this_thread::sleep_for(period);
    }
  });
}

/// A task rebuilt from its workload text, with the measurer that keeps its reference.
struct WorkerTask {
  std::unique_ptr<Measurer> measurer;  // null when the task could not be rebuilt
  std::string error;                   // why not
};

class QueueWorker {
 public:
  QueueWorker(TuningDatabase &db, const QueueWorkerOptions &options)
      : db_(db), queue_(db), options_(options), target_text_(options.target.to_string()), machine_(machine_description()) {
    retry_.seconds = options.reconnect_seconds;
    retry_.log = options.log;
  }

  Result<QueueWorkerSummary> run(const std::string &name) {
    const auto start = Clock::now();
    auto idle_since = Clock::now();
    const int limit = options_.claim_batch > 0 ? options_.claim_batch
                                               : std::max(1, options_.measure.jobs > 0
                                                                 ? options_.measure.jobs
                                                                 : static_cast<int>(std::thread::hardware_concurrency()));
    while (options_.max_candidates <= 0 || summary_.completed < options_.max_candidates) {
      int batch = limit;
      if (options_.max_candidates > 0)
        batch = static_cast<int>(std::min<int64_t>(batch, options_.max_candidates - summary_.completed));
      TESSEL_TRY(std::vector<QueuedCandidate> claimed,
                 retry_unreachable([&] { return queue_.claim(target_text_, name, batch, options_.lease_seconds); }, retry_));
      if (claimed.empty()) {
        if (options_.idle_exit_seconds > 0 && seconds_since(idle_since) >= options_.idle_exit_seconds) break;
        // Woken by the coordinator's next batch (PostgreSQL), or after poll_seconds to look
        // for leases that ran out.
        queue_.wait_for_work(options_.poll_seconds);
        continue;
      }
      ++summary_.claims;
      TESSEL_TRY_VOID(measure_claimed(claimed));
      idle_since = Clock::now();
    }
    summary_.wall_seconds = seconds_since(start);
    return summary_;
  }

 private:
  WorkerTask &task_for(const std::string &workload_key) {
    auto found = tasks_.find(workload_key);
    if (found != tasks_.end()) return found->second;
    WorkerTask &task = tasks_[workload_key];
    auto text = retry_unreachable([&] { return db_.workload_text(workload_key); }, retry_);
    if (!text.ok()) {
      task.error = text.error().message;
    } else if (!text.value()) {
      task.error = "workload " + workload_key + " is not in the database";
    } else if (auto rebuilt = graph_from_workload_text(**text); !rebuilt.ok()) {
      task.error = "cannot rebuild workload " + workload_key + ": " + rebuilt.error().message;
    } else if (auto made = make_task(rebuilt->graph, rebuilt->group); !made.ok()) {
      task.error = "cannot make the task of workload " + workload_key + ": " + made.error().message;
    } else {
      MeasureOptions measure = options_.measure;
      Target target = options_.target;
      if (measure.threads > 0) target.threads = measure.threads;
      task.measurer = std::make_unique<Measurer>(made.value(), target, measure);
    }
    return task;
  }

  Result<void> complete(const QueuedCandidate &candidate, const MeasureResult &result) {
    TuningRecord record;
    record.workload_key = candidate.workload_key;
    record.target = candidate.target;
    record.machine = machine_;
    record.schedule_text = candidate.schedule_text;
    record.schedule_hash = candidate.schedule_hash;
    record.status = result.status;
    record.error_message = result.status == RecordStatus::Ok ? std::string() : result.error;
    if (result.status == RecordStatus::Ok) record.median_seconds = result.median_seconds;
    record.timings_seconds = result.seconds;
    record.compile_seconds = result.compile_seconds;
    record.features = candidate.features;
    // What was measured is kept through a server restart: the completion is retried.
    TESSEL_TRY(const bool written, retry_unreachable([&] { return queue_.complete(candidate, record); }, retry_));
    ++summary_.completed;
    if (written) ++summary_.recorded;
    if (result.status != RecordStatus::Ok) ++summary_.failed;
    return {};
  }

  /// The claimed candidates, grouped by task: each task's schedules go to its measurer in
  /// one batch (compiled side by side, timed one at a time).
  Result<void> measure_claimed(const std::vector<QueuedCandidate> &claimed) {
    std::map<std::string, std::vector<const QueuedCandidate *>> by_task;
    for (const QueuedCandidate &candidate : claimed) {
      if (candidate.attempts > options_.max_attempts) {
        TESSEL_TRY_VOID(complete(candidate, measure_failure(RecordStatus::Crash,
                                                    "claimed " + std::to_string(candidate.attempts - 1) +
                                                        " times by workers that died before finishing it")));
        continue;
      }
      by_task[candidate.workload_key].push_back(&candidate);
    }
    for (const auto &[workload_key, candidates] : by_task) {
      WorkerTask &task = task_for(workload_key);
      if (!task.measurer) {
        for (const QueuedCandidate *c : candidates) TESSEL_TRY_VOID(complete(*c, measure_failure(RecordStatus::CompileError, task.error)));
        continue;
      }
      auto reference = task.measurer->prepare_reference();
      std::vector<Schedule> schedules;
      std::vector<const QueuedCandidate *> timed;
      for (const QueuedCandidate *c : candidates) {
        if (!reference.ok()) {
          TESSEL_TRY_VOID(complete(*c, measure_failure(RecordStatus::RuntimeError,
                                               "the built-in schedule failed on this worker: " + reference.error().message)));
        } else if (c->schedule_hash == kBuiltinScheduleHash) {
          TESSEL_TRY_VOID(complete(*c, reference.value()));
        } else if (auto schedule = parse_schedule(c->schedule_text); !schedule.ok()) {
          TESSEL_TRY_VOID(complete(*c, measure_failure(RecordStatus::CompileError, "malformed schedule: " + schedule.error().message)));
        } else if (schedule_hash(schedule.value()) != c->schedule_hash) {
          TESSEL_TRY_VOID(complete(*c, measure_failure(RecordStatus::CompileError, "the schedule text does not match its hash")));
        } else {
          schedules.push_back(schedule.value());
          timed.push_back(c);
        }
      }
      if (schedules.empty()) continue;
      const std::vector<MeasureResult> results = task.measurer->measure(schedules);
      for (size_t i = 0; i < timed.size(); ++i) TESSEL_TRY_VOID(complete(*timed[i], results[i]));
    }
    if (options_.log)
      options_.log("completed " + std::to_string(summary_.completed) + " candidates (" +
                   std::to_string(summary_.failed) + " failed, " + std::to_string(summary_.completed - summary_.recorded) +
                   " recorded by another worker first)");
    return {};
  }

  TuningDatabase &db_;
  WorkQueue queue_;
  const QueueWorkerOptions &options_;
  const std::string target_text_;
  const std::string machine_;
  std::map<std::string, WorkerTask> tasks_;
  QueueWorkerSummary summary_;
  RetryWindow retry_;
};

}  // namespace

Result<QueueWorkerSummary> run_queue_worker(const std::string &db_location, const QueueWorkerOptions &options) {
  RetryWindow retry;
  retry.seconds = options.reconnect_seconds;
  retry.log = options.log;
  auto db = retry_unreachable([&] { return TuningDatabase::open(db_location); }, retry);
  if (!db.ok()) return db.error();
  const std::string name = options.name.empty() ? default_worker_name() : options.name;
  TESSEL_TRY(ChildProcess heartbeat, start_heartbeat(db_location, name, options.lease_seconds));
  QueueWorker worker(db.value(), options);
  return worker.run(name);
}

}  // namespace tessel
