// An artifact's manifest.json and plan.txt, as `tessel run model.tsl` parses them. The
// input's first line break splits it: the manifest before, the plan after. A plan that
// parses also goes through the data-flow proof, each kernel writing some of its arguments.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "deploy/artifact_manifest.h"
#include "deploy/execution_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string input(reinterpret_cast<const char *>(data), size);
  const size_t split = input.find('\n');
  const std::string manifest = input.substr(0, split);
  const std::string plan = split == std::string::npos ? std::string() : input.substr(split + 1);
  static_cast<void>(tessel::deploy::parse_manifest(manifest));
  for (const std::string &text : {plan, input}) {
    auto parsed = tessel::deploy::parse_plan(text);
    if (!parsed.ok()) continue;
    std::vector<int> kernel_outputs;
    for (const auto &step : parsed.value().steps)
      if (const auto *kernel = std::get_if<tessel::deploy::KernelStep>(&step))
        kernel_outputs.push_back(1 + static_cast<int>(data[kernel_outputs.size() % size] % kernel->args.size()));
    static_cast<void>(tessel::deploy::check_data_flow(parsed.value(), kernel_outputs));
  }
  return 0;
}
