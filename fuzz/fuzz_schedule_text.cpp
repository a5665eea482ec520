// A schedule's canonical text, as records and `inspect --schedule FILE` give it; what
// parses must print back to text that parses to the same schedule.
#include <cstddef>
#include <cstdint>
#include <string>

#include "schedule/schedule_ir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const auto schedule = tessel::parse_schedule(std::string(reinterpret_cast<const char *>(data), size));
  if (!schedule.ok()) return 0;
  const std::string text = tessel::to_text(schedule.value());
  const auto again = tessel::parse_schedule(text);
  if (!again.ok() || again.value() != schedule.value()) __builtin_trap();
  return 0;
}
