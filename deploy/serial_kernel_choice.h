#pragma once
// Which kernel calls of a model run faster on one thread than on the pool, measured inside
// the model. A small kernel gains little from a second thread and pays for it: the loop's
// hand-off, and the cache lines of its inputs and outputs that sit in the other CPU's cache
// since the previous kernel (on a VM whose vCPUs are far apart, that dominates). MobileNet-V3
// small at 96x96 ran 0.43 ms with every kernel on 2 threads, 0.33 with the small ones on one.
#include <string>
#include <vector>

#include "base/result.h"
#include "deploy/module.h"

namespace tessel {

struct SerialKernelChoice {
  std::vector<bool> serial;  // per kernel call, plan order
  double parallel_ms = 0;    // median run with every kernel on the pool
  double serial_ms = 0;      // median run with every kernel on one thread
  double chosen_ms = 0;      // median run as chosen
  int runs = 0;              // runs measured in all
};

/// Measures `module` (loaded with ModuleOptions::profile, more than one thread) on `inputs`:
/// every kernel on the pool against every kernel on one thread, rounds interleaved; a call
/// runs serially where its median time was lower so. Then the whole run, interleaved again:
/// all parallel, that mix, all serial; the fastest median wins (all parallel on a tie).
/// Each round lasts about `round_ms`. Leaves the module's kernels as chosen. Throws
/// ModuleError when a run fails.
SerialKernelChoice choose_serial_kernels(Module &module, const std::vector<Tensor> &inputs, double round_ms = 40);

/// The serial calls of `mix` worth keeping, from per-call medians of the same runs with every
/// kernel on the pool (`pool_ms`) and as `mix` says (`mix_ms`). The first kernel is faster
/// alone when every kernel is, not after a parallel one; and a parallel call after a serial
/// one reads its input from the calling thread's cache (the two vCPUs of the hosts measured
/// keep separate last-level caches). So a serial call stays only where what it gains in the
/// mix outweighs what the parallel call after it loses there. MobileNet-V2's untuned 144 ->
/// 24 pointwise conv took 0.034 ms after a serial depthwise conv, 0.020 after a parallel one
/// that had gained less than that; the model ran 0.535 ms so, 0.467 with this rule.
std::vector<bool> keep_serial_in_mix(const std::vector<bool> &mix, const std::vector<double> &pool_ms,
                                     const std::vector<double> &mix_ms);

/// One line: the flags as '0'/'1' and the three medians (how a child process reports it).
std::string to_text(const SerialKernelChoice &choice);
Result<SerialKernelChoice> parse_serial_kernel_choice(const std::string &text);

}  // namespace tessel
