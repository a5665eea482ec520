// Symbolic replay of a Schedule over a ComputeDesc, then the schedule tree. The rules
// mirror Halide 14's (checked against it with small programs): split keeps the inner loop
// at the old position and puts the outer one just outside it; fuse puts the fused loop at
// the inner loop's position; reorder permutes the listed loops among the positions they
// hold; rfactor turns the listed RVars into pure vars of a new Func whose update keeps the
// stage's other loops, and leaves the stage folding over the listed RVars only.
#include "schedule/schedule_tree.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>


namespace tessel {
namespace {

/// Raised inside the replay and turned into an Error (with the step's line) at the boundary.
struct ReplayFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string &message) { throw ReplayFailure(message); }

/// A failure that belongs to an earlier step, found by a whole-schedule check.
struct StepFailure {
  size_t step;
  std::string message;
};

/// How a loop's extent follows from the extents of the axes it came from, so the same
/// loops can be measured where a Func is computed (a tile of its consumer, say) and not only
/// over the whole region the ComputeDesc gives. Terms live in their stage's list.
struct ExtentTerm {
  enum class Op { Axis, Const, CeilDiv, Mul } op = Op::Const;
  std::string axis;   ///< Axis: a pure axis or RVar of the Func
  int64_t value = 1;  ///< Const: the extent; CeilDiv: the divisor
  int a = -1, b = -1;  ///< operands (CeilDiv: a; Mul: a * b)
};

/// One of the loops a fused loop was made of: its piece of the split tree and its extent.
struct FusedPart {
  int split_node = -1;
  int extent_term = -1;
  std::set<std::string> origins;
};

struct Loop {
  std::string var;
  int extent_term = -1;  ///< index into the stage's terms
  LoopKind kind = LoopKind::Serial;
  int gpu_index = -1;
  bool reduction = false;
  std::set<std::string> origins;  ///< pure axes this loop walks (empty for RVars)
  size_t annotated_by = 0;        ///< the step that set `kind`
  int split_node = -1;            ///< index into the stage's split tree
  /// A fused loop: the loops it was fused from, so that the region a producer computes
  /// inside it still sees each axis' piece (a block's fused thread loop covers the thread
  /// tile of every axis it fused). Empty for other loops; a split of a fused loop clears it.
  std::vector<FusedPart> fused_parts;
};

/// Where a loop came from: the loop a split made it of. A tile whose pieces all run inside
/// a loop covers its parent's extent when the split shifts inwards or guards (the product
/// of the pieces' extents only when it rounds up), so regions follow the tree.
struct SplitNode {
  int parent = -1;
  int extent_term = -1;
  bool rounds_up = false;  ///< the split that made the children rounds up
  std::vector<int> children;
};

struct StageState {
  int update = -1;
  std::vector<Loop> loops;  ///< innermost first
  std::vector<ExtentTerm> terms;
  std::map<std::string, int64_t> axis_extents;  ///< the ComputeDesc's extents of the leaf axes
  std::vector<std::string> reads;
  std::set<std::string> used_names;  ///< every var name this stage has had
  bool pure_loops_changed = false;   ///< a pure loop was split, fused or annotated
  std::vector<SplitNode> split_nodes;

  int add_split_node(int parent, int extent_term) {
    split_nodes.push_back(SplitNode{parent, extent_term, false, {}});
    const int index = static_cast<int>(split_nodes.size()) - 1;
    if (parent >= 0) split_nodes[parent].children.push_back(index);
    return index;
  }

  std::string loop_list() const {
    std::string s;
    for (const Loop &l : loops) s += (s.empty() ? "" : ", ") + l.var;
    return s;
  }
  int add_term(ExtentTerm t) {
    terms.push_back(std::move(t));
    return static_cast<int>(terms.size()) - 1;
  }
  /// A loop's extent when the leaf axes have the given extents (missing ones: the desc's).
  int64_t extent(int term, const std::map<std::string, int64_t> &axes) const {
    const ExtentTerm &t = terms[term];
    switch (t.op) {
      case ExtentTerm::Op::Axis: {
        auto it = axes.find(t.axis);
        if (it != axes.end()) return it->second;
        auto full = axis_extents.find(t.axis);
        return full == axis_extents.end() ? 1 : full->second;
      }
      case ExtentTerm::Op::Const: return t.value;
      case ExtentTerm::Op::CeilDiv: return (extent(t.a, axes) + t.value - 1) / t.value;
      case ExtentTerm::Op::Mul: return extent(t.a, axes) * extent(t.b, axes);
    }
    return 1;
  }
  /// The extent over the whole region the ComputeDesc gives.
  int64_t full_extent(const Loop &l) const { return extent(l.extent_term, {}); }
  int find(const std::string &var) const {
    for (size_t i = 0; i < loops.size(); ++i)
      if (loops[i].var == var) return static_cast<int>(i);
    return -1;
  }
};

/// Where a Func is computed or stored.
struct Placement {
  enum class Kind { Default, Inline, Root, At } kind = Kind::Default;
  StageRef stage;
  std::string var;
  size_t step = 0;
};

struct FuncState {
  FuncDesc desc;
  std::vector<StageState> stages;
  bool reads_known = false;
  Placement compute, store;
  std::optional<MemoryKind> memory;
  size_t memory_step = 0;

  bool inlinable() const { return desc.inlinable && stages.size() == 1 && !desc.is_output; }
  std::string stage_name(size_t s) const { return StageRef{desc.name, stages[s].update}.to_text(); }
};

/// A point in the loop nest: outside every loop (root), or just inside loop `var` of a stage.
struct Site {
  bool root = true;
  int func = -1;
  int stage = -1;
  std::string var;
};

/// tessel's limit on vector width: 4 AVX-512 registers of f32. Halide itself takes more.
constexpr int64_t kMaxVectorLanes = 64;

bool is_gpu(LoopKind k) { return k == LoopKind::GpuBlock || k == LoopKind::GpuThread || k == LoopKind::GpuLane; }

/// Replays steps over the funcs' loop lists and answers questions about the final state.
class Replay {
 public:
  explicit Replay(const ComputeDesc &compute) {
    for (const FuncDesc &f : compute.funcs) add_func(f);
    for (const FuncState &f : funcs_)
      for (const std::string &c : f.desc.consumers)
        if (index_of(c) < 0) fail("compute desc: '" + f.desc.name + "' lists unknown consumer '" + c + "'");
  }

  void apply(size_t step_index, const ScheduleStep &step) {
    step_ = step_index;
    region_memo_.clear();
    std::visit([this](const auto &s) { this->run(s); }, step);
  }

  /// Checks that need the final state; the failure names the step it belongs to.
  std::optional<StepFailure> check_final() const;

  ScheduleTree build_tree() const;

 private:
  // ---- lookups ----
  int index_of(const std::string &name) const {
    for (size_t i = 0; i < funcs_.size(); ++i)
      if (funcs_[i].desc.name == name) return static_cast<int>(i);
    return -1;
  }
  FuncState &func(const std::string &name) {
    int i = index_of(name);
    if (i < 0) fail("unknown func '" + name + "'");
    return funcs_[i];
  }
  StageState &stage(const StageRef &ref) {
    FuncState &f = func(ref.func);
    size_t s = static_cast<size_t>(ref.update + 1);
    if (ref.update < -1 || s >= f.stages.size())
      fail("func '" + ref.func + "' has no update " + std::to_string(ref.update) + " (it has " +
           std::to_string(f.stages.size() - 1) + ")");
    return f.stages[s];
  }
  Loop &loop(StageState &st, const StageRef &ref, const std::string &var) {
    int i = st.find(var);
    if (i < 0) fail("stage " + ref.to_text() + " has no loop '" + var + "' (loops, innermost first: " + st.loop_list() + ")");
    return st.loops[i];
  }
  void require_fresh(const StageState &st, const StageRef &ref, const std::string &name) {
    if (st.used_names.count(name)) fail("var name '" + name + "' is already used in stage " + ref.to_text());
  }
  void require_serial(const Loop &l) {
    if (l.kind != LoopKind::Serial)
      fail("loop '" + l.var + "' is already " + to_text(l.kind) + " (split or fuse before annotating, annotate once)");
  }

  // ---- steps ----
  void split(const StageRef &ref, const std::string &var, const std::string &outer, const std::string &inner,
             int64_t factor, TailStrategy tail) {
    FuncState &f = func(ref.func);
    StageState &st = stage(ref);
    Loop old = loop(st, ref, var);
    const int64_t old_extent = st.full_extent(old);
    if (factor < 1) fail("split factor " + std::to_string(factor) + " is < 1");
    require_serial(old);
    if (outer == inner) fail("split makes two loops named '" + outer + "'");
    if (outer != var) require_fresh(st, ref, outer);
    if (inner != var) require_fresh(st, ref, inner);
    const bool update = st.update >= 0;
    if (tail == TailStrategy::ShiftInwards && update)
      fail("shift_inwards is not legal in an update definition (it may change the result); use guard or round_up");
    if (old.reduction && tail == TailStrategy::RoundUp)
      fail("round_up on reduction var '" + var + "' would change the reduction; use guard or auto");
    TailStrategy effective = tail;
    if (tail == TailStrategy::Auto)
      effective = old.reduction ? TailStrategy::Guard : update ? TailStrategy::RoundUp : TailStrategy::ShiftInwards;
    if (f.desc.is_output && !old.reduction) {
      const std::string what = "loop '" + var + "' of output '" + f.desc.name + "' (extent " +
                               std::to_string(old_extent) + ") split by " + std::to_string(factor);
      if (effective == TailStrategy::RoundUp && old_extent % factor != 0)
        fail(what + " rounds up past the output's end; use guard or a factor that divides the extent");
      if (effective == TailStrategy::ShiftInwards && old_extent < factor)
        fail(what + " shifts inwards past the output's start (extent < factor); use guard or a smaller factor");
    }
    Loop in = old, out = old;
    in.fused_parts.clear();
    out.fused_parts.clear();
    in.var = inner;
    in.extent_term = st.add_term(ExtentTerm{ExtentTerm::Op::Const, {}, factor, -1, -1});
    out.var = outer;
    out.extent_term = st.add_term(ExtentTerm{ExtentTerm::Op::CeilDiv, {}, factor, old.extent_term, -1});
    if (old.split_node >= 0) st.split_nodes[old.split_node].rounds_up = effective == TailStrategy::RoundUp;
    in.split_node = st.add_split_node(old.split_node, in.extent_term);
    out.split_node = st.add_split_node(old.split_node, out.extent_term);
    int i = st.find(var);
    st.loops[i] = in;
    st.loops.insert(st.loops.begin() + i + 1, out);
    st.used_names.insert(outer);
    st.used_names.insert(inner);
    if (!old.reduction) st.pure_loops_changed = true;
  }

  void reorder(const StageRef &ref, const std::vector<std::string> &vars) {
    StageState &st = stage(ref);
    std::vector<int> positions;
    std::vector<Loop> listed;
    for (size_t i = 0; i < vars.size(); ++i) {
      if (std::find(vars.begin(), vars.begin() + i, vars[i]) != vars.begin() + i)
        fail("reorder lists '" + vars[i] + "' twice");
      listed.push_back(loop(st, ref, vars[i]));
      positions.push_back(st.find(vars[i]));
    }
    std::sort(positions.begin(), positions.end());
    for (size_t i = 0; i < positions.size(); ++i) st.loops[positions[i]] = listed[i];
  }

  void mark(StageState &st, Loop &l, LoopKind kind, int gpu_index = -1) {
    require_serial(l);
    if (!l.reduction) st.pure_loops_changed = true;
    l.kind = kind;
    l.gpu_index = gpu_index;
    l.annotated_by = step_;
  }

  void run(const SplitStep &s) { split(s.stage, s.var, s.outer, s.inner, s.factor, s.tail); }

  void run(const ReorderStep &s) { reorder(s.stage, s.vars); }

  void run(const FuseStep &s) {
    StageState &st = stage(s.stage);
    Loop inner = loop(st, s.stage, s.inner), outer = loop(st, s.stage, s.outer);
    if (s.inner == s.outer) fail("fuse of '" + s.inner + "' with itself");
    require_fresh(st, s.stage, s.fused);
    require_serial(inner);
    require_serial(outer);
    // Halide fuses a reduction var with a pure one into a reduction var (checked on 14).
    Loop fused = inner;
    fused.reduction = inner.reduction || outer.reduction;
    fused.var = s.fused;
    fused.extent_term = st.add_term(ExtentTerm{ExtentTerm::Op::Mul, {}, 1, inner.extent_term, outer.extent_term});
    fused.split_node = st.add_split_node(-1, fused.extent_term);
    fused.origins.insert(outer.origins.begin(), outer.origins.end());
    auto parts_of = [](const Loop &l) {
      return l.fused_parts.empty() ? std::vector<FusedPart>{FusedPart{l.split_node, l.extent_term, l.origins}}
                                   : l.fused_parts;
    };
    fused.fused_parts = parts_of(inner);
    for (const FusedPart &p : parts_of(outer)) fused.fused_parts.push_back(p);
    st.loops[st.find(s.inner)] = fused;
    st.loops.erase(st.loops.begin() + st.find(s.outer));
    st.used_names.insert(s.fused);
    if (!inner.reduction || !outer.reduction) st.pure_loops_changed = true;
  }

  void run(const TileStep &s) {
    if (s.x == s.y) fail("tile of '" + s.x + "' with itself");
    split(s.stage, s.x, s.xo, s.xi, s.x_factor, s.tail);
    split(s.stage, s.y, s.yo, s.yi, s.y_factor, s.tail);
    reorder(s.stage, {s.xi, s.yi, s.xo, s.yo});
  }

  void run(const VectorizeStep &s) {
    StageState &st = stage(s.stage);
    const Loop &l = loop(st, s.stage, s.var);
    if (l.reduction)
      fail("vectorizing reduction var '" + s.var + "' may race (Halide needs atomic); rfactor it into a pure var first");
    // Without a width the loop's extent is the width; it is checked once the region the
    // Func computes where it is placed is known (check_final).
    std::string var = s.var;
    if (s.width) {
      if (*s.width < 1) fail("vectorize width " + std::to_string(*s.width) + " is < 1");
      if (*s.width > kMaxVectorLanes)
        fail("vectorize width " + std::to_string(*s.width) + " of '" + s.var + "' is larger than " +
             std::to_string(kMaxVectorLanes) + " lanes");
      var = vectorized_inner_name(s.var);
      split(s.stage, s.var, s.var, var, *s.width, TailStrategy::Auto);
    }
    mark(st, loop(st, s.stage, var), LoopKind::Vectorized);
  }

  void run(const UnrollStep &s) {
    StageState &st = stage(s.stage);
    loop(st, s.stage, s.var);
    std::string var = s.var;
    if (s.factor) {
      var = unrolled_inner_name(s.var);
      split(s.stage, s.var, s.var, var, *s.factor, TailStrategy::Auto);
    }
    mark(st, loop(st, s.stage, var), LoopKind::Unrolled);
  }

  void run(const ParallelStep &s) {
    StageState &st = stage(s.stage);
    if (loop(st, s.stage, s.var).reduction)
      fail("running reduction var '" + s.var + "' in parallel may race; rfactor it into a pure var first");
    if (s.task_size) split(s.stage, s.var, s.var, parallel_task_name(s.var), *s.task_size, TailStrategy::Auto);
    mark(st, loop(st, s.stage, s.var), LoopKind::Parallel);
  }

  void run(const BindStep &s) {
    StageState &st = stage(s.stage);
    Loop &l = loop(st, s.stage, s.var);
    if (l.reduction) fail("binding reduction var '" + s.var + "' to GPU " + to_text(s.axis) + " may race");
    if (s.index < 0 || s.index > 2) fail("GPU index " + std::to_string(s.index) + " is not 0, 1 or 2");
    const LoopKind kind = s.axis == GpuAxis::Block    ? LoopKind::GpuBlock
                          : s.axis == GpuAxis::Thread ? LoopKind::GpuThread
                                                      : LoopKind::GpuLane;
    mark(st, l, kind, s.index);
  }

  /// Whether `consumer` reads `producer`, directly or through other Funcs.
  bool reads_transitively(const std::string &consumer, const std::string &producer) const {
    std::vector<std::string> todo{producer};
    std::set<std::string> seen;
    while (!todo.empty()) {
      std::string name = todo.back();
      todo.pop_back();
      if (!seen.insert(name).second) continue;
      int i = index_of(name);
      for (const std::string &c : funcs_[i].desc.consumers) {
        if (c == consumer) return true;
        todo.push_back(c);
      }
    }
    return false;
  }

  Placement place_at(const std::string &producer, const StageRef &consumer, const std::string &var,
                     const char *step_name) {
    FuncState &p = func(producer);
    if (p.desc.is_output) fail("output '" + producer + "' is always computed and stored at root");
    stage(consumer);
    if (consumer.func == producer) fail(std::string(step_name) + " of '" + producer + "' at its own loop");
    if (!reads_transitively(consumer.func, producer))
      fail("'" + consumer.func + "' does not read '" + producer + "', directly or through other funcs; " + step_name +
           " needs a consumer");
    return Placement{Placement::Kind::At, consumer, var, step_};
  }

  void run(const ComputeAtStep &s) {
    Placement p = place_at(s.func, s.consumer, s.var, "compute_at");
    func(s.func).compute = p;
  }

  void run(const StoreAtStep &s) {
    Placement p = place_at(s.func, s.consumer, s.var, "store_at");
    func(s.func).store = p;
  }

  void run(const ComputeInlineStep &s) {
    FuncState &f = func(s.func);
    if (f.desc.is_output) fail("output '" + s.func + "' cannot be inlined");
    if (!f.inlinable()) fail("'" + s.func + "' has update definitions and cannot be inlined");
    f.compute = Placement{Placement::Kind::Inline, {}, {}, step_};
  }

  void run(const ComputeRootStep &s) { func(s.func).compute = Placement{Placement::Kind::Root, {}, {}, step_}; }

  void run(const StoreInStep &s) {
    FuncState &f = func(s.func);
    if (f.desc.is_output) fail("output '" + s.func + "' lives in the caller's buffer; store_in does not apply");
    f.memory = s.memory;
    f.memory_step = step_;
  }

  void run(const CacheInputsStep &s) {
    StageState &st = stage(s.stage);
    const Loop &l = loop(st, s.stage, s.var);
    if (l.kind != LoopKind::Serial)
      fail(std::string("cache_inputs at '") + s.var + "', a " + to_text(l.kind) +
           " loop: the tiles are loaded once per iteration of a serial loop that every thread of the block runs");
  }

  void run(const RfactorStep &s) {
    if (s.stage.update < 0) fail("rfactor needs an update stage (FUNC.uK), got '" + s.stage.to_text() + "'");
    StageState &st = stage(s.stage);
    if (index_of(s.new_func) >= 0) fail("func '" + s.new_func + "' already exists");
    if (s.rvar_to_var.empty()) fail("rfactor lists no RVAR:VAR pair");
    if (st.pure_loops_changed)
      fail("rfactor after splitting, fusing or annotating pure loops of " + s.stage.to_text() +
           " (Halide 14 then computes wrong results); rfactor first");
    FuncState &f = func(s.stage.func);
    std::set<std::string> pure_names;
    for (const AxisDesc &a : f.desc.pure_axes) pure_names.insert(a.name);
    std::set<std::string> rvars, vars;
    for (const auto &[rvar, var] : s.rvar_to_var) {
      if (!loop(st, s.stage, rvar).reduction) fail("rfactor of '" + rvar + "', which is not a reduction var");
      if (!rvars.insert(rvar).second) fail("rfactor lists RVar '" + rvar + "' twice");
      if (!vars.insert(var).second) fail("rfactor names new var '" + var + "' twice");
      if (pure_names.count(var) || st.used_names.count(var))
        fail("rfactor's new var '" + var + "' is already used in " + s.stage.to_text());
    }

    // The intermediate: the Func's pure axes plus one per factored RVar; its update runs
    // the stage's loops with each factored RVar replaced by its new pure var, in place.
    FuncDesc desc;
    desc.name = s.new_func;
    desc.pure_axes = f.desc.pure_axes;
    desc.consumers = {f.desc.name};
    desc.inlinable = false;
    desc.bytes_per_element = f.desc.bytes_per_element;
    desc.element_type = f.desc.element_type;
    desc.flops_per_point = f.desc.flops_per_point;
    StageState update = st;
    update.update = 0;
    update.pure_loops_changed = false;
    for (const auto &[rvar, var] : s.rvar_to_var) {
      Loop &l = update.loops[update.find(rvar)];
      const int64_t extent = update.full_extent(l);
      desc.pure_axes.push_back(AxisDesc{var, extent, false});
      update.axis_extents[var] = extent;
      l.extent_term = update.add_term(ExtentTerm{ExtentTerm::Op::Axis, var, 1, -1, -1});
      l.split_node = update.add_split_node(-1, l.extent_term);
      l.var = var;
      l.reduction = false;
      l.origins = {var};
      update.used_names.insert(var);
    }
    StageDesc pure{-1, desc.pure_axes, {}};
    desc.stages = {pure, StageDesc{0, {}, update.reads}};
    const std::vector<std::string> stage_reads = st.reads;

    // The stage now folds the partial results over the factored RVars only.
    std::vector<Loop> kept;
    for (const Loop &l : st.loops)
      if (!l.reduction || rvars.count(l.var)) kept.push_back(l);
    st.loops = kept;
    st.reads = {s.new_func};

    const std::string parent = f.desc.name;
    FuncState fresh;
    fresh.desc = desc;
    fresh.stages = {make_stage(pure, desc), update};
    fresh.reads_known = f.reads_known;
    // What the stage read, the intermediate reads now.
    for (FuncState &p : funcs_) {
      std::vector<std::string> &c = p.desc.consumers;
      if (std::find(c.begin(), c.end(), parent) == c.end()) continue;
      const bool read_by_stage =
          !f.reads_known || std::find(stage_reads.begin(), stage_reads.end(), p.desc.name) != stage_reads.end();
      if (!read_by_stage) continue;
      c.push_back(s.new_func);
      // The parent keeps reading p only if one of its other stages does.
      if (f.reads_known && !stage_reads_of(f, p.desc.name)) c.erase(std::find(c.begin(), c.end(), parent));
    }
    funcs_.insert(funcs_.begin() + index_of(parent), fresh);
  }

  /// Whether any stage of `f` (as it is now) reads `producer`.
  static bool stage_reads_of(const FuncState &f, const std::string &producer) {
    for (const StageState &st : f.stages)
      if (std::find(st.reads.begin(), st.reads.end(), producer) != st.reads.end()) return true;
    return false;
  }

  static StageState make_stage(const StageDesc &d, const FuncDesc &f) {
    StageState st;
    st.update = d.update;
    st.reads = d.reads;
    const std::vector<AxisDesc> &axes = d.axes.empty() && d.update < 0 ? f.pure_axes : d.axes;
    for (const AxisDesc &a : f.pure_axes) st.axis_extents[a.name] = a.extent;
    for (const AxisDesc &a : axes) {
      Loop l;
      l.var = a.name;
      st.axis_extents[a.name] = a.extent;
      l.extent_term = st.add_term(ExtentTerm{ExtentTerm::Op::Axis, a.name, 1, -1, -1});
      l.split_node = st.add_split_node(-1, l.extent_term);
      l.reduction = a.reduction;
      if (!a.reduction) l.origins = {a.name};
      st.loops.push_back(l);
      st.used_names.insert(a.name);
    }
    return st;
  }

  void add_func(const FuncDesc &d) {
    if (index_of(d.name) >= 0) fail("compute desc: func '" + d.name + "' appears twice");
    FuncState f;
    f.desc = d;
    if (d.stages.empty()) f.stages.push_back(make_stage(StageDesc{-1, d.pure_axes, {}}, d));
    for (size_t s = 0; s < d.stages.size(); ++s) {
      if (d.stages[s].update != static_cast<int>(s) - 1)
        fail("compute desc: stage " + std::to_string(s) + " of '" + d.name + "' has update " +
             std::to_string(d.stages[s].update) + ", expected " + std::to_string(static_cast<int>(s) - 1));
      f.stages.push_back(make_stage(d.stages[s], d));
      if (!d.stages[s].reads.empty()) f.reads_known = true;
    }
    funcs_.push_back(f);
  }

  // ---- the final state ----
  Placement::Kind compute_kind(const FuncState &f) const {
    if (f.desc.is_output) return Placement::Kind::Root;
    if (f.compute.kind != Placement::Kind::Default) return f.compute.kind;
    return f.inlinable() ? Placement::Kind::Inline : Placement::Kind::Root;
  }
  bool inlined(const FuncState &f) const { return compute_kind(f) == Placement::Kind::Inline; }

  Site site_of(const Placement &p, Placement::Kind kind) const {
    if (kind != Placement::Kind::At) return Site{};
    int fi = index_of(p.stage.func);
    return Site{false, fi, p.stage.update + 1, p.var};
  }
  Site compute_site(const FuncState &f) const { return site_of(f.compute, compute_kind(f)); }
  Site store_site(const FuncState &f) const {
    if (f.store.kind == Placement::Kind::At) return site_of(f.store, Placement::Kind::At);
    return compute_site(f);
  }

  /// The loops enclosing a site (the site's own loop first), innermost first.
  std::vector<const Loop *> enclosing_loops(Site site) const {
    std::vector<const Loop *> loops;
    for (size_t guard = 0; !site.root && guard <= funcs_.size(); ++guard) {
      const StageState &st = funcs_[site.func].stages[site.stage];
      for (size_t i = st.find(site.var); i < st.loops.size(); ++i) loops.push_back(&st.loops[i]);
      site = compute_site(funcs_[site.func]);
    }
    return loops;
  }

  /// Whether `inner` lies inside (or at) `outer`.
  bool site_inside(Site inner, const Site &outer) const {
    if (outer.root) return true;
    for (size_t guard = 0; !inner.root && guard <= funcs_.size(); ++guard) {
      if (inner.func == outer.func) {
        const StageState &st = funcs_[inner.func].stages[inner.stage];
        return inner.stage == outer.stage && st.find(inner.var) <= st.find(outer.var);
      }
      inner = compute_site(funcs_[inner.func]);
    }
    return false;
  }

  /// Whether stage `s` of Func `f` runs inside `site`.
  bool stage_inside(int f, int s, const Site &site) const {
    if (site.root) return true;
    if (f == site.func) return s == site.stage;
    return site_inside(compute_site(funcs_[f]), site);
  }

  /// The stages whose code reads Func `p` once inlined Funcs are substituted.
  std::vector<std::pair<int, int>> reader_stages(int p) const {
    std::vector<std::pair<int, int>> readers;
    for (const std::string &c : funcs_[p].desc.consumers) {
      int ci = index_of(c);
      const FuncState &cf = funcs_[ci];
      if (inlined(cf)) {
        for (const auto &r : reader_stages(ci))
          if (std::find(readers.begin(), readers.end(), r) == readers.end()) readers.push_back(r);
        continue;
      }
      for (size_t s = 0; s < cf.stages.size(); ++s) {
        const std::vector<std::string> &reads = cf.stages[s].reads;
        if (cf.reads_known && std::find(reads.begin(), reads.end(), funcs_[p].desc.name) == reads.end()) continue;
        std::pair<int, int> r{ci, static_cast<int>(s)};
        if (std::find(readers.begin(), readers.end(), r) == readers.end()) readers.push_back(r);
      }
    }
    return readers;
  }

  std::string site_text(const Site &site) const {
    if (site.root) return "root";
    return "loop " + funcs_[site.func].stage_name(site.stage) + "." + site.var;
  }

  std::optional<StepFailure> check_placement(const FuncState &f, const Placement &p, const char *what) const;
  std::optional<StepFailure> check_loop_extents(int f, int s) const;

  // ---- extents where Funcs are placed ----
  /// Loop i of stage s of Func f, measured over the region f computes where it is placed.
  int64_t loop_extent(int f, int s, int i) const;
  /// An extent term of stage s of Func f, over the region f computes where it is placed.
  int64_t term_extent(int f, int s, int term) const;
  /// The region (per pure axis, innermost first) f computes at its compute site.
  /// Memoized: extents ask for a Func's region once per loop and per consumer, recursively
  /// up the compute_at chain, which made replay the tuner's search cost.
  const std::vector<int64_t> &computed_region(int f) const {
    if (region_memo_.size() != funcs_.size()) region_memo_.assign(funcs_.size(), std::nullopt);
    if (!region_memo_[f]) region_memo_[f] = region(f, compute_site(funcs_[f]));
    return *region_memo_[f];
  }

  // ---- the tree ----
  std::vector<int64_t> region(int f, const Site &site) const;
  int64_t extent_inside(int c, const Site &site, const std::string &axis) const;
  void place(ScheduleTree &tree, int parent, const Site &site, int depth, int64_t executions,
             const std::map<std::pair<int, int>, std::vector<std::string>> &inlined_into) const;
  static int add_node(ScheduleTree &tree, int parent, ScheduleNode node);

  std::vector<FuncState> funcs_;  ///< producers before consumers
  size_t step_ = 0;
  /// computed_region per Func; valid until the next step changes the state.
  mutable std::vector<std::optional<std::vector<int64_t>>> region_memo_;
};

std::optional<StepFailure> Replay::check_placement(const FuncState &f, const Placement &p, const char *what) const {
  if (p.kind != Placement::Kind::At) return std::nullopt;
  int ci = index_of(p.stage.func);
  const FuncState &c = funcs_[ci];
  if (inlined(c))
    return StepFailure{p.step, std::string(what) + ": '" + c.desc.name + "' is inlined, so it has no loop to hold '" +
                                   f.desc.name + "'"};
  const StageState &st = c.stages[p.stage.update + 1];
  if (st.find(p.var) < 0)
    return StepFailure{p.step, std::string(what) + ": stage " + p.stage.to_text() + " has no loop '" + p.var +
                                   "' after all steps (loops, innermost first: " + st.loop_list() + ")"};
  return std::nullopt;
}

std::optional<StepFailure> Replay::check_loop_extents(int fi, int s) const {
  const FuncState &f = funcs_[fi];
  const StageState &st = f.stages[s];
  const std::string stage = f.stage_name(s);
  for (size_t i = 0; i < st.loops.size(); ++i) {
    const Loop &l = st.loops[i];
    if (l.kind != LoopKind::Vectorized) continue;
    const int64_t lanes = loop_extent(fi, s, static_cast<int>(i));
    if (lanes > kMaxVectorLanes)
      return StepFailure{l.annotated_by, stage + ": vectorized loop '" + l.var + "' has " + std::to_string(lanes) +
                                             " lanes where it is computed, more than " +
                                             std::to_string(kMaxVectorLanes)};
  }
  // Halide numbers GPU loops of one level 0, 1, 2 from the innermost outward, and block
  // loops must enclose thread loops, which enclose lane loops. A lane loop is Halide's
  // thread dimension 0, so thread loops outside it are numbered from 1.
  const LoopKind kinds[] = {LoopKind::GpuLane, LoopKind::GpuThread, LoopKind::GpuBlock};
  int innermost_allowed = 0;
  int64_t threads = 1;
  int lanes_seen = 0;
  for (LoopKind kind : kinds) {
    int next_index = kind == LoopKind::GpuThread ? lanes_seen : 0;
    int outermost = innermost_allowed;
    for (size_t i = 0; i < st.loops.size(); ++i) {
      const Loop &l = st.loops[i];
      if (l.kind != kind) continue;
      if (static_cast<int>(i) < innermost_allowed)
        return StepFailure{l.annotated_by, stage + ": " + to_text(kind) + " loop '" + l.var +
                                               "' must be outside the loops bound to finer GPU levels"};
      if (l.gpu_index != next_index)
        return StepFailure{l.annotated_by, stage + ": " + to_text(kind) + " loop '" + l.var + "' has index " +
                                               std::to_string(l.gpu_index) + " but Halide numbers " + to_text(kind) +
                                               " loops 0, 1, 2 from the innermost outward, so it would be " +
                                               std::to_string(next_index)};
      ++next_index;
      if (kind == LoopKind::GpuLane) ++lanes_seen;
      outermost = static_cast<int>(i) + 1;
      const int64_t extent = loop_extent(fi, s, static_cast<int>(i));
      if (kind == LoopKind::GpuLane && extent > 32)
        return StepFailure{l.annotated_by, stage + ": gpu_lane loop '" + l.var + "' has extent " +
                                               std::to_string(extent) + " > 32 (one warp)"};
      if (kind != LoopKind::GpuBlock) threads *= extent;
      if (threads > 1024)
        return StepFailure{l.annotated_by, stage + ": GPU threads per block reach " + std::to_string(threads) +
                                               " at loop '" + l.var + "' (at most 1024)"};
    }
    innermost_allowed = std::max(innermost_allowed, outermost);
  }
  return std::nullopt;
}

std::optional<StepFailure> Replay::check_final() const {
  // First every location must name a loop that exists, so that extents and nesting can
  // follow compute_at chains.
  for (const FuncState &f : funcs_) {
    if (f.desc.is_output) continue;
    if (auto failure = check_placement(f, f.compute, "compute_at")) return failure;
    if (auto failure = check_placement(f, f.store, "store_at")) return failure;
  }
  for (size_t fi = 0; fi < funcs_.size(); ++fi)
    for (size_t s = 0; s < funcs_[fi].stages.size(); ++s)
      if (auto failure = check_loop_extents(static_cast<int>(fi), static_cast<int>(s))) return failure;
  for (size_t fi = 0; fi < funcs_.size(); ++fi) {
    const FuncState &f = funcs_[fi];
    if (f.desc.is_output) continue;
    const Placement::Kind kind = compute_kind(f);
    if (kind == Placement::Kind::Inline) {
      if (f.store.kind == Placement::Kind::At)
        return StepFailure{f.store.step, "store_at: '" + f.desc.name + "' is inlined, so it has no storage to place"};
      if (f.memory)
        return StepFailure{f.memory_step, "store_in: '" + f.desc.name + "' is inlined, so it has no storage"};
      continue;
    }
    const Site compute = compute_site(f), store = store_site(f);
    if (!compute.root) {
      for (const auto &[reader, stage] : reader_stages(static_cast<int>(fi)))
        if (!stage_inside(reader, stage, compute))
          return StepFailure{f.compute.step, "compute_at: '" + f.desc.name + "' is also read by stage " +
                                                 funcs_[reader].stage_name(stage) + ", which does not run inside " +
                                                 site_text(compute)};
    }
    if (f.store.kind == Placement::Kind::At) {
      if (!site_inside(compute, store))
        return StepFailure{f.store.step, "store_at: '" + f.desc.name + "' is computed at " + site_text(compute) +
                                             ", which is not inside its storage " + site_text(store)};
      std::vector<const Loop *> outer = enclosing_loops(store);
      for (const Loop *l : enclosing_loops(compute)) {
        if (std::find(outer.begin(), outer.end(), l) != outer.end()) break;
        if (l->kind == LoopKind::Parallel || is_gpu(l->kind))
          return StepFailure{f.store.step, "store_at: '" + f.desc.name + "' is stored outside " + to_text(l->kind) +
                                               " loop '" + l->var + "' but computed inside it (a race)"};
      }
    }
  }
  return std::nullopt;
}

// ---- the tree ----

int64_t Replay::extent_inside(int c, const Site &site, const std::string &axis) const {
  const StageState &st = funcs_[c].stages[site.stage];
  const int at = st.find(site.var);
  bool split_outside = false;
  for (size_t i = at; i < st.loops.size(); ++i) split_outside |= st.loops[i].origins.count(axis) > 0;
  if (!split_outside) {
    // The whole axis runs inside the site: as much of it as the Func computes where it is.
    const std::vector<int64_t> &own = computed_region(c);
    const std::vector<AxisDesc> &axes = funcs_[c].desc.pure_axes;
    for (size_t a = 0; a < axes.size(); ++a)
      if (axes[a].name == axis) return own[a];
    return 1;
  }
  // The axis' loops inside the site, by split-tree node; a node whose pieces all run inside
  // covers its own extent (or the pieces' product when its split rounds up).
  // By extent term; the pieces of a fused loop count as loops of their own.
  std::map<int, int> inside;
  for (int i = 0; i < at; ++i) {
    if (st.loops[i].origins == std::set<std::string>{axis}) inside[st.loops[i].split_node] = st.loops[i].extent_term;
    for (const FusedPart &p : st.loops[i].fused_parts)
      if (p.origins == std::set<std::string>{axis}) inside[p.split_node] = p.extent_term;
  }
  std::map<int, std::optional<int64_t>> memo;
  std::function<std::optional<int64_t>(int)> covered = [&](int node) -> std::optional<int64_t> {
    auto known = memo.find(node);
    if (known != memo.end()) return known->second;
    std::optional<int64_t> result;
    auto it = inside.find(node);
    const SplitNode &n = st.split_nodes[node];
    if (it != inside.end()) {
      result = term_extent(c, site.stage, it->second);
    } else if (n.children.size() == 2) {
      const std::optional<int64_t> a = covered(n.children[0]), b = covered(n.children[1]);
      if (a && b) result = n.rounds_up ? *a * *b : term_extent(c, site.stage, n.extent_term);
    }
    return memo[node] = result;
  };
  int64_t extent = 1;
  for (size_t node = 0; node < st.split_nodes.size(); ++node) {
    const std::optional<int64_t> e = covered(static_cast<int>(node));
    const int parent = st.split_nodes[node].parent;
    if (e && (parent < 0 || !covered(parent))) extent *= *e;
  }
  return extent;
}

int64_t Replay::loop_extent(int f, int s, int i) const {
  return term_extent(f, s, funcs_[f].stages[s].loops[i].extent_term);
}

int64_t Replay::term_extent(int f, int s, int term) const {
  const FuncState &func = funcs_[f];
  const std::vector<int64_t> &region = computed_region(f);
  std::map<std::string, int64_t> axes;
  for (size_t a = 0; a < region.size(); ++a) axes[func.desc.pure_axes[a].name] = region[a];
  return func.stages[s].extent(term, axes);
}

std::vector<int64_t> Replay::region(int f, const Site &site) const {
  std::vector<int64_t> extents;
  for (const AxisDesc &a : funcs_[f].desc.pure_axes) {
    int64_t e = a.extent;
    if (!site.root) {
      for (const AxisDesc &ca : funcs_[site.func].desc.pure_axes) {
        if (ca.name == a.name) e = std::min(e, extent_inside(site.func, site, a.name));
        // The block part of a blocked axis (search/cpu/sketch.h, AxisLink) covers its lanes' share.
        if (a.name != block_axis_name(ca.name)) continue;
        for (const AxisDesc &lane : funcs_[f].desc.pure_axes)
          if (lane.name == lane_axis_name(ca.name) && lane.extent > 0)
            e = std::min(e, (extent_inside(site.func, site, ca.name) + lane.extent - 1) / lane.extent);
      }
    }
    extents.push_back(e);
  }
  return extents;
}

int Replay::add_node(ScheduleTree &tree, int parent, ScheduleNode node) {
  tree.nodes.push_back(std::move(node));
  int index = static_cast<int>(tree.nodes.size()) - 1;
  tree.nodes[parent].children.push_back(index);
  return index;
}

bool same_site(const Site &a, const Site &b) {
  if (a.root || b.root) return a.root == b.root;
  return a.func == b.func && a.stage == b.stage && a.var == b.var;
}

void Replay::place(ScheduleTree &tree, int parent, const Site &site, int depth, int64_t executions,
                   const std::map<std::pair<int, int>, std::vector<std::string>> &inlined_into) const {
  for (size_t fi = 0; fi < funcs_.size(); ++fi) {
    const FuncState &f = funcs_[fi];
    if (inlined(f)) continue;
    if (!f.desc.is_output && same_site(store_site(f), site)) {
      ScheduleNode realize;
      realize.kind = ScheduleNodeKind::Realize;
      realize.func = f.desc.name;
      realize.depth = depth;
      realize.region = region(static_cast<int>(fi), store_site(f));
      realize.bytes = f.desc.bytes_per_element;
      for (int64_t e : realize.region) realize.bytes *= e;
      realize.memory = f.memory;
      realize.element_type = f.desc.element_type;
      add_node(tree, parent, realize);
    }
    if (!same_site(compute_site(f), site)) continue;
    for (size_t s = 0; s < f.stages.size(); ++s) {
      const StageState &st = f.stages[s];
      int node = parent, d = depth;
      int64_t count = executions;
      for (size_t i = st.loops.size(); i-- > 0;) {
        const Loop &l = st.loops[i];
        ScheduleNode loop;
        loop.kind = ScheduleNodeKind::Loop;
        loop.func = f.desc.name;
        loop.update = st.update;
        loop.depth = d;
        loop.var = l.var;
        loop.extent = loop_extent(static_cast<int>(fi), static_cast<int>(s), static_cast<int>(i));
        loop.loop_kind = l.kind;
        loop.gpu_index = l.gpu_index;
        loop.reduction = l.reduction;
        node = add_node(tree, node, loop);
        count *= loop.extent;
        ++d;
        place(tree, node, Site{false, static_cast<int>(fi), static_cast<int>(s), l.var}, d, count, inlined_into);
      }
      ScheduleNode compute;
      compute.kind = ScheduleNodeKind::Compute;
      compute.func = f.desc.name;
      compute.update = st.update;
      compute.depth = d;
      compute.executions = count;
      auto it = inlined_into.find({static_cast<int>(fi), static_cast<int>(s)});
      if (it != inlined_into.end()) compute.inlined = it->second;
      add_node(tree, node, compute);
    }
  }
}

ScheduleTree Replay::build_tree() const {
  std::map<std::pair<int, int>, std::vector<std::string>> inlined_into;
  for (size_t fi = 0; fi < funcs_.size(); ++fi)
    if (inlined(funcs_[fi]))
      for (const auto &reader : reader_stages(static_cast<int>(fi)))
        inlined_into[reader].push_back(funcs_[fi].desc.name);
  ScheduleTree tree;
  tree.nodes.push_back(ScheduleNode{});
  place(tree, 0, Site{}, 0, 1, inlined_into);
  return tree;
}

std::string format_bytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  int64_t scale = 1;
  while (u < 3 && bytes >= scale * 1024) {
    scale *= 1024;
    ++u;
  }
  char text[64];
  if (bytes % scale == 0)
    std::snprintf(text, sizeof text, "%lld %s", static_cast<long long>(bytes / scale), units[u]);
  else
    std::snprintf(text, sizeof text, "%.1f %s", static_cast<double>(bytes) / static_cast<double>(scale), units[u]);
  return text;
}

std::string stage_text(const std::string &func, int update) { return StageRef{func, update}.to_text(); }

void print_node(const ScheduleTree &tree, int index, int indent, std::string &out) {
  const ScheduleNode &n = tree.nodes[index];
  std::string line(static_cast<size_t>(indent) * 2, ' ');
  switch (n.kind) {
    case ScheduleNodeKind::Root:
      break;
    case ScheduleNodeKind::Loop: {
      if (n.loop_kind != LoopKind::Serial) {
        line += to_text(n.loop_kind);
        if (is_gpu(n.loop_kind)) line += std::string(".") + "xyz"[std::clamp(n.gpu_index, 0, 2)];
        line += ' ';
      }
      line += "for " + stage_text(n.func, n.update) + "." + n.var + " in 0.." + std::to_string(n.extent);
      break;
    }
    case ScheduleNodeKind::Realize: {
      line += "realize " + n.func + " [";
      for (size_t i = 0; i < n.region.size(); ++i) line += (i ? "x" : "") + std::to_string(n.region[i]);
      line += (n.region.empty() ? "" : " ") + n.element_type + ", " + format_bytes(n.bytes) + ", " +
              (n.memory ? to_text(*n.memory) : "auto") + "]";
      break;
    }
    case ScheduleNodeKind::Compute: {
      line += "compute " + stage_text(n.func, n.update) + " (" + std::to_string(n.executions) + " points";
      if (!n.inlined.empty()) {
        line += ", inlines ";
        for (size_t i = 0; i < n.inlined.size(); ++i) line += (i ? ", " : "") + n.inlined[i];
      }
      line += ")";
      break;
    }
  }
  const bool printed = n.kind != ScheduleNodeKind::Root;
  if (printed) out += line + "\n";
  for (int child : n.children) print_node(tree, child, printed ? indent + 1 : indent, out);
}

}  // namespace

const char *to_text(LoopKind kind) {
  switch (kind) {
    case LoopKind::Serial: return "serial";
    case LoopKind::Parallel: return "parallel";
    case LoopKind::Vectorized: return "vectorized";
    case LoopKind::Unrolled: return "unrolled";
    case LoopKind::GpuBlock: return "gpu_block";
    case LoopKind::GpuThread: return "gpu_thread";
    case LoopKind::GpuLane: return "gpu_lane";
  }
  return "serial";
}

std::string ScheduleTree::to_text() const {
  std::string out;
  if (!nodes.empty()) print_node(*this, 0, 0, out);
  return out;
}

namespace {

/// validate_and_replay, also saying which step a failure belongs to (none: a failure of the
/// schedule as a whole).
Result<ScheduleTree> replay_schedule(const ComputeDesc &compute, const Schedule &schedule,
                                     std::optional<size_t> &failed_step) {
  auto at_step = [&](size_t step, const std::string &message) {
    failed_step = step;
    return make_error(ErrorKind::InvalidInput,
                      "line " + std::to_string(step_line_number(step)) + " (" + to_text(schedule.steps[step]) +
                      "): " + message);
  };
  if (schedule.version != 1)
    return make_error(ErrorKind::Unsupported,
                      "schedule version " + std::to_string(schedule.version) + " is not supported (this build reads v1)");
  try {
    Replay replay(compute);
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      try {
        replay.apply(i, schedule.steps[i]);
      } catch (const ReplayFailure &failure) {
        return at_step(i, failure.what());
      }
    }
    if (std::optional<StepFailure> failure = replay.check_final()) return at_step(failure->step, failure->message);
    return replay.build_tree();
  } catch (const ReplayFailure &failure) {
    return make_error(ErrorKind::InvalidInput, failure.what());
  }
}

}  // namespace

Result<ScheduleTree> validate_and_replay(const ComputeDesc &compute, const Schedule &schedule) {
  std::optional<size_t> ignored;
  return replay_schedule(compute, schedule, ignored);
}

std::optional<size_t> failing_step(const ComputeDesc &compute, const Schedule &schedule) {
  std::optional<size_t> step;
  if (replay_schedule(compute, schedule, step).ok()) return std::nullopt;
  return step;
}

}  // namespace tessel
