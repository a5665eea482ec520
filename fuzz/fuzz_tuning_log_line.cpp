// One line of a JSON-lines tuning log, as `tessel db import` and `compile --log` read it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tuning_db/tuning_log_line.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static_cast<void>(tessel::parse_log_line(std::string(reinterpret_cast<const char *>(data), size)));
  return 0;
}
