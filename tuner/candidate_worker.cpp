#include "tuner/candidate_worker.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <sstream>

#include "tuner/kernel_timing.h"

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;

/// A command: its letter and the slot in ten digits, then a newline (fixed size, so the
/// worker reads exactly one).
constexpr size_t kCommandBytes = 12;
constexpr char kCompile = 'C';
constexpr char kGo = 'G';
/// How long a worker that stopped talking may take to exit.
constexpr double kExitGraceSeconds = 10;
/// How long one look at a compiling worker waits before looking at the next.
constexpr double kCompilePollSeconds = 0.002;

std::string command(char kind, size_t slot) {
  char text[kCommandBytes + 1];
  std::snprintf(text, sizeof text, "%c%010zu\n", kind, slot);
  return std::string(text, kCommandBytes);
}

/// "<status> <compile_s> <t1,t2,...|-> <message to end of line>".
std::string encode(const MeasureResult &r) {
  std::ostringstream out;
  out.precision(9);
  out << to_text(r.status) << ' ' << r.compile_seconds << ' ';
  if (r.seconds.empty()) out << '-';
  for (size_t i = 0; i < r.seconds.size(); ++i) out << (i ? "," : "") << r.seconds[i];
  std::string message = r.error;
  for (char &c : message)
    if (c == '\n') c = ' ';
  out << ' ' << message;
  return out.str();
}

MeasureResult decode(std::istream &in) {
  MeasureResult r;
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
    while (std::getline(list, item, ',')) r.seconds.push_back(std::strtod(item.c_str(), nullptr));
  }
  r.median_seconds = median_of(r.seconds);
  return r;
}

std::string done_line(size_t slot, const MeasureResult &r) {
  return "D " + std::to_string(slot) + " " + encode(r) + "\n";
}

/// The worker's life: compile and run the jobs it is told to, until the parent hangs up.
void serve(const std::vector<BuildJob> &jobs, ParentLink &parent) {
  std::vector<std::function<MeasureResult()>> compiled(jobs.size());
  while (std::optional<std::string> received = parent.receive(kCommandBytes)) {
    const char kind = (*received)[0];
    const size_t slot = std::strtoull(received->c_str() + 1, nullptr, 10);
    if (slot >= jobs.size()) return;
    if (kind == kCompile) {
      CompiledCandidate candidate = jobs[slot].compile();
      if (candidate.failed) {
        parent.send(done_line(slot, *candidate.failed));
      } else {
        compiled[slot] = std::move(candidate.run);
        parent.send("R " + std::to_string(slot) + "\n");
      }
    } else if (kind == kGo) {
      parent.send(done_line(slot, compiled[slot] ? compiled[slot]()
                                                 : measure_failure(RecordStatus::Crash, "run before its compile")));
    } else {
      return;
    }
  }
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

MeasureResult measure_failure(RecordStatus status, std::string why) {
  MeasureResult r;
  r.status = status;
  r.error = std::move(why);
  return r;
}

Result<std::shared_ptr<WorkerProcess>> WorkerProcess::start(const std::vector<BuildJob> &jobs) {
  // The child serves from its copy of `jobs`, made by the fork.
  TESSEL_TRY(ChildProcess process, ChildProcess::start([&jobs](ParentLink &parent) { serve(jobs, parent); }));
  return std::shared_ptr<WorkerProcess>(new WorkerProcess(std::move(process)));
}

bool WorkerProcess::compile(size_t slot) { return alive_ && process_.send(command(kCompile, slot)).ok(); }

bool WorkerProcess::go(size_t slot) { return alive_ && process_.send(command(kGo, slot)).ok(); }

WorkerProcess::Message WorkerProcess::next(double timeout_seconds) {
  Message message;
  const auto has_line = [this](const std::string &received) {
    return received.find('\n', consumed_) != std::string::npos;
  };
  const ChildProcess::Receive got =
      alive_ ? process_.receive_until(has_line, timeout_seconds) : ChildProcess::Receive::Closed;
  if (got == ChildProcess::Receive::TimedOut) return message;
  if (got == ChildProcess::Receive::Enough) {
    const std::string &received = process_.received();
    const size_t end = received.find('\n', consumed_);
    std::istringstream line(received.substr(consumed_, end - consumed_));
    consumed_ = end + 1;
    std::string kind;
    line >> kind >> message.slot;
    line.get();  // the space before a result
    if (kind == "R") {
      message.kind = Message::Kind::Ready;
      return message;
    }
    if (kind == "D") {
      message.kind = Message::Kind::Done;
      message.result = decode(line);
      return message;
    }
    kill();  // it said something else: nothing it says can be trusted
    message.kind = Message::Kind::Died;
    message.result = measure_failure(RecordStatus::Crash, "the worker sent an unknown message: " + kind);
    return message;
  }
  message.kind = Message::Kind::Died;
  const ChildExit exit = alive_ ? process_.wait(kExitGraceSeconds) : process_.kill();
  alive_ = false;
  message.result = measure_failure(RecordStatus::Crash, "the worker ended without a result: " + exit.describe());
  return message;
}

void WorkerProcess::kill() {
  process_.kill();
  alive_ = false;
}

std::vector<CandidateWorker> compile_in_workers(const std::vector<BuildJob> &jobs, size_t at_once) {
  std::vector<CandidateWorker> workers(jobs.size());
  std::deque<size_t> waiting;
  for (size_t i = 0; i < jobs.size(); ++i) {
    workers[i].job = jobs[i];
    workers[i].slot = i;
    waiting.push_back(i);
  }
  struct Compiler {
    std::shared_ptr<WorkerProcess> process;
    std::optional<size_t> slot;  // the job it compiles now
    bool used = false;           // it compiled a job before
  };
  std::vector<Compiler> compilers;
  // A process gone: its candidates compiled but not yet run are compiled again elsewhere.
  const auto lose = [&](const std::shared_ptr<WorkerProcess> &process) {
    for (size_t i = 0; i < workers.size(); ++i)
      if (workers[i].process == process && !workers[i].result) {
        workers[i].process.reset();
        waiting.push_back(i);
      }
  };
  const auto assign = [&](Compiler &c) {
    const size_t slot = waiting.front();
    waiting.pop_front();
    workers[slot].started = Clock::now();
    if (c.process->compile(slot) || !c.used) {
      // A new worker that cannot take it died starting: its next message says how, and the
      // job takes that as its result (else a worker that cannot start would be forked forever).
      c.slot = slot;
      c.used = true;
      return;
    }
    // A worker that died idle (killed from outside): the job goes to another.
    waiting.push_front(slot);
    c.process->kill();
    lose(c.process);
  };
  while (!waiting.empty() || !compilers.empty()) {
    for (Compiler &c : compilers)
      if (!c.slot && !waiting.empty() && c.process->alive()) assign(c);
    compilers.erase(std::remove_if(compilers.begin(), compilers.end(),
                                   [](const Compiler &c) { return !c.process->alive(); }),
                    compilers.end());
    while (compilers.size() < at_once && !waiting.empty()) {
      auto started = WorkerProcess::start(jobs);
      if (!started.ok()) {
        workers[waiting.front()].result =
            measure_failure(RecordStatus::Crash, "cannot start a worker: " + started.error().message);
        waiting.pop_front();
        continue;
      }
      compilers.push_back({std::move(started).value(), std::nullopt, false});
      assign(compilers.back());
    }
    for (auto it = compilers.begin(); it != compilers.end();) {
      if (!it->slot) {  // idle, with nothing left to hand out
        it = compilers.erase(it);
        continue;
      }
      CandidateWorker &w = workers[*it->slot];
      WorkerProcess::Message m = it->process->next(kCompilePollSeconds);
      if (m.kind == WorkerProcess::Message::Kind::TimedOut && seconds_since(w.started) >= w.job.compile_timeout_seconds) {
        it->process->kill();
        m.kind = WorkerProcess::Message::Kind::Died;
        m.result = measure_failure(RecordStatus::Timeout, "killed after the compile timeout");
      }
      switch (m.kind) {
        case WorkerProcess::Message::Kind::TimedOut: ++it; continue;
        case WorkerProcess::Message::Kind::Ready: w.process = it->process; break;
        case WorkerProcess::Message::Kind::Done: w.result = m.result; break;
        case WorkerProcess::Message::Kind::Died:
          w.result = m.result;
          lose(it->process);
          it = compilers.erase(it);
          continue;
      }
      it->slot.reset();
      ++it;
    }
  }
  return workers;
}

void run_to_result(CandidateWorker &w) {
  if (w.result) return;
  if (!w.process || !w.process->alive()) {
    std::vector<CandidateWorker> again = compile_in_workers({w.job}, 1);
    if (again[0].result) {
      w.result = again[0].result;
      return;
    }
    w.process = again[0].process;
    w.slot = again[0].slot;
  }
  // A worker that died cannot take the go; its next message says how it ended.
  static_cast<void>(w.process->go(w.slot));
  WorkerProcess::Message m = w.process->next(w.job.run_timeout_seconds);
  switch (m.kind) {
    case WorkerProcess::Message::Kind::Done:
      w.result = m.result;
      // A kernel that failed may have left the process's state bad for the next ones (its
      // runtime, memory it wrote): they are compiled again elsewhere rather than blamed.
      if (w.result->status != RecordStatus::Ok) w.process->kill();
      return;
    case WorkerProcess::Message::Kind::Died: w.result = m.result; return;
    case WorkerProcess::Message::Kind::TimedOut:
      w.process->kill();
      w.result = measure_failure(RecordStatus::Timeout, "killed after the run timeout");
      return;
    case WorkerProcess::Message::Kind::Ready:
      w.process->kill();
      w.result = measure_failure(RecordStatus::Crash, "the worker said ready where a result was due");
      return;
  }
}

}  // namespace tessel
