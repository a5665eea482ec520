// Random and default values for a sketch's parameters (sampler.h). Values are drawn in
// dependency order: the output's tiles, order, parallel fusion and compute level fix the
// anchor's region; the anchor's vector width and register tile are then drawn among the
// divisors of that region, so the anchor never computes past the tile.
#include "search/cpu/sampler.h"

#include <algorithm>

#include "base/integer_division.h"
#include "search/cpu/unrolled_body.h"
#include "search/exact_cover.h"

namespace tessel {
namespace {

/// A uniform index below n (plain modulo: deterministic across standard libraries).
size_t below(std::mt19937_64 &rng, size_t n) { return n <= 1 ? 0 : static_cast<size_t>(rng() % n); }

template <typename T>
const T &pick(std::mt19937_64 &rng, const std::vector<T> &values) {
  return values[below(rng, values.size())];
}

bool chance(std::mt19937_64 &rng, int percent) { return static_cast<int>(rng() % 100) < percent; }

/// The largest of ascending `values` that is at most `limit` (the first when none is).
int64_t largest_at_most(const std::vector<int64_t> &values, int64_t limit) {
  int64_t best = values.front();
  for (int64_t v : values)
    if (v <= limit) best = v;
  return best;
}


/// Output positions (all axes but the channels) up to which a blocked conv may take its
/// whole map as one tile, and the most weight bytes one step of its outermost reduction
/// reads then: by default what an L1 or a small L2 share keeps, when drawn half an L2.
constexpr int64_t kWholeMapPositions = 64;
constexpr int64_t kDefaultWeightChunkBytes = 64 * 1024;
constexpr int64_t kWeightChunkBytes = 512 * 1024;

/// Draws (or, without a generator, picks the default for) each parameter of one sketch.
class Chooser {
 public:
  Chooser(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target, std::mt19937_64 *rng)
      : compute_(compute), sketch_(sketch), target_(target), rng_(rng) {}

  SketchChoices run() {
    for (const FuncPlan &plan : sketch_.funcs) {
      const FuncDesc &f = *compute_.find(plan.func);
      switch (plan.rule) {
        case FuncRule::TiledOutput: {
          const FuncDesc &anchor = *compute_.find(plan.partner);
          const FuncPlan *anchor_plan = sketch_.plan(anchor.name);
          tiled(f, anchor, anchor_plan && anchor_plan->rule == FuncRule::TiledAnchorMultiLevel);
          break;
        }
        case FuncRule::InjectiveOutput: injective(f); break;
        case FuncRule::Root: root(f); break;
        case FuncRule::RootRfactor: rfactor(f); break;
        default: break;
      }
    }
    return choices_;
  }

 private:
  bool random() const { return rng_ != nullptr; }
  /// The value to use: a random pick, or `fallback` for the default schedule.
  int64_t draw(const std::vector<int64_t> &values, int64_t fallback) {
    if (!random() || values.empty()) return fallback;
    return pick(*rng_, values);
  }
  /// Like draw, but the largest value half of the time: register tiles want to be full.
  int64_t draw_large(const std::vector<int64_t> &values, int64_t fallback) {
    if (!random() || values.empty()) return fallback;
    return chance(*rng_, 50) ? values.back() : pick(*rng_, values);
  }
  std::vector<int64_t> param_values(const std::string &name) const {
    const SketchParam *p = sketch_.param(name);
    return p ? p->values : std::vector<int64_t>{};
  }

  /// Whether a blocked conv's output map is so small that one tile covers it: each weight
  /// then serves every position of the map while it is in a register, and each thread reads
  /// its channels' weights from memory once per run. On maps this small the weights are what
  /// the kernel moves (ResNet-18's 512-channel 3x3 conv on a 3x3 map: 9.4 MB of weights for
  /// 42 MFLOP); tiles of one row re-read them once per row (measured in the model, 0.83 ms
  /// one row at a time, 0.69 ms over the whole map).
  static bool streams_weights(const FuncDesc &out, const std::vector<AxisLink> &links) {
    int64_t positions = 1;
    for (size_t a = 0; a < out.pure_axes.size(); ++a)
      if (a != links.front().out_axis) positions *= out.pure_axes[a].extent;
    return positions <= kWholeMapPositions;
  }
  /// Input channels per step of the outermost reduction over a whole map, so that the
  /// weights one step reads stay in cache while the tile's remainder loops re-read them:
  /// drawn among the divisors whose chunk is at most kWeightChunkBytes (for the default the
  /// largest within kDefaultWeightChunkBytes).
  int64_t weight_chunk(const AxisDesc &outermost, const std::vector<AxisDesc> &reductions, int64_t channels,
                       int64_t bytes_per_element) {
    int64_t inner = 1;
    for (const AxisDesc &k : reductions)
      if (k.name != outermost.name) inner *= k.extent;
    std::vector<int64_t> fits;
    for (int64_t d : divisors(outermost.extent))
      if (d * inner * channels * bytes_per_element <= kWeightChunkBytes) fits.push_back(d);
    if (fits.empty()) return 1;
    int64_t fallback = fits.front();
    for (int64_t d : fits)
      if (d * inner * channels * bytes_per_element <= kDefaultWeightChunkBytes) fallback = d;
    return draw(fits, fallback);
  }

  void tiled(const FuncDesc &out, const FuncDesc &anchor, bool multi_level) {
    const std::string &O = out.name, &A = anchor.name;
    const size_t n = out.pure_axes.size();
    const std::vector<AxisLink> links = *link_axes(out, anchor);
    // A blocked anchor vectorizes along its lanes, not along the output's axis 0.
    const bool blocked = links.front().kind == AxisLink::Kind::Lane;
    const std::vector<int64_t> widths =
        vector_width_candidates(anchor.pure_axes[0].extent, anchor.bytes_per_element, target_);
    const int64_t width = random() && chance(*rng_, 40) ? pick(*rng_, widths) : widths.front();
    const int64_t budget = target_.accumulator_budget();

    // Output tiles. The innermost axis: a few vectors (or the whole axis, rarely).
    const int64_t e0 = out.pure_axes[0].extent;
    int64_t t0 = e0;
    const bool whole_map = blocked && streams_weights(out, links) && (!random() || chance(*rng_, 35));
    if (whole_map) {
      t0 = e0;
    } else if (blocked) {
      // Rows of a register tile: up to 14 positions (two rows of 7), or the whole axis.
      const std::vector<int64_t> tiles = param_values(O + ".tile." + out.pure_axes[0].name);
      t0 = draw(tiles, largest_at_most(tiles, 14));
    } else if (width > 1) {
      std::vector<int64_t> multiples;
      for (int64_t k : {1, 2, 3, 4, 6, 8, 16})
        if (width * k <= e0) multiples.push_back(width * k);
      const int64_t vectors = e0 >= 2 * width ? 2 : 1;
      t0 = random() && chance(*rng_, 10) ? e0 : draw(multiples, width * vectors);
    } else {
      t0 = draw(param_values(O + ".tile." + out.pure_axes[0].name), e0);
    }
    choices_[O + ".tile." + out.pure_axes[0].name] = t0;
    // The default: rows of the register tile from the largest other axis.
    size_t rows_axis = 0;
    for (size_t a = 1; a < n; ++a)
      if (rows_axis == 0 || out.pure_axes[a].extent > out.pure_axes[rows_axis].extent) rows_axis = a;
    const int64_t default_vectors = width > 1 && !blocked ? std::max<int64_t>(1, t0 / width) : 1;
    for (size_t a = 1; a < n; ++a) {
      const AxisDesc &axis = out.pure_axes[a];
      const std::vector<int64_t> tiles = param_values(O + ".tile." + axis.name);
      int64_t fallback =
          a == rows_axis ? std::min<int64_t>({8, std::max<int64_t>(1, budget / default_vectors), axis.extent}) : 1;
      // Blocked: two vectors of channels, the other axes one row at a time.
      if (blocked) fallback = a == links.front().out_axis ? largest_at_most(tiles, 2 * links.front().lanes) : 1;
      choices_[O + ".tile." + axis.name] =
          whole_map && a != links.front().out_axis ? axis.extent : draw(tiles, fallback);
    }
    choices_[O + ".order"] = draw({0, 1}, 1);

    // Parallel fusion: enough iterations for the threads.
    const int outer = count_outer_loops(out, choices_);
    std::vector<int64_t> fusions;
    for (int p = 1; p <= outer; ++p) {
      choices_[O + ".parallel"] = p;
      if (layout_tiled_output(out, A, choices_).parallel_extent >= target_.threads) fusions.push_back(p);
    }
    if (target_.threads <= 1) fusions.push_back(0);
    choices_[O + ".parallel"] = fusions.empty() ? outer : draw(fusions, outer);
    const int64_t fused = choices_[O + ".parallel"];
    const int64_t final_outer = outer - fused + (fused > 0 ? 1 : 0);
    choices_[A + ".compute_level"] = final_outer >= 2 && random() && chance(*rng_, 25) ? 1 : 0;

    // The anchor's region follows (in its own axis order); its register tile divides it.
    const std::optional<std::vector<int64_t>> linked =
        anchor_region(out, anchor, layout_tiled_output(out, A, choices_).anchor_region);
    if (!linked) return;  // not whole blocks: the schedule rejects it, the caller draws again
    const std::vector<int64_t> &region = *linked;
    const size_t anchor_axes = anchor.pure_axes.size();
    int64_t anchor_width = 1;
    if (width > 1 && region[0] % width == 0)
      anchor_width = width;
    else
      for (int64_t w : widths)  // widest first
        if (w > 1 && region[0] % w == 0) {
          anchor_width = w;
          break;
        }
    choices_[A + ".vector"] = anchor_width;

    std::vector<int64_t> first;  // register tile of axis 0, in elements
    if (anchor_width > 1) {
      for (int64_t u = 1; u <= std::min<int64_t>(4, budget); ++u)
        if (region[0] % (anchor_width * u) == 0) first.push_back(anchor_width * u);
    } else {
      first = divisors_up_to(region[0], std::min<int64_t>(8, budget));
    }
    // The default: two vectors when they fit.
    int64_t r0_default = first.front();
    for (int64_t r : first)
      if (r <= std::max<int64_t>(2 * anchor_width, 2)) r0_default = r;
    const int64_t r0 = draw_large(first, r0_default);
    choices_[A + ".register." + anchor.pure_axes[0].name] = r0;
    int64_t used = anchor_width > 1 ? r0 / anchor_width : r0;

    // The other axes share what is left of the budget: in random order, or for the default
    // the rows axis first (in the anchor's order; a blocked anchor's rows are the output's
    // axis 0).
    size_t anchor_rows = 0;
    for (size_t a = 1; a < anchor_axes; ++a)
      if (links[a].out_axis == (blocked ? 0 : rows_axis) && links[a].kind == AxisLink::Kind::Same) anchor_rows = a;
    std::vector<size_t> others;
    if (!random() && anchor_rows > 0) others.push_back(anchor_rows);
    for (size_t a = 1; a < anchor_axes; ++a)
      if (random() || a != anchor_rows) others.push_back(a);
    if (random())
      for (size_t i = others.size(); i > 1; --i) std::swap(others[i - 1], others[below(*rng_, i)]);
    for (size_t a : others) {
      const std::vector<int64_t> fit = divisors_up_to(region[a], std::max<int64_t>(1, budget / used));
      const int64_t r = draw_large(fit, a == anchor_rows ? fit.back() : 1);
      choices_[A + ".register." + anchor.pure_axes[a].name] = r;
      used *= r;
    }
    if (multi_level)
      for (size_t a = 0; a < anchor_axes; ++a) {
        const int64_t m = region[a] / choices_[A + ".register." + anchor.pure_axes[a].name];
        choices_[A + ".inner." + anchor.pure_axes[a].name] = draw(divisors(m), m);
      }
    bool innermost = true;
    // Over a whole map the outermost reduction (input channels) is split into weight chunks.
    const std::vector<AxisDesc> reductions = whole_map ? update_reduction_axes(anchor) : std::vector<AxisDesc>{};
    const std::string chunked = reductions.size() > 1 ? reductions.back().name : std::string();
    for (const AxisDesc &k : anchor.stages[1].axes) {
      if (!k.reduction) continue;
      const int64_t f =
          k.name == chunked
              ? weight_chunk(k, reductions, choices_[O + ".tile." + out.pure_axes[links.front().out_axis].name],
                             anchor.bytes_per_element)
          : random() && chance(*rng_, 50) ? pick(*rng_, divisors(k.extent))
                                          : k.extent;
      choices_[A + ".reduce." + k.name] = f;
      if (innermost) {
        // Unrolled taps repeat the whole register tile: only within the cap on unrolled code.
        const int64_t unrolled = draw({0, 1}, k.extent <= 8 ? 1 : 0);
        choices_[A + ".unroll_reduce"] = used * f <= kMaxUnrolledBodyVectors ? unrolled : 0;
      }
      innermost = false;
    }

    // The output's vectors: at most its tile's width.
    std::vector<int64_t> out_widths;
    for (int64_t w : vector_width_candidates(e0, out.bytes_per_element, target_))
      if (w > 1 && w <= t0) out_widths.push_back(w);
    int64_t out_width = out_widths.empty() ? 1 : out_widths.front();
    if (std::find(out_widths.begin(), out_widths.end(), anchor_width) != out_widths.end()) out_width = anchor_width;
    choices_[O + ".vector"] = random() && chance(*rng_, 25) ? draw(out_widths, out_width) : out_width;
    choices_[O + ".unroll"] = draw({0, 1}, 0);
    // The padded copy: at root by default (its built-in schedule), else moved inside.
    if (const FuncDesc *source = placeable_source_of(compute_, A)) choices_[source->name + ".at"] = draw({0, 1, 2}, 0);
  }

  void injective(const FuncDesc &out) {
    if (out.pure_axes.empty()) return;
    const std::string &O = out.name;
    const int64_t e0 = out.pure_axes[0].extent;
    std::vector<int64_t> widths = vector_width_candidates(e0, out.bytes_per_element, target_);
    const int64_t width = random() && chance(*rng_, 40) ? pick(*rng_, widths) : widths.front();
    choices_[O + ".vector"] = width;
    const int64_t outer = ceil_div(e0, width);
    std::vector<int64_t> unrolls;
    for (int64_t u : {1, 2, 4})
      if (u <= outer) unrolls.push_back(u);
    const int64_t unroll = draw(unrolls, 1);
    choices_[O + ".unroll"] = unroll;
    const size_t n = out.pure_axes.size();
    if (n == 1) {
      const int64_t remaining = ceil_div(outer, unroll);
      std::vector<int64_t> tasks;
      for (int64_t t : {1, 2, 4, 8, 16, 32, 64})
        if (t <= remaining && ceil_div(remaining, t) >= target_.threads && target_.threads > 1) tasks.push_back(t);
      // The default: tasks of a few vectors, at least 4 per thread.
      int64_t fallback = 0;
      for (int64_t t : tasks)
        if (ceil_div(remaining, t) >= 4 * target_.threads) fallback = t;
      if (fallback == 0 && !tasks.empty()) fallback = tasks.front();
      choices_[O + ".task"] = draw(tasks, fallback);
      return;
    }
    std::vector<int64_t> fusions;
    int64_t extent = 1;
    for (size_t p = 1; p < n; ++p) {
      extent *= out.pure_axes[n - p].extent;
      if (extent >= target_.threads) fusions.push_back(static_cast<int64_t>(p));
    }
    choices_[O + ".parallel"] = draw(fusions, static_cast<int64_t>(n) - 1);
    if (fusions.empty()) choices_[O + ".parallel"] = static_cast<int64_t>(n) - 1;
  }

  void root(const FuncDesc &f) {
    if (f.pure_axes.empty()) return;
    const std::vector<int64_t> widths = vector_width_candidates(f.pure_axes[0].extent, f.bytes_per_element, target_);
    choices_[f.name + ".vector"] = random() && chance(*rng_, 30) ? pick(*rng_, widths) : widths.front();
  }

  void rfactor(const FuncDesc &f) {
    const RfactorAxes axes = rfactor_axes(f);
    std::vector<int64_t> chunks;
    for (int64_t d : param_values(f.name + ".rfactor.chunks"))
      if (d >= target_.threads) chunks.push_back(d);
    if (chunks.empty()) chunks = param_values(f.name + ".rfactor.chunks");
    if (chunks.empty()) chunks = {axes.chunked.extent};
    // The default: about 8 chunks per thread.
    int64_t fallback = chunks.front();
    for (int64_t c : chunks)
      if (c <= 8 * target_.threads) fallback = c;
    const int64_t count = draw(chunks, fallback);
    choices_[f.name + ".rfactor.chunks"] = count;
    const bool same = axes.chunked.name == axes.laned.name;
    const int64_t lane_extent = same ? axes.chunked.extent / count : axes.laned.extent;
    std::vector<int64_t> lanes;
    for (int64_t w : param_values(f.name + ".rfactor.lanes"))
      if (w == 1 || (lane_extent % w == 0 && lane_extent > 1)) lanes.push_back(w);
    if (lanes.empty()) lanes = {1};
    choices_[f.name + ".rfactor.lanes"] = draw(lanes, lanes.back());
  }

  const ComputeDesc &compute_;
  const Sketch &sketch_;
  CpuTargetDesc target_;
  std::mt19937_64 *rng_;
  SketchChoices choices_;
};

/// The schedule of these choices, with its replayed tree, if it builds, replays and stays
/// inside its regions; a sample must also stay within the unrolling cap (a default need not:
/// it is never proposed for measuring, only compiled once).
Result<SampledSchedule> checked_sample(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target,
                                       const SketchChoices &choices, bool sample) {
  Result<Schedule> schedule = build_sketch_schedule(compute, sketch, target, choices);
  if (!schedule) return schedule.error();
  Result<ScheduleTree> tree = validate_exact_cover(compute, *schedule);
  if (!tree) return make_error(tree.error().kind, "sketch " + sketch.name + ": " + tree.error().message);
  if (sample) TESSEL_TRY_VOID(check_unrolled_body(*tree, target));
  return SampledSchedule{std::move(schedule.value()), std::make_shared<const ScheduleTree>(std::move(tree.value()))};
}

Result<Schedule> checked_schedule(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target,
                                  const SketchChoices &choices, bool sample) {
  Result<SampledSchedule> checked = checked_sample(compute, sketch, target, choices, sample);
  if (!checked) return checked.error();
  return std::move(checked->schedule);
}

/// The first of up to 64 draws that gives a value, else `fallback()`, counted in `stats`.
template <typename T>
T first_valid(const std::function<Result<T>()> &draw, const std::function<T()> &fallback, SamplerStats *stats) {
  SamplerStats local;
  SamplerStats &s = stats ? *stats : local;
  ++s.schedules;
  for (int attempt = 0; attempt < 64; ++attempt) {
    Result<T> value = draw();
    if (value) {
      if (attempt == 0) ++s.first_try_valid;
      return std::move(value.value());
    }
    ++s.rejected_draws;
    s.last_rejection = value.error().message;
  }
  ++s.fallbacks;
  return fallback();
}

SampledSchedule sample_with_tree(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target,
                                 std::mt19937_64 &rng, SamplerStats *stats) {
  return first_valid<SampledSchedule>(
      [&] { return checked_sample(compute, sketch, target, sample_choices(compute, sketch, target, rng), true); },
      [&] { return SampledSchedule{default_cpu_schedule(compute, target), nullptr}; }, stats);
}

}  // namespace

SketchChoices sample_choices(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target,
                             std::mt19937_64 &rng) {
  return Chooser(compute, sketch, target, &rng).run();
}

SketchChoices default_choices(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target) {
  return Chooser(compute, sketch, target, nullptr).run();
}

Schedule first_valid_draw(const std::function<Result<Schedule>()> &draw, const std::function<Schedule()> &fallback,
                          SamplerStats *stats) {
  return first_valid<Schedule>(draw, fallback, stats);
}

Schedule sample_schedule(const ComputeDesc &compute, const Sketch &sketch, const CpuTargetDesc &target,
                         std::mt19937_64 &rng, SamplerStats *stats) {
  return std::move(sample_with_tree(compute, sketch, target, rng, stats).schedule);
}

std::vector<SampledSchedule> sample_schedules_with_trees(const ComputeDesc &compute, const CpuTargetDesc &target,
                                                         int count, std::mt19937_64 &rng, SamplerStats *stats) {
  const std::vector<Sketch> sketches = generate_sketches(compute, target);
  std::vector<SampledSchedule> samples;
  for (int i = 0; i < count; ++i) samples.push_back(sample_with_tree(compute, pick(rng, sketches), target, rng, stats));
  return samples;
}

std::vector<Schedule> sample_schedules(const ComputeDesc &compute, const CpuTargetDesc &target, int count,
                                       std::mt19937_64 &rng, SamplerStats *stats) {
  std::vector<Schedule> schedules;
  for (SampledSchedule &s : sample_schedules_with_trees(compute, target, count, rng, stats))
    schedules.push_back(std::move(s.schedule));
  return schedules;
}

Schedule default_cpu_schedule(const ComputeDesc &compute, const CpuTargetDesc &target) {
  std::vector<Sketch> sketches = generate_sketches(compute, target);
  // The rfactor sketch exists only where tiling leaves the threads idle: prefer it then.
  std::stable_partition(sketches.begin(), sketches.end(), [](const Sketch &s) { return s.name == "rfactor"; });
  for (const Sketch &sketch : sketches) {
    Result<Schedule> schedule = checked_schedule(compute, sketch, target, default_choices(compute, sketch, target), false);
    if (schedule) return schedule.value();
  }
  return Schedule{};
}

}  // namespace tessel
