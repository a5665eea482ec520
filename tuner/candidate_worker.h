#pragma once
// Measuring workers: forked processes that compile candidates and then, one at a time, check
// and time them, so a kernel that crashes, hangs or runs out of memory costs its own record,
// not the tuning run. One process compiles several candidates of a batch in turn and keeps
// each compiled kernel until its go: a fork of the tuner's large process pays for every page
// its child then writes (copy-on-write faults), most of them in its first compile; one
// child per candidate compiled 1.6x slower than four per child (bench/results/
// trial_time.md). A candidate whose process dies before its go (another's kernel crashed
// there) is compiled again in a process of its own.
//
// Worker and parent speak in lines: the parent sends "C <slot>" (compile) and "G <slot>"
// (go); the worker answers "R <slot>" once compiled, and "D <slot> <result>" with a
// candidate's final result (after its run, or at once when its compile failed).
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/child_process.h"
#include "tuner/measure_result.h"

namespace tessel {

/// A candidate compiled inside a worker: its final result when the compile failed, else
/// what checks and times its kernel (the kernel lives in the closure).
struct CompiledCandidate {
  std::optional<MeasureResult> failed;
  std::function<MeasureResult()> run;
};

/// What a worker does for one candidate when told to compile it.
using CompileStep = std::function<CompiledCandidate()>;

/// One candidate for a Builder: how it compiles and its time limits.
struct BuildJob {
  CompileStep compile;
  double compile_timeout_seconds = 120;
  double run_timeout_seconds = 20;
};

/// The parent's end of one worker process, shared by the candidates compiled in it.
class WorkerProcess {
 public:
  /// Forks a worker that can compile any of `jobs` (by index, its slot): the child keeps the
  /// copy of them it was forked with.
  static Result<std::shared_ptr<WorkerProcess>> start(const std::vector<BuildJob> &jobs);

  /// Sends a command; false when the worker is gone.
  bool compile(size_t slot);
  bool go(size_t slot);

  /// What the worker said next.
  struct Message {
    enum class Kind { Ready, Done, Died, TimedOut } kind = Kind::TimedOut;
    size_t slot = 0;
    MeasureResult result;  // Done: the candidate's; Died: a crash saying how the worker ended
  };
  /// Waits up to `timeout_seconds` for the worker's next message.
  Message next(double timeout_seconds);

  bool alive() const { return alive_; }
  /// Kills the worker now; the candidates compiled there are lost.
  void kill();

 private:
  explicit WorkerProcess(ChildProcess process) : process_(std::move(process)) {}
  ChildProcess process_;
  size_t consumed_ = 0;  // bytes of process_.received() already read as messages
  bool alive_ = true;
};

/// A candidate handed from a Builder to a Runner: compiled in `process` and waiting for its
/// go, or finished with its result (its compile failed, crashed or ran past its timeout).
struct CandidateWorker {
  std::shared_ptr<WorkerProcess> process;
  size_t slot = 0;  // the candidate's index among its process's jobs
  BuildJob job;     // to compile it again if its process dies before its go
  std::chrono::steady_clock::time_point started;
  std::optional<MeasureResult> result;
};

/// Compiles `jobs` in at most `at_once` worker processes at a time; each process takes the
/// next job as soon as it finished one. A job whose compile kills its process (or runs past
/// its timeout) gets that result; the others compiled there are compiled again elsewhere.
std::vector<CandidateWorker> compile_in_workers(const std::vector<BuildJob> &jobs, size_t at_once);

/// Gives a compiled candidate the go and waits (its run timeout) for its result; compiles it
/// again first, alone in a new worker, when its process has died.
void run_to_result(CandidateWorker &worker);

}  // namespace tessel
