#include "tuner/measure.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "base/spin_pool.h"
#include "tensor/npy.h"

namespace tessel {
namespace {

/// Compiled workers waiting for their turn to be timed, at most (each holds its kernel).
constexpr size_t kMaxWaitingWorkers = 16;

}  // namespace

Measurer::Measurer(Task task, Target target, MeasureOptions options)
    : task_(std::move(task)), target_(std::move(target)), options_(options) {
  if (options_.jobs <= 0) options_.jobs = std::max(1u, std::thread::hardware_concurrency());
  if (!options_.builder) options_.builder = std::make_shared<LocalBuilder>(options_.jobs);
  if (!options_.runner) options_.runner = std::make_shared<LocalRunner>();
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
  std::vector<WorkerJob> jobs;
  for (const Schedule &s : schedules) jobs.push_back({this, &s});
  return run_jobs(jobs, false);
}

std::string Measurer::reference_path(size_t output) const {
  return scratch_dir_ + "/reference_" + std::to_string(output) + ".npy";
}

std::vector<MeasureResult> Measurer::run_jobs(const std::vector<WorkerJob> &jobs, bool reference_run) {
  std::vector<MeasureResult> results(jobs.size());
  if (jobs.empty()) return results;
  Measurer &first = *const_cast<Measurer *>(jobs.front().measurer);
  // A chunk is bounded: each worker waiting for its run holds its compiled kernel.
  const size_t chunk = std::max<size_t>(first.options_.jobs, kMaxWaitingWorkers);
  for (size_t begin = 0; begin < jobs.size(); begin += chunk) {
    const size_t end = std::min(jobs.size(), begin + chunk);
    std::vector<BuildJob> build_jobs;
    for (size_t i = begin; i < end; ++i) {
      const Measurer *m = jobs[i].measurer;
      const Schedule *schedule = jobs[i].schedule;
      build_jobs.push_back({[m, schedule, reference_run] { return m->compile_candidate(schedule, reference_run); },
                            m->options_.compile_timeout_seconds, m->options_.run_timeout_seconds});
    }
    const auto build_start = std::chrono::steady_clock::now();
    std::vector<CandidateWorker> workers = first.options_.builder->build(build_jobs);
    first.phase_seconds_.build +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
    first.options_.runner->run(workers, first.phase_seconds_);
    for (size_t i = begin; i < end; ++i) results[i] = *workers[i - begin].result;
  }
  return results;
}

CompiledCandidate Measurer::compile_candidate(const Schedule *schedule, bool reference_run) const {
  const auto start = std::chrono::steady_clock::now();
  // The pool is made in the worker (the parent never runs a kernel), so it takes the count.
  if (options_.threads > 0) spin_pool_set_threads(options_.threads);
  // The reference of a GPU task is computed on the host.
  auto kernel = compile_task(task_, schedule, reference_run ? Target{} : target_);
  const double compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CompiledCandidate compiled;
  if (!kernel.ok()) {
    compiled.failed = measure_failure(RecordStatus::CompileError, kernel.error().message);
    compiled.failed->compile_seconds = compile_seconds;
    return compiled;
  }
  auto kept = std::make_shared<JitKernel>(std::move(kernel).value());
  compiled.run = [this, kept, reference_run, compile_seconds] {
    if (!reference_run && options_.inject_fault == "crash") ::raise(SIGSEGV);
    if (!reference_run && options_.inject_fault == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
    MeasureResult r = check_and_time(*kept, reference_run);
    r.compile_seconds = compile_seconds;
    return r;
  };
  return compiled;
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
