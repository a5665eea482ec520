// An artifact's host.json, as the deploy runtime parses it before running host steps: nodes
// with typed attributes, tensors in hex and nested If bodies checked for ids and cycles.
#include <cstddef>
#include <cstdint>
#include <string>

#include "deploy/host_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string input(reinterpret_cast<const char *>(data), size);
  auto parsed = tessel::deploy::parse_host_program(input);
  // What parses must write back to text that parses to the same program.
  if (parsed.ok()) static_cast<void>(tessel::deploy::parse_host_program(tessel::deploy::to_json(parsed.value())));
  return 0;
}
