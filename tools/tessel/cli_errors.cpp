// How every subcommand reports an error: one line on stderr, exit code 1.
#include <cstdio>

#include "tools/tessel/commands.h"

namespace tessel {

int fail(const std::string &message) {
  std::fprintf(stderr, "tessel: error: %s\n", message.c_str());
  return 1;
}

}  // namespace tessel
