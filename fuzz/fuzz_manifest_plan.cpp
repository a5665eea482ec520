// An artifact's manifest.json and plan.txt, as `tessel run model.tsl` parses them. The
// input's first line break splits it: the manifest before, the plan after.
#include <cstddef>
#include <cstdint>
#include <string>

#include "deploy/artifact_manifest.h"
#include "deploy/execution_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string input(reinterpret_cast<const char *>(data), size);
  const size_t split = input.find('\n');
  const std::string manifest = input.substr(0, split);
  const std::string plan = split == std::string::npos ? std::string() : input.substr(split + 1);
  static_cast<void>(tessel::deploy::parse_manifest(manifest));
  static_cast<void>(tessel::deploy::parse_plan(plan));
  static_cast<void>(tessel::deploy::parse_plan(input));
  return 0;
}
