#include "base/child_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>
#include <utility>

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;

/// A moment some seconds from now, or never.
class Deadline {
 public:
  explicit Deadline(double seconds) {
    // A year stands for "never" as well; it keeps the clock arithmetic from overflowing.
    if (std::isfinite(seconds))
      at_ = Clock::now() +
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::clamp(seconds, 0.0, 3.2e7)));
  }
  bool passed() const { return at_ && Clock::now() >= *at_; }
  double seconds_left() const {
    if (!at_) return kNoTimeout;
    return std::max(0.0, std::chrono::duration<double>(*at_ - Clock::now()).count());
  }
  /// poll()'s timeout: -1 for never, else the milliseconds left, rounded up.
  int poll_milliseconds() const {
    if (!at_) return -1;
    return static_cast<int>(std::min(std::ceil(seconds_left() * 1e3), 1e9));
  }

 private:
  std::optional<Clock::time_point> at_;
};

ChildExit exit_of(int wait_status) {
  ChildExit exit;
  if (WIFSIGNALED(wait_status)) {
    exit.kind = ChildExit::Kind::Signaled;
    exit.signal = WTERMSIG(wait_status);
  } else if (WEXITSTATUS(wait_status) != 0) {
    exit.kind = ChildExit::Kind::Exited;
    exit.status = WEXITSTATUS(wait_status);
  }
  return exit;
}

/// Blocks until `pid` is reaped.
int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

/// Sends every byte; MSG_NOSIGNAL: a peer that is gone is an error here, not a SIGPIPE.
bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

/// Appends what one read() gives; false at end of file or on an error.
bool read_some(int fd, std::string &into) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    into.append(buffer, static_cast<size_t>(n));
    return true;
  }
}

/// The child's whole life: run `body`, then _exit. A crash must end it plainly, whatever
/// handlers the parent installed, so that the parent reads the signal.
[[noreturn]] void run_child(const std::function<void(ParentLink &)> &body, int fd) {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, SIG_DFL);
  int status = 0;
  try {
    ParentLink parent(fd);
    body(parent);
  } catch (const std::exception &e) {
    // Straight to the file descriptor: stdio's lock may be held by a thread fork() left behind.
    const std::string line = std::string("tessel: child process threw: ") + e.what() + "\n";
    [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    status = kChildThrewStatus;
  } catch (...) {
    status = kChildThrewStatus;
  }
  ::_exit(status);
}

}  // namespace

std::string signal_name(int signal) {
  static const std::pair<int, const char *> names[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"},
      {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},
      {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
      {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
  };
  for (const auto &[number, name] : names)
    if (number == signal) return name;
  return "signal " + std::to_string(signal);
}

std::string ChildExit::describe() const {
  switch (kind) {
    case Kind::Finished: return "finished";
    case Kind::Exited:
      return "exited with status " + std::to_string(status) + (status == kChildThrewStatus ? " (it threw)" : "");
    case Kind::Signaled: return "killed by " + signal_name(signal) + " (" + strsignal(signal) + ")";
    case Kind::TimedOut: return "timed out";
  }
  return "?";
}

bool ParentLink::send(std::string_view bytes) { return send_all(fd_, bytes); }

std::optional<std::string> ParentLink::receive(size_t bytes) {
  std::string got;
  while (got.size() < bytes) {
    char buffer[4096];
    const ssize_t n = ::read(fd_, buffer, std::min(sizeof buffer, bytes - got.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    got.append(buffer, static_cast<size_t>(n));
  }
  return got;
}

Result<ChildProcess> ChildProcess::start(const std::function<void(ParentLink &)> &body) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return make_error(ErrorKind::Internal, std::string("socketpair: ") + std::strerror(errno));
  // Else the child would write the parent's buffered output a second time if anything in
  // it flushes stdio.
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return make_error(ErrorKind::Internal, std::string("fork: ") + std::strerror(error));
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(body, fds[1]);
  }
  ::close(fds[1]);
  return ChildProcess(pid, fds[0]);
}

ChildProcess::ChildProcess(ChildProcess &&other) noexcept
    : pid_(std::exchange(other.pid_, -1)), fd_(std::exchange(other.fd_, -1)), received_(std::move(other.received_)) {}

ChildProcess &ChildProcess::operator=(ChildProcess &&other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    fd_ = std::exchange(other.fd_, -1);
    received_ = std::move(other.received_);
  }
  return *this;
}

ChildProcess::~ChildProcess() { release(); }

void ChildProcess::release() {
  if (pid_ > 0) kill();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<void> ChildProcess::send(std::string_view bytes) {
  if (fd_ < 0 || !send_all(fd_, bytes))
    return make_error(ErrorKind::Io, "child process " + std::to_string(pid_) + " is not listening");
  return {};
}

ChildProcess::Receive ChildProcess::receive_until(const std::function<bool(const std::string &)> &enough,
                                                  double timeout_seconds) {
  const Deadline deadline(timeout_seconds);
  for (;;) {
    if (enough && enough(received_)) return Receive::Enough;
    if (fd_ < 0) return Receive::Closed;
    if (deadline.passed()) return Receive::TimedOut;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, deadline.poll_milliseconds());
    if (ready < 0 && errno != EINTR) return Receive::Closed;
    if (ready > 0 && !read_some(fd_, received_)) {
      ::close(fd_);
      fd_ = -1;
    }
  }
}

bool ChildProcess::receive_all(double timeout_seconds) {
  return receive_until(nullptr, timeout_seconds) != Receive::TimedOut;
}

ChildExit ChildProcess::wait(double timeout_seconds) {
  const Deadline deadline(timeout_seconds);
  auto pause = std::chrono::microseconds(500);
  while (pid_ > 0) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      pid_ = -1;
      return exit_of(status);
    }
    if (done < 0 && errno != EINTR) {  // reaped elsewhere (SIGCHLD ignored, most often)
      pid_ = -1;
      return ChildExit{ChildExit::Kind::Exited, -1, 0};
    }
    if (deadline.passed()) return kill();
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(50000));
  }
  return ChildExit{ChildExit::Kind::Exited, -1, 0};
}

ChildExit ChildProcess::kill() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    reap(pid_);
    pid_ = -1;
  }
  return ChildExit{ChildExit::Kind::TimedOut, 0, 0};
}

Result<ChildOutcome> run_in_child(const std::function<std::string(ParentLink &parent)> &fn, double timeout_seconds) {
  const Deadline deadline(timeout_seconds);
  auto child = ChildProcess::start([&fn](ParentLink &parent) { parent.send(fn(parent)); });
  if (!child.ok()) return child.error();
  ChildOutcome outcome;
  // The child closes its end when it exits; only then is waiting for it short.
  const bool closed = child->receive_all(deadline.seconds_left());
  outcome.exit = closed ? child->wait(deadline.seconds_left()) : child->kill();
  outcome.output = child->received();
  return outcome;
}

Result<ChildOutcome> run_in_child(const std::function<std::string()> &fn, double timeout_seconds) {
  const std::function<std::string(ParentLink &)> ignoring_the_link = [&fn](ParentLink &) { return fn(); };
  return run_in_child(ignoring_the_link, timeout_seconds);
}

}  // namespace tessel
