#include "base/host_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tessel {

std::string HostTimingLock::path() {
  if (const char *custom = std::getenv("TESSEL_HOST_LOCK"); custom && *custom) return custom;
  const char *tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/tessel-timing.lock";
}

Result<HostTimingLock> HostTimingLock::acquire() {
  const std::string file = path();
  // Readable and writable by every user: workers of different users share one machine.
  const mode_t old_mask = ::umask(0);
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  ::umask(old_mask);
  if (fd < 0) return Error{"cannot open the host timing lock " + file + ": " + std::strerror(errno), ErrorKind::Io};
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const std::string reason = std::strerror(errno);
    ::close(fd);
    return Error{"cannot take the host timing lock " + file + ": " + reason, ErrorKind::Io};
  }
  return HostTimingLock(fd);
}

HostTimingLock::~HostTimingLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace tessel
