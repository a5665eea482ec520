#include "tuner/measure.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include "tensor/npy.h"

namespace tessel {

const char *to_text(MeasureStatus status) {
  switch (status) {
    case MeasureStatus::Ok: return "ok";
    case MeasureStatus::CompileError: return "compile_error";
    case MeasureStatus::RuntimeError: return "runtime_error";
    case MeasureStatus::WrongResult: return "wrong_result";
    case MeasureStatus::Timeout: return "timeout";
    case MeasureStatus::Crash: return "crash";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

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
  std::getline(in, r.error);
  if (!r.error.empty() && r.error[0] == ' ') r.error.erase(0, 1);
  static const MeasureStatus all[] = {MeasureStatus::Ok, MeasureStatus::CompileError, MeasureStatus::RuntimeError,
                                      MeasureStatus::WrongResult, MeasureStatus::Timeout, MeasureStatus::Crash};
  r.status = MeasureStatus::Crash;
  for (MeasureStatus s : all)
    if (status == to_text(s)) r.status = s;
  if (timings != "-") {
    std::stringstream list(timings);
    std::string item;
    while (std::getline(list, item, ',')) r.seconds.push_back(std::stod(item));
  }
  r.median_seconds = median_of(r.seconds);
  if (status.empty()) {
    r.status = MeasureStatus::Crash;
    r.error = "the worker reported nothing";
  }
  return r;
}

void write_all(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

/// A running worker: its pid and pipes; `output` accumulates what it wrote.
struct Worker {
  pid_t pid = -1;
  int from_child = -1, to_child = -1;
  std::string output;
  bool ready = false, finished = false;
  Clock::time_point started;
  MeasureResult result;
};

/// Reads what is available; false at end of file.
bool drain(Worker &w) {
  char buf[4096];
  const ssize_t n = ::read(w.from_child, buf, sizeof(buf));
  if (n <= 0) return false;
  w.output.append(buf, static_cast<size_t>(n));
  return true;
}

/// Waits until the worker has sent `marker` (or a full result line, or exited), at most
/// `timeout` seconds. Returns false on timeout.
bool wait_for(Worker &w, double timeout, bool want_result) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout);
  while (true) {
    const bool have_ready = !w.output.empty() && w.output[0] == 'R';
    const std::string body = have_ready ? w.output.substr(1) : w.output;
    if (body.find('\n') != std::string::npos) return true;  // a result line
    if (have_ready && !want_result) return true;
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{w.from_child, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min(left * 1000, 1000.0)) + 1);
    if (ready > 0 && !drain(w)) return true;  // the worker exited
  }
}

/// The worker's verdict after it exited: its result line, or how it died.
MeasureResult collect(Worker &w, bool timed_out, const std::string &phase) {
  if (timed_out) ::kill(w.pid, SIGKILL);
  int status = 0;
  ::waitpid(w.pid, &status, 0);
  ::close(w.from_child);
  ::close(w.to_child);
  if (timed_out) {
    MeasureResult r;
    r.status = MeasureStatus::Timeout;
    r.error = "killed after the " + phase + " timeout";
    return r;
  }
  std::string line = !w.output.empty() && w.output[0] == 'R' ? w.output.substr(1) : w.output;
  if (line.find('\n') != std::string::npos) return decode(line.substr(0, line.find('\n')));
  MeasureResult r;
  r.status = MeasureStatus::Crash;
  if (WIFSIGNALED(status)) r.error = std::string("the worker died of signal ") + strsignal(WTERMSIG(status));
  else r.error = "the worker exited with status " + std::to_string(WEXITSTATUS(status)) + " without a result";
  return r;
}

}  // namespace

Measurer::Measurer(Task task, Target target, MeasureOptions options)
    : task_(std::move(task)), target_(std::move(target)), options_(options) {
  if (options_.jobs <= 0) options_.jobs = std::max(1u, std::thread::hardware_concurrency());
  // A worker that dies before reading its go signal must not take the tuner down with it.
  ::signal(SIGPIPE, SIG_IGN);
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
  if (have_reference_) return baseline_;
  std::error_code ec;
  std::filesystem::create_directories(scratch_dir_, ec);
  if (ec) return make_error("cannot create " + scratch_dir_ + ": " + ec.message());
  // The reference is measured like any candidate (schedule: the built-in one); the worker
  // also writes the outputs for the others to compare with. On a GPU those outputs come
  // from the CPU's built-in schedule, and the baseline is the GPU's default schedule,
  // checked against them like any candidate.
  const bool gpu = target_.kind == Target::Kind::Cuda;
  baseline_ = run_workers({nullptr}, true).front();
  if (baseline_.status != MeasureStatus::Ok)
    return make_error(std::string(gpu ? "the CPU reference failed (" : "the built-in schedule failed (") +
                      to_text(baseline_.status) + "): " + baseline_.error);
  for (size_t i = 0; i < task_.signature.outputs.size(); ++i) {
    auto t = read_npy(scratch_dir_ + "/reference_" + std::to_string(i) + ".npy");
    if (!t.ok()) return t.error();
    reference_.push_back(t.value());
  }
  if (gpu) {
    baseline_ = run_workers({nullptr}, false).front();
    if (baseline_.status != MeasureStatus::Ok)
      return make_error(std::string("the default GPU schedule failed (") + to_text(baseline_.status) +
                        "): " + baseline_.error);
  }
  have_reference_ = true;
  return baseline_;
}

std::vector<MeasureResult> Measurer::measure(const std::vector<Schedule> &schedules) {
  if (auto ref = prepare_reference(); !ref.ok()) {
    MeasureResult r;
    r.status = MeasureStatus::RuntimeError;
    r.error = "no reference: " + ref.error().message;
    return std::vector<MeasureResult>(schedules.size(), r);
  }
  std::vector<const Schedule *> candidates;
  for (const Schedule &s : schedules) candidates.push_back(&s);
  return run_workers(candidates, false);
}

std::vector<MeasureResult> Measurer::run_workers(const std::vector<const Schedule *> &schedules, bool reference_run) {
  const size_t count = schedules.size();
  std::vector<MeasureResult> results(count);
  for (size_t begin = 0; begin < count; begin += options_.jobs) {
    const size_t end = std::min(count, begin + static_cast<size_t>(options_.jobs));
    std::vector<Worker> workers(end - begin);
    for (size_t i = begin; i < end; ++i) {
      Worker &w = workers[i - begin];
      int up[2], down[2];
      if (::pipe(up) != 0 || ::pipe(down) != 0) {
        w.finished = true;
        w.result.status = MeasureStatus::Crash;
        w.result.error = "pipe() failed";
        continue;
      }
      std::fflush(nullptr);
      w.pid = ::fork();
      if (w.pid == 0) {
        // Worker: compile, say ready, wait for the go, check and time, report, exit.
        ::close(up[0]);
        ::close(down[1]);
        // A crash must end the worker plainly (the parent reads the signal), whatever
        // handlers the parent process installed.
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, SIG_DFL);
        const Schedule *schedule = schedules[i];
        MeasureResult r;
        const auto start = Clock::now();
        // The reference of a GPU task is computed on the host.
        auto kernel = compile_task(task_, schedule, reference_run ? Target{} : target_);
        r.compile_seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (!kernel.ok()) {
          r.status = MeasureStatus::CompileError;
          r.error = kernel.error().message;
          write_all(up[1], encode(r));
          ::_exit(0);
        }
        write_all(up[1], "R");
        char go = 0;
        if (::read(down[0], &go, 1) != 1) ::_exit(0);
        if (!reference_run && options_.inject_fault == "crash") ::raise(SIGSEGV);
        if (!reference_run && options_.inject_fault == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
        auto out = run_task(kernel.value(), task_, inputs_);
        if (!out.ok()) {
          r.status = MeasureStatus::RuntimeError;
          r.error = out.error().message;
        } else if (reference_run) {
          for (size_t o = 0; o < out->size(); ++o)
            if (auto wrote = write_npy(scratch_dir_ + "/reference_" + std::to_string(o) + ".npy", (*out)[o]); !wrote.ok()) {
              r.status = MeasureStatus::RuntimeError;
              r.error = wrote.error().message;
            }
        } else {
          const double diff = max_relative_difference(out.value(), reference_);
          if (!(diff <= options_.tolerance)) {
            r.status = MeasureStatus::WrongResult;
            r.error = "max relative difference " + std::to_string(diff) + " from the reference";
          }
        }
        if (r.status == MeasureStatus::Ok) {
          auto timing = time_task(kernel.value(), task_, inputs_, options_.timing);
          if (!timing.ok()) {
            r.status = MeasureStatus::RuntimeError;
            r.error = timing.error().message;
          } else {
            r.seconds = timing->seconds;
          }
        }
        write_all(up[1], encode(r));
        ::_exit(0);
      }
      ::close(up[1]);
      ::close(down[0]);
      w.from_child = up[0];
      w.to_child = down[1];
      w.started = Clock::now();
      if (w.pid < 0) {
        ::close(w.from_child);
        ::close(w.to_child);
        w.finished = true;
        w.result.status = MeasureStatus::Crash;
        w.result.error = "fork() failed";
      }
    }
    // Compilation runs in parallel: wait for every worker to be ready (or done).
    for (Worker &w : workers) {
      if (w.finished) continue;
      const double left = options_.compile_timeout_seconds -
                          std::chrono::duration<double>(Clock::now() - w.started).count();
      const bool in_time = wait_for(w, std::max(0.0, left), false);
      const bool ready = in_time && !w.output.empty() && w.output[0] == 'R';
      if (!ready) {
        w.result = collect(w, !in_time, "compile");
        w.finished = true;
      }
    }
    // Timing runs one worker at a time, with no compile beside it.
    for (Worker &w : workers) {
      if (w.finished) continue;
      write_all(w.to_child, "G");
      const bool in_time = wait_for(w, options_.run_timeout_seconds, true);
      w.result = collect(w, !in_time, "run");
      w.finished = true;
    }
    for (size_t i = begin; i < end; ++i) results[i] = workers[i - begin].result;
  }
  return results;
}

}  // namespace tessel
