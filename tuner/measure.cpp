#include "tuner/measure.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>

#include "base/child_process.h"
#include "base/host_lock.h"
#include "base/spin_pool.h"
#include "tensor/npy.h"

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;

// A worker and its parent speak in bytes: the worker sends 'R' once it compiled, then waits
// for 'G' (the go to run); it ends with one result line (see encode()), sent early when the
// compile failed.
constexpr char kReady = 'R';
constexpr char kGo = 'G';
/// How long a worker that sent its result may take to exit.
constexpr double kExitGraceSeconds = 10;
/// Compiled workers waiting for their turn to be timed, at most (each holds its kernel).
constexpr size_t kMaxWaitingWorkers = 16;
/// How long one look at a compiling worker waits before looking at the next.
constexpr double kCompilePollSeconds = 0.002;

/// One line from a worker: "<status> <compile_s> <t1,t2,...|-> <message to end of line>".
std::string encode(const MeasureResult &r) {
  std::ostringstream out;
  out.precision(9);
  out << to_text(r.status) << ' ' << r.compile_seconds << ' ';
  if (r.seconds.empty()) out << '-';
  for (size_t i = 0; i < r.seconds.size(); ++i) out << (i ? "," : "") << r.seconds[i];
  std::string message = r.error;
  for (char &c : message)
    if (c == '\n') c = ' ';
  out << ' ' << message << '\n';
  return out.str();
}

MeasureResult decode(const std::string &line) {
  MeasureResult r;
  std::istringstream in(line);
  std::string status, timings;
  in >> status >> r.compile_seconds >> timings;
  if (status.empty()) return measure_failure(RecordStatus::Crash, "the worker reported nothing");
  std::getline(in, r.error);
  if (!r.error.empty() && r.error[0] == ' ') r.error.erase(0, 1);
  const Result<RecordStatus> parsed = parse_record_status(status);
  r.status = parsed.ok() ? parsed.value() : RecordStatus::Crash;
  if (timings != "-") {
    std::stringstream list(timings);
    std::string item;
    while (std::getline(list, item, ',')) r.seconds.push_back(std::stod(item));
  }
  r.median_seconds = median_of(r.seconds);
  return r;
}

/// What the worker sent after its ready mark.
std::string after_ready(const std::string &received) {
  return !received.empty() && received[0] == kReady ? received.substr(1) : received;
}

bool has_result_line(const std::string &received) { return after_ready(received).find('\n') != std::string::npos; }
bool is_ready(const std::string &received) { return !received.empty() && received[0] == kReady; }

/// The worker's verdict: its result line, or how it died. Reaps it either way.
MeasureResult collect(ChildProcess &worker, bool timed_out, const std::string &phase) {
  if (timed_out) {
    worker.kill();
    return measure_failure(RecordStatus::Timeout, "killed after the " + phase + " timeout");
  }
  const ChildExit exit = worker.wait(kExitGraceSeconds);
  const std::string line = after_ready(worker.received());
  if (line.find('\n') != std::string::npos) return decode(line.substr(0, line.find('\n')));
  return measure_failure(RecordStatus::Crash, "the worker ended without a result: " + exit.describe());
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

MeasureResult measure_failure(RecordStatus status, std::string why) {
  MeasureResult r;
  r.status = status;
  r.error = std::move(why);
  return r;
}

/// A candidate's worker process, and its result once it has one.
struct Measurer::Worker {
  std::optional<ChildProcess> process;
  Clock::time_point started;
  std::optional<MeasureResult> result;
};

Measurer::Measurer(Task task, Target target, MeasureOptions options)
    : task_(std::move(task)), target_(std::move(target)), options_(options) {
  if (options_.jobs <= 0) options_.jobs = std::max(1u, std::thread::hardware_concurrency());
  inputs_ = task_inputs(task_, 17);
  scratch_dir_ = (std::filesystem::temp_directory_path() /
                  ("tessel-measure-" + std::to_string(::getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(this))))
                     .string();
}

Measurer::~Measurer() {
  std::error_code ignored;
  std::filesystem::remove_all(scratch_dir_, ignored);
}

Result<MeasureResult> Measurer::prepare_reference() {
  if (!have_reference_ && !reference_error_) prepare_references({this});
  if (reference_error_) return *reference_error_;
  return baseline_;
}

void Measurer::prepare_references(const std::vector<Measurer *> &measurers) {
  // One worker per Measurer in each phase: its built-in schedule.
  auto run_phase = [](const std::vector<Measurer *> &group, bool reference_run, auto take) {
    std::vector<WorkerJob> jobs;
    for (Measurer *m : group) jobs.push_back({m, nullptr});
    const std::vector<MeasureResult> results = run_jobs(jobs, reference_run);
    for (size_t i = 0; i < group.size(); ++i) take(*group[i], results[i]);
  };
  std::vector<Measurer *> pending;
  for (Measurer *m : measurers) {
    if (m->have_reference_ || m->reference_error_) continue;
    std::error_code ec;
    std::filesystem::create_directories(m->scratch_dir_, ec);
    if (ec) m->reference_error_ = make_error(ErrorKind::Io, "cannot create " + m->scratch_dir_ + ": " + ec.message());
    else pending.push_back(m);
  }
  // The reference is measured like any candidate (schedule: the built-in one); the worker
  // also writes the outputs for the others to compare with. On a GPU those outputs come
  // from the CPU's built-in schedule, and the baseline is the GPU's default schedule,
  // checked against them like any candidate (a second phase: its workers are forked once
  // the reference outputs are loaded here, since they compare in the child).
  run_phase(pending, true, [](Measurer &m, const MeasureResult &r) { m.take_reference(r); });
  std::vector<Measurer *> gpu;
  for (Measurer *m : pending)
    if (!m->reference_error_ && !m->have_reference_) gpu.push_back(m);
  run_phase(gpu, false, [](Measurer &m, const MeasureResult &r) { m.take_gpu_baseline(r); });
}

void Measurer::take_reference(const MeasureResult &run) {
  const bool gpu = target_.kind == Target::Kind::Cuda;
  if (run.status != RecordStatus::Ok) {
    reference_error_ = make_error(std::string(gpu ? "the CPU reference failed (" : "the built-in schedule failed (") +
                                  to_text(run.status) + "): " + run.error);
    return;
  }
  for (size_t i = 0; i < task_.signature.outputs.size(); ++i) {
    Result<Tensor> output = read_npy(reference_path(i));
    if (!output.ok()) {
      reference_error_ = output.error();
      return;
    }
    reference_.push_back(std::move(output).value());
  }
  baseline_ = run;
  have_reference_ = !gpu;  // a GPU task's baseline comes from its second phase
}

void Measurer::take_gpu_baseline(const MeasureResult &run) {
  if (run.status != RecordStatus::Ok) {
    reference_error_ = make_error(std::string("the default GPU schedule failed (") + to_text(run.status) +
                                  "): " + run.error);
    return;
  }
  baseline_ = run;
  have_reference_ = true;
}

std::vector<MeasureResult> Measurer::measure(const std::vector<Schedule> &schedules) {
  if (auto ref = prepare_reference(); !ref.ok())
    return std::vector<MeasureResult>(schedules.size(),
                                      measure_failure(RecordStatus::RuntimeError, "no reference: " + ref.error().message));
  std::vector<const Schedule *> candidates;
  for (const Schedule &s : schedules) candidates.push_back(&s);
  return run_workers(candidates, false);
}

std::string Measurer::reference_path(size_t output) const {
  return scratch_dir_ + "/reference_" + std::to_string(output) + ".npy";
}

std::vector<MeasureResult> Measurer::run_workers(const std::vector<const Schedule *> &schedules, bool reference_run) {
  std::vector<WorkerJob> jobs;
  for (const Schedule *s : schedules) jobs.push_back({this, s});
  return run_jobs(jobs, reference_run);
}

std::vector<MeasureResult> Measurer::run_jobs(const std::vector<WorkerJob> &jobs, bool reference_run) {
  std::vector<MeasureResult> results(jobs.size());
  if (jobs.empty()) return results;
  const size_t at_once = static_cast<size_t>(std::max(1, jobs.front().measurer->options_.jobs));
  // Every worker inherits the runtime compiled here; a failure only leaves each worker to
  // compile its own, as it would without this.
  static_cast<void>(JitKernel::prepare_shared_runtime());
  MeasurePhaseSeconds &phases = const_cast<Measurer *>(jobs.front().measurer)->phase_seconds_;
  // Workers of a chunk compile `at_once` at a time, the next one forked as soon as one is
  // ready (a slow compile holds one core, not its whole group), and wait; then they are
  // timed. A chunk is bounded: each waiting worker holds its compiled kernel.
  const size_t chunk = std::max<size_t>(at_once, kMaxWaitingWorkers);
  for (size_t begin = 0; begin < jobs.size(); begin += chunk) {
    const size_t end = std::min(jobs.size(), begin + chunk);
    std::vector<Worker> workers(end - begin);
    const auto build_start = Clock::now();
    std::vector<size_t> compiling;
    for (size_t next = begin; next < end || !compiling.empty();) {
      for (; next < end && compiling.size() < at_once; ++next) {
        workers[next - begin] = jobs[next].measurer->start_worker(jobs[next].schedule, reference_run);
        if (!workers[next - begin].result) compiling.push_back(next);
      }
      for (auto it = compiling.begin(); it != compiling.end();) {
        if (jobs[*it].measurer->poll_compile(workers[*it - begin], kCompilePollSeconds)) it = compiling.erase(it);
        else ++it;
      }
    }
    phases.build += seconds_since(build_start);
    // Timing runs one worker at a time, with no compile beside it, and no other tessel
    // process of this machine timing at once (a second tuner, `tessel worker`s). Without
    // the lock file the run still times, only unguarded.
    {
      const auto lock_start = Clock::now();
      auto host_lock = HostTimingLock::acquire();
      phases.lock_wait += seconds_since(lock_start);
      const auto run_start = Clock::now();
      for (size_t i = begin; i < end; ++i)
        if (!workers[i - begin].result) jobs[i].measurer->await_run(workers[i - begin]);
      phases.run += seconds_since(run_start);
    }
    for (size_t i = begin; i < end; ++i) results[i] = *workers[i - begin].result;
  }
  return results;
}

Measurer::Worker Measurer::start_worker(const Schedule *schedule, bool reference_run) const {
  Worker w;
  w.started = Clock::now();
  auto process = ChildProcess::start([&](ParentLink &parent) { work(schedule, reference_run, parent); });
  if (!process.ok()) w.result = measure_failure(RecordStatus::Crash, "cannot start a worker: " + process.error().message);
  else w.process = std::move(process).value();
  return w;
}

bool Measurer::poll_compile(Worker &w, double wait_seconds) const {
  const double left = options_.compile_timeout_seconds - seconds_since(w.started);
  if (left <= 0) {
    w.result = collect(*w.process, true, "compile");
    return true;
  }
  const auto got = w.process->receive_until(
      [](const std::string &received) { return is_ready(received) || has_result_line(received); },
      std::min(wait_seconds, left));
  if (got == ChildProcess::Receive::TimedOut) return false;  // still compiling (or out of time next call)
  if (got == ChildProcess::Receive::Enough && is_ready(w.process->received())) return true;
  w.result = collect(*w.process, false, "compile");
  return true;
}

void Measurer::await_run(Worker &w) const {
  // A worker that died cannot take the go; receive_until then finds its end closed.
  static_cast<void>(w.process->send(std::string(1, kGo)));
  const auto got = w.process->receive_until(has_result_line, options_.run_timeout_seconds);
  w.result = collect(*w.process, got == ChildProcess::Receive::TimedOut, "run");
}

void Measurer::work(const Schedule *schedule, bool reference_run, ParentLink &parent) const {
  const auto start = Clock::now();
  // The pool is made in this process (the parent never runs a kernel), so it takes the count.
  if (options_.threads > 0) spin_pool_set_threads(options_.threads);
  // The reference of a GPU task is computed on the host.
  auto kernel = compile_task(task_, schedule, reference_run ? Target{} : target_);
  const double compile_seconds = seconds_since(start);
  if (!kernel.ok()) {
    MeasureResult r = measure_failure(RecordStatus::CompileError, kernel.error().message);
    r.compile_seconds = compile_seconds;
    parent.send(encode(r));
    return;
  }
  parent.send(std::string(1, kReady));
  if (!parent.receive(1)) return;  // the parent is gone
  if (!reference_run && options_.inject_fault == "crash") ::raise(SIGSEGV);
  if (!reference_run && options_.inject_fault == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
  MeasureResult r = check_and_time(kernel.value(), reference_run);
  r.compile_seconds = compile_seconds;
  parent.send(encode(r));
  // Ends here, past the kernel's destructors: freeing a JIT module or a GPU context would
  // only make the parent wait for the exit.
  ::_exit(0);
}

MeasureResult Measurer::check_and_time(const JitKernel &kernel, bool reference_run) const {
  auto out = run_task(kernel, task_, inputs_);
  if (!out.ok()) return measure_failure(RecordStatus::RuntimeError, out.error().message);
  if (reference_run) {
    if (auto wrote = write_reference(out.value()); !wrote.ok())
      return measure_failure(RecordStatus::RuntimeError, wrote.error().message);
  } else if (const double diff = max_relative_difference(out.value(), reference_); !(diff <= options_.tolerance)) {
    return measure_failure(RecordStatus::WrongResult,
                   "max relative difference " + std::to_string(diff) + " from the reference");
  }
  TimingOptions timing_options = options_.timing;
  if (!reference_run && best_seconds_ > 0 && options_.early_stop_factor > 0) {
    timing_options.stop_above_seconds = best_seconds_ * options_.early_stop_factor;
    timing_options.shorten_above_seconds = best_seconds_;
  }
  auto timing = time_task(kernel, task_, inputs_, timing_options);
  if (!timing.ok()) return measure_failure(RecordStatus::RuntimeError, timing.error().message);
  MeasureResult r;
  r.seconds = timing->seconds;
  return r;
}

Result<void> Measurer::write_reference(const std::vector<Tensor> &outputs) const {
  for (size_t o = 0; o < outputs.size(); ++o) TESSEL_TRY_VOID(write_npy(reference_path(o), outputs[o]));
  return {};
}

}  // namespace tessel
