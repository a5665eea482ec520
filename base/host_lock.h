#pragma once
// One timed run per machine: every tessel process that times kernels (a tuner's measurer,
// each `tessel worker`) holds this machine-wide lock while it times, so two of them on one
// host never time side by side and skew each other's numbers. Compiling needs no lock.
// An flock on a file in the temp directory: the kernel drops it when its holder dies.
#include <string>

#include "base/result.h"

namespace tessel {

class HostTimingLock {
 public:
  /// Blocks until this process holds the lock. TESSEL_HOST_LOCK names another file (tests,
  /// or hosts whose /tmp is private to each container).
  static Result<HostTimingLock> acquire();
  HostTimingLock(HostTimingLock &&other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  HostTimingLock &operator=(HostTimingLock &&) = delete;
  HostTimingLock(const HostTimingLock &) = delete;
  HostTimingLock &operator=(const HostTimingLock &) = delete;
  ~HostTimingLock();

  /// The lock file's path.
  static std::string path();

 private:
  explicit HostTimingLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace tessel
