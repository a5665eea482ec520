#include "tuner/candidate_worker.h"

#include <sstream>

#include "tuner/kernel_timing.h"

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kReady = 'R';
constexpr char kGo = 'G';
/// How long a worker that sent its result may take to exit.
constexpr double kExitGraceSeconds = 10;

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

void report_ready(ParentLink &parent) { parent.send(std::string(1, kReady)); }

bool await_go(ParentLink &parent) { return parent.receive(1).has_value(); }

void report_result(ParentLink &parent, const MeasureResult &result) { parent.send(encode(result)); }

bool poll_compiled(CandidateWorker &w, double wait_seconds) {
  const double left = w.compile_timeout_seconds - seconds_since(w.started);
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

void run_to_result(CandidateWorker &w) {
  // A worker that died cannot take the go; receive_until then finds its end closed.
  static_cast<void>(w.process->send(std::string(1, kGo)));
  const auto got = w.process->receive_until(has_result_line, w.run_timeout_seconds);
  w.result = collect(*w.process, got == ChildProcess::Receive::TimedOut, "run");
}

}  // namespace tessel
