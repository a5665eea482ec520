#include "codegen/link_shared_library.h"

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace tessel {

namespace {
std::string shell_quote(const std::string &s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

Result<void> link_shared_library(const std::vector<std::string> &objects, const std::string &library_path,
                                 const std::string &linker, const std::string &log_path) {
  std::string driver = linker;
  if (driver.empty()) driver = std::getenv("TESSEL_LINKER") ? std::getenv("TESSEL_LINKER") : "c++";
  std::string command = driver + " -shared -o " + shell_quote(library_path);
  for (const std::string &o : objects) command += " " + shell_quote(o);
  command += " -lpthread -ldl -lm > " + shell_quote(log_path) + " 2>&1";
  if (std::system(command.c_str()) == 0) return {};
  std::ifstream in(log_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return make_error("linking the kernels with '" + driver + "' failed (set TESSEL_LINKER to a C++ compiler): " + text);
}

}  // namespace tessel
