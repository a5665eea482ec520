#pragma once
// Output files of `tessel run` (models and artifacts alike): one .npy per graph output.
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "base/result.h"
#include "tensor/npy.h"
#include "tensor/tensor.h"

namespace tessel {

/// Output names can hold '/', ':' and the like; keeps letters, digits, '-', '_' and '.'.
inline std::string file_safe_name(const std::string &name) {
  std::string s = name.empty() ? "output" : name;
  for (char &c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  if (s[0] == '.') s[0] = '_';
  return s;
}

/// Writes tensors[i] as DIR/<file_safe_name(names[i])>.npy, creating DIR; the paths written.
inline Result<std::vector<std::string>> write_output_files(const std::string &dir, const std::vector<std::string> &names,
                                                           const std::vector<Tensor> &tensors) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(ErrorKind::Io, dir + ": cannot create directory: " + ec.message());
  std::vector<std::string> written;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string path = dir + "/" + file_safe_name(names[i]) + ".npy";
    if (auto ok = write_npy(path, tensors[i]); !ok.ok()) return ok.error();
    written.push_back(path);
  }
  return written;
}

}  // namespace tessel
