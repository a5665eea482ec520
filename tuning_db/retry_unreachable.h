#pragma once
// Remote tuning outlives a restarted database server or a network cut: a coordinator or a
// worker whose query fails because the server is unreachable (ErrorKind::Unreachable) waits and tries
// again, for up to a window, instead of dropping what it measured. Queries against a server
// that answers with an error are not retried.
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "base/result.h"

namespace tessel {

struct RetryWindow {
  double seconds = 300;  // give up after failing this long in a row
  std::function<void(const std::string &)> log;  // one line per failure streak
};

/// attempt() until it succeeds, fails otherwise than unreachable, or the window is spent.
template <typename Attempt>
auto retry_unreachable(Attempt attempt, const RetryWindow &window) -> decltype(attempt()) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  double pause = 0.2;
  bool said = false;
  while (true) {
    auto result = attempt();
    if (result.ok() || result.error().kind != ErrorKind::Unreachable) return result;
    if (std::chrono::duration<double>(Clock::now() - start).count() >= window.seconds) return result;
    if (window.log && !said) {
      window.log(result.error().message + "; retrying for up to " + std::to_string(static_cast<int>(window.seconds)) + " s");
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    pause = std::min(pause * 2, 5.0);
  }
}

}  // namespace tessel
