#include "base/path_inside.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tessel {
namespace {

/// The components of a relative path; empty ones ("a//b", "./a") are dropped.
std::vector<std::string> components(const std::string &path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(start, slash - start);
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    start = slash + 1;
  }
  return parts;
}

}  // namespace

OwnedFd &OwnedFd::operator=(OwnedFd &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

OwnedFd::~OwnedFd() {
  if (fd_ >= 0) ::close(fd_);
}

Result<OwnedFd> open_inside(const std::string &folder, const std::string &relative, const std::string &what) {
  const std::string base = folder.empty() ? std::string(".") : folder;
  const std::string shown = base + "/" + relative;
  const std::vector<std::string> parts = components(relative);
  if (relative.empty() || relative[0] == '/' || parts.empty())
    return make_error(ErrorKind::InvalidInput, what + " '" + relative + "' must be a relative path inside " + base);
  for (const std::string &p : parts)
    if (p == "..")
      return make_error(ErrorKind::InvalidInput, what + " '" + relative + "' must be a relative path inside " + base);
  OwnedFd dir(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return make_error(ErrorKind::Io, base + ": " + std::strerror(errno));
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last ? O_NONBLOCK : O_DIRECTORY);
    OwnedFd next(::openat(dir.get(), parts[i].c_str(), flags));
    if (next.get() < 0) {
      const int err = errno;
      struct stat st;
      const bool link = ::fstatat(dir.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      if (link)
        return make_error(ErrorKind::InvalidInput,
                          what + " " + shown + " is or goes through a symbolic link (" + parts[i] +
                          "); files a model or artifact names must be regular files inside its folder");
      if (err == ENOENT) return make_error(ErrorKind::NotFound, what + " " + shown + ": missing");
      if (err == ENOTDIR)
        return make_error(ErrorKind::InvalidInput, what + " " + shown + ": " + parts[i] + " is not a folder");
      return make_error(ErrorKind::Io, what + " " + shown + ": " + std::strerror(err));
    }
    dir = std::move(next);
  }
  struct stat st;
  if (::fstat(dir.get(), &st) != 0) return make_error(ErrorKind::Io, what + " " + shown + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error(ErrorKind::InvalidInput, what + " " + shown + " is not a regular file");
  // O_NONBLOCK only kept a FIFO from blocking the open; reads of a regular file ignore it.
  ::fcntl(dir.get(), F_SETFL, ::fcntl(dir.get(), F_GETFL) & ~O_NONBLOCK);
  return dir;
}

Result<std::string> resolve_inside(const std::string &folder, const std::string &relative, const std::string &what) {
  Result<OwnedFd> fd = open_inside(folder, relative, what);
  if (!fd.ok()) return fd.error();
  const std::string joined = (folder.empty() ? std::string(".") : folder) + "/" + relative;
  char resolved[PATH_MAX];
  if (!::realpath(joined.c_str(), resolved))
    return make_error(ErrorKind::Io, what + " " + joined + ": " + std::strerror(errno));
  return std::string(resolved);
}

Result<int64_t> file_size(const OwnedFd &fd, const std::string &what) {
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return make_error(ErrorKind::Io, what + ": " + std::strerror(errno));
  return static_cast<int64_t>(st.st_size);
}

Result<void> read_exactly_at(const OwnedFd &fd, int64_t offset, void *destination, size_t size, const std::string &what) {
  auto *out = static_cast<uint8_t *>(destination);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd.get(), out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(ErrorKind::Io, what + ": " + std::strerror(errno));
    if (n == 0) return make_error(ErrorKind::Io, what + ": file shrank while being read");
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace tessel
