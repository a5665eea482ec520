#include <Halide.h>

#include "schedule/apply_schedule.h"

#include <set>
#include <stdexcept>
#include <vector>

namespace tessel {
namespace {

/// An illegal step found here (not by Halide); becomes an Error at the boundary.
struct ApplyFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string &message) { throw ApplyFailure(message); }

Halide::TailStrategy halide_tail(TailStrategy tail) {
  switch (tail) {
    case TailStrategy::Auto: return Halide::TailStrategy::Auto;
    case TailStrategy::Guard: return Halide::TailStrategy::GuardWithIf;
    case TailStrategy::ShiftInwards: return Halide::TailStrategy::ShiftInwards;
    case TailStrategy::RoundUp: return Halide::TailStrategy::RoundUp;
  }
  return Halide::TailStrategy::Auto;
}

Halide::MemoryType halide_memory(MemoryKind memory) {
  switch (memory) {
    case MemoryKind::Register: return Halide::MemoryType::Register;
    case MemoryKind::Stack: return Halide::MemoryType::Stack;
    case MemoryKind::Heap: return Halide::MemoryType::Heap;
    case MemoryKind::GpuShared: return Halide::MemoryType::GPUShared;
  }
  return Halide::MemoryType::Auto;
}

/// Threads that load a cache_inputs tile together.
constexpr int kWarpSize = 32;

Halide::Expr factor_expr(int64_t factor, const char *what) {
  if (factor < 1 || factor > (int64_t{1} << 30)) fail(std::string(what) + " " + std::to_string(factor) + " is out of range");
  return Halide::Expr(static_cast<int>(factor));
}

/// Halide's messages start with "Error: " and end in newlines.
std::string halide_message(const std::string &what) {
  std::string m = what;
  if (m.rfind("Error: ", 0) == 0) m = m.substr(7);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

/// For each of `callee`'s `dims` dimensions: true where every call to it in `def` indexes
/// that dimension by reduction variables alone.
std::vector<bool> reduction_only_dims(const Halide::Internal::Definition &def, const std::string &callee,
                                      size_t dims) {
  class Calls : public Halide::Internal::IRGraphVisitor {
   public:
    Calls(const std::string &callee, size_t dims) : callee_(callee), only_(dims, true) {}
    std::vector<bool> only_;

   private:
    struct Variables : Halide::Internal::IRGraphVisitor {
      bool any_rvar = false, any_var = false;
      using Halide::Internal::IRGraphVisitor::visit;
      void visit(const Halide::Internal::Variable *v) override {
        (v->reduction_domain.defined() ? any_rvar : any_var) = true;
      }
    };
    using Halide::Internal::IRGraphVisitor::visit;
    void visit(const Halide::Internal::Call *call) override {
      Halide::Internal::IRGraphVisitor::visit(call);
      if (call->name != callee_) return;
      for (size_t d = 0; d < call->args.size() && d < only_.size(); ++d) {
        Variables vars;
        call->args[d].accept(&vars);
        if (!vars.any_rvar || vars.any_var) only_[d] = false;
      }
    }
    std::string callee_;
  };
  Calls calls(callee, dims);
  for (const Halide::Expr &e : def.values()) e.accept(&calls);
  for (const Halide::Expr &e : def.args()) e.accept(&calls);
  return calls.only_;
}

/// Replays steps onto the Funcs, tracking each stage's loop vars by name (true: an RVar).
class Applier {
 public:
  Applier(std::map<std::string, Halide::Func> &funcs, const ApplyOptions &options) : funcs_(funcs), options_(options) {}

  void apply(size_t step_index, const ScheduleStep &step) {
    step_ = step_index;
    std::visit([this](const auto &s) { this->run(s); }, step);
  }

  /// Loop vars named by compute_at/store_at must exist once all steps ran.
  std::optional<std::pair<size_t, std::string>> check_locations() {
    for (const Location &l : locations_)
      if (!vars(l.stage).count(l.var))
        return std::make_pair(l.step, "stage " + l.stage.to_text() + " has no loop '" + l.var + "' after all steps");
    return std::nullopt;
  }

  /// A Func with updates that no step placed is computed at root (tessel's default).
  void place_unplaced() {
    for (auto &[name, f] : funcs_)
      if (!placed_.count(name) && f.has_update_definition()) f.compute_root();
  }

 private:
  struct Location {
    size_t step;
    StageRef stage;
    std::string var;
  };

  Halide::Func &func(const std::string &name) {
    auto it = funcs_.find(name);
    if (it == funcs_.end()) fail("unknown func '" + name + "'");
    return it->second;
  }

  Halide::Stage stage(const StageRef &ref) {
    Halide::Func &f = func(ref.func);
    if (ref.update < 0) return f;
    if (ref.update >= f.num_update_definitions())
      fail("func '" + ref.func + "' has no update " + std::to_string(ref.update));
    return f.update(ref.update);
  }

  /// The stage's current loop vars; read from Halide's schedule the first time (names
  /// there are qualified, "x.xo", after splits: the last component is the var's name).
  std::map<std::string, bool> &vars(const StageRef &ref) {
    const std::string key = ref.to_text();
    auto it = stage_vars_.find(key);
    if (it != stage_vars_.end()) return it->second;
    Halide::Func &f = func(ref.func);
    stage(ref);  // checks the update exists
    const Halide::Internal::Definition &def =
        ref.update < 0 ? f.function().definition() : f.function().update(ref.update);
    std::map<std::string, bool> names;
    for (const Halide::Internal::Dim &d : def.schedule().dims()) {
      if (d.var == Halide::Var::outermost().name()) continue;
      names[d.var.substr(d.var.rfind('.') + 1)] = d.is_rvar();
    }
    return stage_vars_[key] = names;
  }

  Halide::VarOrRVar var(const StageRef &ref, const std::string &name) {
    auto &names = vars(ref);
    auto it = names.find(name);
    if (it == names.end()) fail("stage " + ref.to_text() + " has no loop '" + name + "'");
    return Halide::VarOrRVar(name, it->second);
  }

  /// `tail`, or a guarded one where ApplyOptions::no_recomputed_tails forbids computing a
  /// pure stage's points twice (Auto there is ShiftInwards).
  TailStrategy safe_tail(const StageRef &ref, TailStrategy tail) const {
    if (!options_.no_recomputed_tails || ref.update >= 0) return tail;
    return tail == TailStrategy::Auto || tail == TailStrategy::ShiftInwards ? TailStrategy::Guard : tail;
  }

  /// Splits var into (outer, inner) in Halide and in the name map.
  void split(const StageRef &ref, const std::string &name, const std::string &outer, const std::string &inner,
             int64_t factor, TailStrategy tail) {
    Halide::VarOrRVar old = var(ref, name);
    const bool rvar = old.is_rvar;
    stage(ref).split(old, Halide::VarOrRVar(outer, rvar), Halide::VarOrRVar(inner, rvar), factor_expr(factor, "factor"),
                     halide_tail(safe_tail(ref, tail)));
    auto &names = vars(ref);
    names.erase(name);
    names[outer] = rvar;
    names[inner] = rvar;
  }

  void run(const SplitStep &s) { split(s.stage, s.var, s.outer, s.inner, s.factor, s.tail); }

  void run(const ReorderStep &s) {
    std::vector<Halide::VarOrRVar> order;
    for (const std::string &v : s.vars) order.push_back(var(s.stage, v));
    stage(s.stage).reorder(order);
  }

  void run(const FuseStep &s) {
    Halide::VarOrRVar inner = var(s.stage, s.inner), outer = var(s.stage, s.outer);
    // Fusing an RVar with a pure var needs an RVar result (Halide 14 then accepts it).
    const bool rvar = inner.is_rvar || outer.is_rvar;
    stage(s.stage).fuse(inner, outer, Halide::VarOrRVar(s.fused, rvar));
    auto &names = vars(s.stage);
    names.erase(s.inner);
    names.erase(s.outer);
    names[s.fused] = rvar;
  }

  void run(const TileStep &s) {
    Halide::VarOrRVar x = var(s.stage, s.x), y = var(s.stage, s.y);
    stage(s.stage).tile(x, y, Halide::VarOrRVar(s.xo, x.is_rvar), Halide::VarOrRVar(s.yo, y.is_rvar),
                        Halide::VarOrRVar(s.xi, x.is_rvar), Halide::VarOrRVar(s.yi, y.is_rvar),
                        factor_expr(s.x_factor, "x factor"), factor_expr(s.y_factor, "y factor"),
                        halide_tail(safe_tail(s.stage, s.tail)));
    auto &names = vars(s.stage);
    names.erase(s.x);
    names.erase(s.y);
    names[s.xo] = names[s.xi] = x.is_rvar;
    names[s.yo] = names[s.yi] = y.is_rvar;
  }

  void run(const VectorizeStep &s) {
    std::string name = s.var;
    if (s.width) {
      name = vectorized_inner_name(s.var);
      split(s.stage, s.var, s.var, name, *s.width, TailStrategy::Auto);
    }
    stage(s.stage).vectorize(var(s.stage, name));
  }

  void run(const UnrollStep &s) {
    std::string name = s.var;
    if (s.factor) {
      name = unrolled_inner_name(s.var);
      split(s.stage, s.var, s.var, name, *s.factor, TailStrategy::Auto);
    }
    stage(s.stage).unroll(var(s.stage, name));
  }

  void run(const ParallelStep &s) {
    if (s.task_size) split(s.stage, s.var, s.var, parallel_task_name(s.var), *s.task_size, TailStrategy::Auto);
    stage(s.stage).parallel(var(s.stage, s.var));
  }

  void run(const BindStep &s) {
    // Halide numbers GPU loops by nesting; validate_and_replay checks the index agrees.
    Halide::VarOrRVar v = var(s.stage, s.var);
    Halide::Stage st = stage(s.stage);
    if (options_.gpu_loops_on_host) return;
    switch (s.axis) {
      case GpuAxis::Block: st.gpu_blocks(v); break;
      case GpuAxis::Thread: st.gpu_threads(v); break;
      case GpuAxis::Lane: st.gpu_lanes(v); break;
    }
  }

  Halide::LoopLevel loop_level(const StageRef &consumer, const std::string &name) {
    stage(consumer);
    auto &names = vars(consumer);
    auto it = names.find(name);
    locations_.push_back(Location{step_, consumer, name});
    return Halide::LoopLevel(func(consumer.func), Halide::VarOrRVar(name, it != names.end() && it->second));
  }

  void run(const ComputeAtStep &s) {
    Halide::Func &f = func(s.func);
    f.compute_at(loop_level(s.consumer, s.var));
    placed_.insert(s.func);
  }

  void run(const StoreAtStep &s) {
    Halide::Func &f = func(s.func);
    f.store_at(loop_level(s.consumer, s.var));
  }

  void run(const ComputeInlineStep &s) {
    // Halide 14 accepts this and quietly computes the Func somewhere else (measured).
    if (func(s.func).has_update_definition()) fail("'" + s.func + "' has update definitions and cannot be inlined");
    func(s.func).compute_inline();
    placed_.insert(s.func);
  }

  void run(const ComputeRootStep &s) {
    func(s.func).compute_root();
    placed_.insert(s.func);
  }

  void run(const StoreInStep &s) {
    const bool gpu_memory = s.memory == MemoryKind::GpuShared || s.memory == MemoryKind::Register;
    if (options_.gpu_loops_on_host && gpu_memory) {
      func(s.func);  // still checks the name
      return;
    }
    func(s.func).store_in(halide_memory(s.memory));
  }

  void run(const CacheInputsStep &s) {
    Halide::Func &consumer = func(s.stage.func);
    stage(s.stage);
    const Halide::LoopLevel at = loop_level(s.stage, s.var);
    const Halide::Internal::Definition &def =
        s.stage.update < 0 ? consumer.function().definition() : consumer.function().update(s.stage.update);
    for (const auto &[name, callee] : Halide::Internal::find_direct_calls(consumer.function())) {
      if (name == consumer.name()) continue;  // an update reads its own Func
      Halide::Func tile = Halide::Func(callee).in(consumer);
      tile.compute_at(at);
      std::vector<Halide::Var> dims = tile.args();
      // Dimensions the stage indexes by reduction variables alone (a matmul's k) stored
      // outermost: at one reduction step the lanes' register tile then reads neighbouring
      // shared-memory words (vector loads) instead of words a stage apart.
      const std::vector<bool> reduction_only = reduction_only_dims(def, name, dims.size());
      std::vector<Halide::Var> storage;
      for (size_t d = 0; d < dims.size(); ++d)
        if (!reduction_only[d]) storage.push_back(dims[d]);
      for (size_t d = 0; d < dims.size(); ++d)
        if (reduction_only[d]) storage.push_back(dims[d]);
      if (storage.size() > 1) tile.reorder_storage(storage);
      // Every element of the tile, innermost dimension first, dealt out to the block's
      // threads a warp-wide row at a time: neighbouring threads load neighbouring addresses.
      // gpu_threads rather than gpu_lanes: Halide 14 puts a block barrier between thread
      // loops that write shared memory and the loops that read it, but none between lane
      // loops (measured in PTX).
      Halide::Var all = dims.front();
      for (size_t d = 1; d < dims.size(); ++d) {
        Halide::Var fused(all.name() + "_" + dims[d].name());
        tile.fuse(all, dims[d], fused);
        all = fused;
      }
      Halide::Var rows(all.name() + "_row"), thread(all.name() + "_thread"), lanes(all.name() + "_vec");
      if (s.vector > 1) {
        tile.split(all, all, lanes, static_cast<int>(s.vector), Halide::TailStrategy::GuardWithIf);
        if (!options_.gpu_loops_on_host) tile.vectorize(lanes);
      }
      tile.split(all, rows, thread, kWarpSize, Halide::TailStrategy::GuardWithIf);
      Halide::Var warp(all.name() + "_warp");
      if (s.warps > 1) tile.split(rows, rows, warp, static_cast<int>(s.warps), Halide::TailStrategy::GuardWithIf);
      if (options_.gpu_loops_on_host) continue;
      tile.store_in(Halide::MemoryType::GPUShared).gpu_threads(thread);
      if (s.warps > 1) tile.gpu_threads(warp);
    }
  }

  void run(const RfactorStep &s) {
    if (s.stage.update < 0) fail("rfactor needs an update stage");
    if (funcs_.count(s.new_func)) fail("func '" + s.new_func + "' already exists");
    std::vector<std::pair<Halide::RVar, Halide::Var>> preserved;
    for (const auto &[rvar, pure] : s.rvar_to_var) {
      if (!var(s.stage, rvar).is_rvar) fail("'" + rvar + "' is not a reduction var");
      preserved.emplace_back(Halide::RVar(rvar), Halide::Var(pure));
    }
    Halide::Func intermediate = stage(s.stage).rfactor(preserved);
    funcs_.emplace(s.new_func, intermediate);
    stage_vars_.erase(s.stage.to_text());  // Halide rewrote the stage: read it again
  }

  std::map<std::string, Halide::Func> &funcs_;
  ApplyOptions options_;
  std::map<std::string, std::map<std::string, bool>> stage_vars_;
  std::set<std::string> placed_;
  std::vector<Location> locations_;
  size_t step_ = 0;
};

}  // namespace

Result<void> apply_schedule(const Schedule &schedule, std::map<std::string, Halide::Func> &funcs_by_name,
                            const ApplyOptions &options) {
  auto at_step = [&](size_t step, const std::string &message) {
    return make_error(ErrorKind::InvalidInput,
                      "line " + std::to_string(step_line_number(step)) + " (" + to_text(schedule.steps[step]) +
                      "): " + message);
  };
  if (schedule.version != 1)
    return make_error(ErrorKind::Unsupported,
                      "schedule version " + std::to_string(schedule.version) + " is not supported (this build reads v1)");
  Applier applier(funcs_by_name, options);
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    try {
      applier.apply(i, schedule.steps[i]);
    } catch (const ApplyFailure &e) {
      return at_step(i, e.what());
    } catch (const Halide::Error &e) {
      return at_step(i, "Halide: " + halide_message(e.what()));
    } catch (const std::exception &e) {
      return at_step(i, e.what());
    }
  }
  try {
    if (auto failure = applier.check_locations()) return at_step(failure->first, failure->second);
    applier.place_unplaced();
  } catch (const ApplyFailure &e) {
    return make_error(ErrorKind::InvalidInput, e.what());
  } catch (const Halide::Error &e) {
    return make_error(ErrorKind::InvalidInput, "Halide: " + halide_message(e.what()));
  }
  return {};
}

Result<void> apply_schedule_text(const std::string &text, std::map<std::string, Halide::Func> &funcs_by_name) {
  Result<Schedule> schedule = parse_schedule(text);
  if (!schedule) return schedule.error();
  return apply_schedule(*schedule, funcs_by_name);
}

}  // namespace tessel
