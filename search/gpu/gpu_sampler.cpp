// Values for a GPU sketch's parameters within the device's limits, and the schedules they
// give (gpu_sampler.h).
#include "search/gpu/gpu_sampler.h"

#include <algorithm>
#include <set>

#include "search/gpu/gpu_sketch.h"
#include "search/gpu/gpu_sketch_schedule.h"
#include "search/gpu/gpu_split_k.h"
#include "search/gpu/gpu_warp_tile.h"
#include "search/sketch_writer.h"

namespace tessel {
namespace {

/// Draws (or, without a generator, picks the default of) every parameter of a sketch.
class GpuChooser {
 public:
  GpuChooser(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target, std::mt19937_64 *rng)
      : compute_(compute), sketch_(sketch), target_(target), rng_(rng) {}

  SketchChoices run() {
    if (sketch_.name == "gpu_warp_tile") return choose_warp_tile(sketch_, target_, rng_);
    if (sketch_.name == "gpu_split_k") return choose_split_k(sketch_, compute_, target_, rng_);
    for (const FuncPlan &plan : sketch_.funcs) {
      const FuncDesc &f = *compute_.find(plan.func);
      switch (plan.rule) {
        case FuncRule::GpuTiledOutput: tiled(f); break;
        case FuncRule::GpuRegisterAnchor: anchor(f); break;
        case FuncRule::GpuInjectiveOutput:
        case FuncRule::Root: injective(f); break;
        default: break;
      }
    }
    return choices_;
  }

 private:
  int64_t draw(const std::vector<int64_t> &values, int64_t fallback) {
    if (!rng_ || values.empty()) return fallback;
    return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(*rng_)];
  }
  std::vector<int64_t> values(const std::string &name) const {
    const SketchParam *p = sketch_.param(name);
    return p ? p->values : std::vector<int64_t>{};
  }

  void tiled(const FuncDesc &out) {
    const size_t n = out.pure_axes.size();
    std::vector<int64_t> threads(n, 1), regs(n, 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      // A thread budget per block, spread over the axes from the innermost (whose threads
      // then touch neighbouring elements), and a register tile within the budget.
      const int64_t budget = rng_ ? draw({32, 64, 128, 256, 512}, 256) : 256;
      int64_t left = budget;
      int64_t accumulators = 1;
      for (size_t a = 0; a < n; ++a) {
        const int64_t extent = out.pure_axes[a].extent;
        int64_t t = 1;
        if (std::count_if(threads.begin(), threads.begin() + a, [](int64_t x) { return x > 1; }) < 3) {
          // Tiles divide their axes (see the builder): thread counts are the divisors
          // within the budget; the default takes the largest up to 32 on the innermost
          // axis (neighbouring threads, neighbouring elements) and fills the rest outward.
          const std::vector<int64_t> options = divisors_up_to(extent, left);
          int64_t fallback = 1;
          for (int64_t d : options)
            if (a > 0 || d <= 32) fallback = d;
          t = draw(options, fallback);
        }
        threads[a] = t;
        left /= t;
        std::vector<int64_t> fits;
        for (int64_t r : values(out.name + ".register." + out.pure_axes[a].name))
          if (extent % (r * t) == 0 && accumulators * r <= target_.accumulator_budget()) fits.push_back(r);
        int64_t fallback = 1;
        const int64_t wanted = a == 0 ? 4 : a == 1 ? 2 : 1;
        for (int64_t r : fits)
          if (r <= wanted) fallback = r;
        regs[a] = draw(fits, fallback);
        accumulators *= regs[a];
      }
      const int64_t block_threads = product_of(threads);
      const int64_t threaded_axes = std::count_if(threads.begin(), threads.end(), [](int64_t t) { return t > 1; });
      if (block_threads <= target_.max_threads_for(static_cast<int>(accumulators)) && threaded_axes <= 3 &&
          block_threads >= std::min<int64_t>(target_.warp_size, most_threads(out)))
        break;
      if (!rng_) break;
    }
    for (size_t a = 0; a < n; ++a) {
      choices_[out.name + ".thread." + out.pure_axes[a].name] = threads[a];
      choices_[out.name + ".register." + out.pure_axes[a].name] = regs[a];
    }
  }

  /// Threads a block of `out` could have at most (a warp is not always possible).
  static int64_t most_threads(const FuncDesc &out) {
    int64_t n = 1;
    for (const AxisDesc &a : out.pure_axes) n *= a.extent;
    return n;
  }

  void anchor(const FuncDesc &f) {
    for (const AxisDesc &r : update_reduction_axes(f)) {
      const std::vector<int64_t> options = values(f.name + ".reduce." + r.name);
      int64_t fallback = 1;
      for (int64_t d : options)
        if (d <= 8) fallback = d;
      choices_[f.name + ".reduce." + r.name] = draw(options, fallback);
    }
    choices_[f.name + ".unroll_reduce"] = draw({0, 1}, 1);
  }

  void injective(const FuncDesc &f) {
    if (f.pure_axes.empty()) return;
    const std::vector<int64_t> vectors = values(f.name + ".vector");
    choices_[f.name + ".vector"] = draw(vectors, 1);
    std::vector<int64_t> threads = values(f.name + ".threads");
    choices_[f.name + ".threads"] = draw(threads, std::min<int64_t>(256, target_.max_threads_per_block));
  }

  const ComputeDesc &compute_;
  const Sketch &sketch_;
  GpuTargetDesc target_;
  std::mt19937_64 *rng_;
  SketchChoices choices_;
};

/// The schedule of these choices if it builds and passes check_gpu_schedule.
Result<Schedule> checked_gpu_schedule(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                                      const SketchChoices &choices) {
  Result<Schedule> schedule = build_gpu_sketch_schedule(compute, sketch, target, choices);
  if (!schedule) return schedule;
  Result<ScheduleTree> tree = check_gpu_schedule(compute, *schedule, target);
  if (!tree) return make_error(tree.error().kind, "sketch " + sketch.name + ": " + tree.error().message);
  return schedule;
}

}  // namespace

SketchChoices sample_gpu_choices(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                                 std::mt19937_64 &rng) {
  return GpuChooser(compute, sketch, target, &rng).run();
}

SketchChoices default_gpu_choices(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target) {
  return GpuChooser(compute, sketch, target, nullptr).run();
}

Schedule sample_gpu_schedule(const ComputeDesc &compute, const Sketch &sketch, const GpuTargetDesc &target,
                             std::mt19937_64 &rng, SamplerStats *stats) {
  return first_valid_draw(
      [&] { return checked_gpu_schedule(compute, sketch, target, sample_gpu_choices(compute, sketch, target, rng)); },
      [&] { return default_gpu_schedule(compute, target); }, stats);
}

std::vector<Schedule> sample_gpu_schedules(const ComputeDesc &compute, const GpuTargetDesc &target, int count,
                                           std::mt19937_64 &rng, SamplerStats *stats) {
  const std::vector<Sketch> sketches = generate_gpu_sketches(compute, target);
  std::vector<Schedule> schedules;
  for (int i = 0; i < count; ++i) {
    const Sketch &sketch = sketches[std::uniform_int_distribution<size_t>(0, sketches.size() - 1)(rng)];
    schedules.push_back(sample_gpu_schedule(compute, sketch, target, rng, stats));
  }
  return schedules;
}

std::vector<Schedule> default_gpu_sketch_schedules(const ComputeDesc &compute, const GpuTargetDesc &target) {
  // The built-in one first, then every sketch's default it is not.
  std::vector<Schedule> schedules{default_gpu_schedule(compute, target)};
  std::set<std::string> texts{to_text(schedules.front())};
  for (const Sketch &sketch : generate_gpu_sketches(compute, target))
    if (Result<Schedule> s = checked_gpu_schedule(compute, sketch, target, default_gpu_choices(compute, sketch, target)))
      if (texts.insert(to_text(s.value())).second) schedules.push_back(s.value());
  return schedules;
}

Schedule default_gpu_schedule(const ComputeDesc &compute, const GpuTargetDesc &target) {
  std::vector<Sketch> sketches = generate_gpu_sketches(compute, target);
  // A small output with a long reduction: split-k's default first (gpu_split_k.h).
  std::stable_partition(sketches.begin(), sketches.end(),
                        [&](const Sketch &s) { return split_k_is_default(s, compute, target); });
  for (const Sketch &sketch : sketches) {
    Result<Schedule> schedule = checked_gpu_schedule(compute, sketch, target, default_gpu_choices(compute, sketch, target));
    if (schedule) return schedule.value();
    // The default tiles may not fit an odd shape: fall back to one thread per element.
    Sketch flat = sketch;
    for (FuncPlan &plan : flat.funcs) {
      if (plan.rule == FuncRule::GpuTiledOutput) plan.rule = FuncRule::GpuInjectiveOutput;
      if (plan.rule == FuncRule::GpuRegisterAnchor) plan = FuncPlan{plan.func, FuncRule::Root, ""};
    }
    schedule = checked_gpu_schedule(compute, flat, target, SketchChoices{});
    if (schedule) return schedule.value();
  }
  return Schedule{};
}

}  // namespace tessel
