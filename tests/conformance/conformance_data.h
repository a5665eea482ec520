#pragma once
// Walking the ONNX backend test folders (libonnx-testdata): shared by the conformance
// runner and the tests that replay the conformance models.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tessel::testing {

/// Entries of a folder whose names start with prefix, sorted.
inline std::vector<std::string> list_dir(const std::string &path, const std::string &prefix = "") {
  std::vector<std::string> names;
  if (DIR *d = opendir(path.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != ".." && n.rfind(prefix, 0) == 0) names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline bool file_exists(const std::string &path) { return access(path.c_str(), F_OK) == 0; }

}  // namespace tessel::testing
