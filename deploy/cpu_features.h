#pragma once
// CPU features an artifact's kernels were compiled for (manifest "required_cpu_features", in
// GCC's __builtin_cpu_supports names), checked against the CPU this process runs on.
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace tessel::deploy {

/// Whether this CPU has `name`; nullopt when `name` is not a feature this runtime knows.
std::optional<bool> cpu_supports(const std::string &name);

/// Every feature this runtime can check, in table order.
std::vector<std::string> known_cpu_features();

/// Ok when this CPU has every feature in `names`. Otherwise one error listing every unknown
/// name (an unknown feature is never assumed present) and every missing feature.
Result<void> check_cpu_features(const std::vector<std::string> &names);

}  // namespace tessel::deploy
