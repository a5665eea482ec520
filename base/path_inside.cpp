#include "base/path_inside.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace tessel {
namespace {

bool climbs_out(const std::string &p) {
  return p == ".." || p.rfind("../", 0) == 0 || p.find("/../") != std::string::npos ||
         (p.size() >= 3 && p.compare(p.size() - 3, 3, "/..") == 0);
}

std::string real_path(const std::string &p) {
  char resolved[PATH_MAX];
  return ::realpath(p.c_str(), resolved) ? std::string(resolved) : std::string();
}

}  // namespace

Result<std::string> resolve_inside(const std::string &folder, const std::string &relative, const std::string &what) {
  if (relative.empty() || relative[0] == '/' || climbs_out(relative))
    return make_error(what + " '" + relative + "' must be a relative path inside " + folder);
  const std::string joined = (folder.empty() ? std::string(".") : folder) + "/" + relative;
  const std::string real_folder = real_path(folder.empty() ? "." : folder);
  if (real_folder.empty()) return make_error(folder + ": " + std::strerror(errno));
  const std::string real_file = real_path(joined);
  if (real_file.empty())
    return make_error(what + " " + joined + ": " + (errno == ENOENT ? std::string("missing") : std::strerror(errno)));
  // Through a symbolic link among its parts, a relative path can still lead outside.
  if (real_file.rfind(real_folder == "/" ? real_folder : real_folder + "/", 0) != 0)
    return make_error(what + " " + joined + " resolves to " + real_file + ", outside " + real_folder);
  struct stat st;
  if (::stat(real_file.c_str(), &st) != 0) return make_error(what + " " + joined + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error(what + " " + joined + " is not a regular file");
  return real_file;
}

}  // namespace tessel
