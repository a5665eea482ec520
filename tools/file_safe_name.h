#pragma once
// File names for tensors written by the CLI (`run --output-dir`).
#include <cctype>
#include <string>

namespace tessel {

/// Output names can hold '/', ':' and the like; keeps letters, digits, '-', '_' and '.'.
inline std::string file_safe_name(const std::string &name) {
  std::string s = name.empty() ? "output" : name;
  for (char &c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  if (s[0] == '.') s[0] = '_';
  return s;
}

}  // namespace tessel
