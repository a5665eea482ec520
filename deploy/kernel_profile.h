#pragma once
// A profiled artifact's kernel calls next to what tuning measured for their tasks alone
// (`tessel run model.tsl --profile`): where a run's time goes, and which kernels run slower
// inside the model than they did in isolation.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "deploy/module.h"

namespace tessel {

/// One kernel call of a profiled run: its median over all runs (the warm-up included) and
/// what tuning measured for its task in isolation.
struct KernelProfileRow {
  int step = 0;
  std::string symbol, ops;
  double median_ms = 0;
  std::optional<double> record_ms;
  int64_t flops = 0;
  bool serial = false;  // runs on the calling thread only (plan.txt's serial-kernel)
};

/// A row per kernel call of a Module loaded with ModuleOptions::profile, in plan order.
std::vector<KernelProfileRow> kernel_profile(const Module &module);

}  // namespace tessel
