#pragma once
// Work in a forked child process, so that a crash, a hang or a library that does not survive
// fork (CUDA) costs the child, not the caller. The parent talks to the child over one
// socket pair; it never leaves a zombie, and a child past its time is killed and reaped.
// The child runs only the function it was given and then _exits: it never returns into the
// parent's stack, runs no atexit handlers and flushes none of the parent's stdio buffers.
#include <sys/types.h>

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace tessel {

/// No time limit.
constexpr double kNoTimeout = std::numeric_limits<double>::infinity();

/// How a child process ended.
struct ChildExit {
  enum class Kind {
    Finished,  // its function returned (exit status 0)
    Exited,    // it called _exit(status) itself, or its function threw
    Signaled,  // a signal killed it (SIGSEGV, SIGABRT, ...)
    TimedOut,  // it ran past its time and was killed
  };
  Kind kind = Kind::Finished;
  int status = 0;  // Exited: the exit status
  int signal = 0;  // Signaled: the signal number

  bool finished() const { return kind == Kind::Finished; }
  /// "finished", "exited with status 3", "killed by SIGSEGV (Segmentation fault)", "timed out".
  std::string describe() const;
};

/// The exit status of a child whose function threw (EX_SOFTWARE).
constexpr int kChildThrewStatus = 70;

/// "SIGSEGV" for SIGSEGV; "signal 42" for a number without a name here.
std::string signal_name(int signal);

/// The child's end of its connection to the parent.
class ParentLink {
 public:
  explicit ParentLink(int fd) : fd_(fd) {}
  /// Sends every byte; false when the parent is gone.
  bool send(std::string_view bytes);
  /// Blocks for exactly `bytes` bytes; nothing when the parent closed its end first.
  std::optional<std::string> receive(size_t bytes);

 private:
  int fd_;
};

/// A running child and the parent's end of the socket to it. Destroying it kills the child
/// (if still running) and reaps it.
class ChildProcess {
 public:
  /// Forks a child that runs `body` and exits with status 0 when it returns.
  static Result<ChildProcess> start(const std::function<void(ParentLink &)> &body);

  ChildProcess(ChildProcess &&other) noexcept;
  ChildProcess &operator=(ChildProcess &&other) noexcept;
  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;
  ~ChildProcess();

  /// Sends every byte to the child; an error when it is gone.
  Result<void> send(std::string_view bytes);

  enum class Receive { Enough, Closed, TimedOut };
  /// Reads into received() until `enough(received())` holds, the child closes its end (it
  /// exited, most often) or `timeout_seconds` pass.
  Receive receive_until(const std::function<bool(const std::string &)> &enough, double timeout_seconds);
  /// Reads until the child closes its end or `timeout_seconds` pass; false on timeout.
  bool receive_all(double timeout_seconds);
  /// Everything the child sent so far.
  const std::string &received() const { return received_; }

  /// Waits up to `timeout_seconds` for the child to exit, then kills it; reaps it either way.
  ChildExit wait(double timeout_seconds);
  /// Kills the child now and reaps it: TimedOut (a child is killed for taking too long).
  ChildExit kill();

  pid_t pid() const { return pid_; }

 private:
  ChildProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  void release();

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string received_;
};

/// What a child run by run_in_child ended with, and everything it sent: its function's
/// return value when it finished, and what it sent before it died otherwise.
struct ChildOutcome {
  ChildExit exit;
  std::string output;
};

/// Runs `fn` in a forked child and returns what it returned, or how it failed: an exit
/// status, a signal, or a timeout (the child is then killed and reaped). An error only
/// when no child could be started.
Result<ChildOutcome> run_in_child(const std::function<std::string()> &fn, double timeout_seconds);
/// The same, for a child that reports progress as it goes (`parent.send`), which is kept
/// when it dies before returning.
Result<ChildOutcome> run_in_child(const std::function<std::string(ParentLink &parent)> &fn, double timeout_seconds);

}  // namespace tessel
