#pragma once
// The sampler: fills a sketch's free parameters with random values that respect the
// constraints between them (sketch.h), builds the steps (sketch_schedule.h) and keeps only
// schedules that replay (validate_and_replay) and stay inside every Func's region
// (exact_cover.h). Also the deterministic default pick the benchmarks compare with.
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "schedule/schedule_tree.h"
#include "search/cpu/cpu_target.h"
#include "search/cpu/sketch.h"
#include "search/cpu/sketch_schedule.h"

namespace tessel {

/// How often draws had to be repeated.
struct SamplerStats {
  int64_t schedules = 0;        ///< schedules returned
  int64_t first_try_valid = 0;  ///< of those, valid at their first draw
  int64_t rejected_draws = 0;   ///< draws that did not build, replay or stay in their region
  int64_t fallbacks = 0;        ///< gave up after many draws and returned the default
  std::string last_rejection;   ///< why the last rejected draw failed

  double first_try_rate() const { return schedules ? static_cast<double>(first_try_valid) / schedules : 1.0; }
};

/// The first of up to 64 draws that gives a schedule, else `fallback()`; `stats` (when not
/// null) counts the draws. What the CPU and GPU samplers share.
Schedule first_valid_draw(const std::function<Result<Schedule>()> &draw, const std::function<Schedule()> &fallback,
                          SamplerStats *stats);

/// Values for every parameter of `sketch`: tiles of the output (any size up to the extent:
/// tiles shift inwards), a vector width that fits the ISA, a register tile that divides the
/// anchor's region and fits the register budget, parallel fusion that gives the threads
/// enough iterations, compute level, reduction splits, unrolling.
SketchChoices sample_choices(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target,
                             std::mt19937_64 &rng);

/// One deterministic, reasonable set of values (a register tile of 8 rows x 2 vectors for a
/// matmul, tiles fused into one parallel loop, no reduction split).
SketchChoices default_choices(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target);

/// A valid schedule of `sketch`: draws until one builds, replays and stays inside its
/// regions (the default schedule after 64 failed draws, which `stats` counts).
Schedule sample_schedule(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target,
                         std::mt19937_64 &rng, SamplerStats *stats = nullptr);

/// `count` schedules, each from a sketch of generate_sketches drawn uniformly.
std::vector<Schedule> sample_schedules(const ComputeDesc &compute, const CpuTargetDesc &target, int count,
                                       std::mt19937_64 &rng, SamplerStats *stats = nullptr);

/// A sampled schedule with the tree its validity check replayed (null for a fallback default,
/// which no check replayed): a search that keeps trees need not replay it again.
struct SampledSchedule {
  Schedule schedule;
  std::shared_ptr<const ScheduleTree> tree;
};

/// sample_schedules, each with its replayed tree; the same draws give the same schedules.
std::vector<SampledSchedule> sample_schedules_with_trees(const ComputeDesc &compute, const CpuTargetDesc &target,
                                                         int count, std::mt19937_64 &rng,
                                                         SamplerStats *stats = nullptr);

/// default_choices of the rfactor sketch when there is one (it exists only where tiling
/// leaves threads idle), else of the first sketch: the baseline the tuner is compared with.
/// Always valid (an empty schedule, tessel's defaults, if even that failed).
Schedule default_cpu_schedule(const ComputeDesc &compute, const CpuTargetDesc &target);

}  // namespace tessel
