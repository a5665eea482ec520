// Work in a forked child: what it returns comes back whole, and every way it can end (an
// exit status, a signal, a hang past its time) is reported, with the child always reaped.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "base/child_process.h"

using namespace tessel;

namespace {

/// Whether this process has a child that exited and was never reaped. Reaps it if so.
bool zombie_left() {
  int status = 0;
  return ::waitpid(-1, &status, WNOHANG) > 0;
}

/// Whether `pid` is gone for good: not ours to wait for any more.
bool reaped(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) < 0 && errno == ECHILD;
}

ChildOutcome run(const std::function<std::string()> &fn, double timeout_seconds = 30) {
  auto outcome = run_in_child(fn, timeout_seconds);
  REQUIRE(outcome.ok());
  return outcome.value();
}

}  // namespace

TEST_CASE("a child's return value comes back to the parent", "[base][child_process]") {
  int seen_by_child = 0;
  const ChildOutcome outcome = run([&] {
    seen_by_child = 1;  // the child's copy only
    return std::string("hello from the child");
  });
  CHECK(outcome.exit.kind == ChildExit::Kind::Finished);
  CHECK(outcome.exit.finished());
  CHECK(outcome.exit.describe() == "finished");
  CHECK(outcome.output == "hello from the child");
  CHECK(seen_by_child == 0);
  CHECK_FALSE(zombie_left());
}

TEST_CASE("a child's output larger than a pipe buffer arrives whole", "[base][child_process]") {
  std::string big(1 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 4096);
  const ChildOutcome outcome = run([&] { return big; });
  CHECK(outcome.exit.finished());
  REQUIRE(outcome.output.size() == big.size());
  CHECK(outcome.output == big);
  CHECK_FALSE(zombie_left());
}

TEST_CASE("a child killed by SIGSEGV is reported as that signal", "[base][child_process]") {
  const ChildOutcome outcome = run([]() -> std::string {
    ::raise(SIGSEGV);
    return "never";
  });
  CHECK(outcome.exit.kind == ChildExit::Kind::Signaled);
  CHECK(outcome.exit.signal == SIGSEGV);
  CHECK_THAT(outcome.exit.describe(), Catch::StartsWith("killed by SIGSEGV"));
  CHECK(outcome.output.empty());
  CHECK_FALSE(zombie_left());
}

TEST_CASE("a child's exit status is reported, and a throw is one", "[base][child_process]") {
  const ChildOutcome exited = run([]() -> std::string { ::_exit(3); });
  CHECK(exited.exit.kind == ChildExit::Kind::Exited);
  CHECK(exited.exit.status == 3);
  CHECK(exited.exit.describe() == "exited with status 3");

  const ChildOutcome threw = run([]() -> std::string { throw std::runtime_error("expected by the test"); });
  CHECK(threw.exit.kind == ChildExit::Kind::Exited);
  CHECK(threw.exit.status == kChildThrewStatus);
  CHECK_FALSE(zombie_left());
}

TEST_CASE("a child that hangs is killed at its timeout and reaped", "[base][child_process]") {
  const auto start = std::chrono::steady_clock::now();
  const ChildOutcome outcome = run(
      []() -> std::string {
        std::this_thread::sleep_for(std::chrono::hours(1));
        return "never";
      },
      0.3);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(outcome.exit.kind == ChildExit::Kind::TimedOut);
  CHECK(outcome.exit.describe() == "timed out");
  CHECK(took >= 0.3);
  CHECK(took < 10);
  CHECK_FALSE(zombie_left());
}

TEST_CASE("what a child sent before it died is kept", "[base][child_process]") {
  const std::function<std::string(ParentLink &)> fn = [](ParentLink &parent) -> std::string {
    parent.send("step 1;");
    parent.send("step 2;");
    ::abort();
  };
  auto outcome = run_in_child(fn, 30);
  REQUIRE(outcome.ok());
  CHECK(outcome->exit.kind == ChildExit::Kind::Signaled);
  CHECK(outcome->exit.signal == SIGABRT);
  CHECK(outcome->output == "step 1;step 2;");
  CHECK_FALSE(zombie_left());
}

TEST_CASE("a child process answers requests until told to stop", "[base][child_process]") {
  auto started = ChildProcess::start([](ParentLink &parent) {
    // Echoes each byte, upper-cased, until it reads a '.'.
    while (auto byte = parent.receive(1)) {
      if (*byte == ".") return;
      parent.send(std::string(1, static_cast<char>(std::toupper((*byte)[0]))));
    }
  });
  REQUIRE(started.ok());
  ChildProcess child = std::move(started).value();
  const pid_t pid = child.pid();
  REQUIRE(child.send("ab").ok());
  const auto two = [](const std::string &received) { return received.size() >= 2; };
  CHECK(child.receive_until(two, 10) == ChildProcess::Receive::Enough);
  CHECK(child.received() == "AB");
  REQUIRE(child.send(".").ok());
  CHECK(child.receive_all(10));
  CHECK(child.wait(10).finished());
  CHECK(reaped(pid));
  CHECK_FALSE(child.send("x").ok());
}

TEST_CASE("a silent child times out a receive, and killing or dropping it reaps it", "[base][child_process]") {
  const auto sleep_forever = [](ParentLink &) { std::this_thread::sleep_for(std::chrono::hours(1)); };
  auto started = ChildProcess::start(sleep_forever);
  REQUIRE(started.ok());
  ChildProcess child = std::move(started).value();
  CHECK(child.receive_until([](const std::string &r) { return !r.empty(); }, 0.1) == ChildProcess::Receive::TimedOut);
  const pid_t pid = child.pid();
  CHECK(child.wait(0.1).kind == ChildExit::Kind::TimedOut);
  CHECK(reaped(pid));

  pid_t dropped_pid = -1;
  {
    auto dropped = ChildProcess::start(sleep_forever);
    REQUIRE(dropped.ok());
    dropped_pid = dropped->pid();
  }
  CHECK(reaped(dropped_pid));
  CHECK_FALSE(zombie_left());
}

TEST_CASE("signals have their names", "[base][child_process]") {
  CHECK(signal_name(SIGSEGV) == "SIGSEGV");
  CHECK(signal_name(SIGKILL) == "SIGKILL");
  CHECK(signal_name(SIGABRT) == "SIGABRT");
  CHECK(signal_name(1000) == "signal 1000");
}
