#include <Halide.h>

#include "task/group_pipeline.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <set>

#include "compute/default_schedule.h"
#include "compute/node_pipeline_internal.h"
#include "compute/op_compute.h"
#include "compute/pipeline_layout.h"
#include "graph/ir/op_registry.h"
#include "schedule/apply_schedule.h"

namespace tessel {

GroupSignature group_interface(const Graph &g, const FusedGroup &group) {
  GroupSignature sig;
  std::set<int> members(group.nodes.begin(), group.nodes.end());
  std::set<int> produced, seen_inputs;
  for (int n : group.nodes) {
    for (int t : g.node_inputs[n])
      if (t != kNoTensor && !produced.count(t) && seen_inputs.insert(t).second) sig.inputs.push_back(t);
    for (int t : g.node_outputs[n])
      if (t != kNoTensor) produced.insert(t);
  }
  // A tensor leaves the group when a graph output, a node outside the group, or the body of
  // a node outside the group (by name) reads it.
  std::set<int> read_outside(g.outputs.begin(), g.outputs.end());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (members.count(static_cast<int>(n))) continue;
    for (int t : g.node_inputs[n])
      if (t != kNoTensor) read_outside.insert(t);
    for (const std::string &name : node_body_captures(g.nodes[n]))
      if (int t = g.find_tensor(name); t != kNoTensor) read_outside.insert(t);
  }
  for (int n : group.nodes)
    for (int t : g.node_outputs[n])
      if (t != kNoTensor && read_outside.count(t)) sig.outputs.push_back(t);
  return sig;
}

namespace {

/// The Funcs of a group before any schedule: one per tensor, the kernel parameters, and
/// (plain mode) the accumulator stages rules exposed to the schedule.
struct GroupFuncs {
  std::map<int, TensorFunc> by_tensor;
  std::vector<Halide::ImageParam> parameters;
  std::vector<TensorFunc> exposed;
  std::vector<TensorFunc> sources;  // materialized inputs of exposed stages (expose_source)
  std::vector<TensorFunc> outputs;  // one per signature output, each a distinct Func
};

/// Where the members' deferred register tiles are computed (DeferredTiles): inside the
/// group's one output where it is that member's result with only elementwise ops of its
/// shape after it (the epilogue then works on the tile), else each on its own at root.
void place_deferred_tiles(const Graph &g, const FusedGroup &group, const GroupSignature &sig, GroupFuncs &funcs) {
  std::vector<std::pair<int, std::shared_ptr<DeferredTiles>>> deferred;  // result tensor, tiles
  for (const auto &[t, f] : funcs.by_tensor)
    if (f.tiles) deferred.emplace_back(t, f.tiles);
  if (deferred.empty()) return;
  bool into_output = deferred.size() == 1 && funcs.outputs.size() == 1;
  if (into_output) {
    const int produced = deferred[0].first;
    const Shape &shape = sig.types.at(produced).shape;
    into_output = funcs.outputs[0].shape == shape;
    for (int n : group.nodes) {
      const std::vector<int> &outs = g.node_outputs[n];
      if (std::find(outs.begin(), outs.end(), produced) != outs.end()) continue;
      const OpSchema *schema = find_op_schema(g.nodes[n].op_type);
      bool fits = schema && (schema->pattern == OpPattern::Elementwise || schema->pattern == OpPattern::Broadcast);
      for (int t : outs)
        if (t != kNoTensor && sig.types.at(t).shape != shape) fits = false;
      if (!fits) into_output = false;
    }
  }
  if (into_output) {
    deferred[0].second->into(funcs.outputs[0].func);
    funcs.outputs[0].scheduled = true;
    return;
  }
  for (auto &[t, tiles] : deferred) tiles->alone();
}

Result<GroupFuncs> build_group_funcs(const Graph &g, const FusedGroup &group, const GroupSignature &sig, bool plain,
                                     const std::string &where, bool unscheduled = false, bool gpu = false) {
  GroupFuncs result;
  std::map<int, TensorFunc> &funcs = result.by_tensor;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const int t = sig.inputs[i];
    const TensorType &type = sig.types.at(t);
    Halide::ImageParam param = make_dense_parameter(type, static_cast<int>(i));
    funcs[t] = TensorFunc{Halide::Func(param), type.dtype, type.shape};
    result.parameters.push_back(param);
  }
  // Member names become Func names, and a schedule names its stages by them: they come from
  // the op and its place in the group, never from the model's node names, so a record of a
  // workload key applies to every group with that key (the same conv in two models, or
  // twice in one).
  std::set<std::string> used_names;
  for (size_t position = 0; position < group.nodes.size(); ++position) {
    const int n = group.nodes[position];
    Node node = g.nodes[n];
    std::string canonical;
    for (char c : node.op_type) canonical += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!used_names.insert(canonical).second) {
      canonical += "_" + std::to_string(position);
      used_names.insert(canonical);
    }
    node.name = canonical;
    const ComputeFn *rule = find_compute_rule(node.op_type);
    if (!rule)
      return make_error(ErrorKind::Unsupported,
                        where + ": no kernel for op " + node.op_type + " (node '" + node.name + "')");
    ComputeContext ctx{node, g.opset, {}, {}, {}};
    ctx.plain = plain;
    ctx.unscheduled = unscheduled;
    ctx.gpu = gpu;
    ctx.exposed_stages = &result.exposed;
    ctx.exposed_sources = &result.sources;
    for (int t : g.node_inputs[n]) {
      if (t == kNoTensor) {
        ctx.inputs.emplace_back();
        ctx.values.push_back(nullptr);
        continue;
      }
      ctx.inputs.push_back(funcs.at(t));
      ctx.values.push_back(sig.values.size() > static_cast<size_t>(t) ? sig.values[t] : nullptr);
    }
    for (int t : g.node_outputs[n]) ctx.output_types.push_back(t == kNoTensor ? TensorType{} : sig.types.at(t));
    std::vector<TensorFunc> outputs = (*rule)(ctx);
    for (size_t i = 0; i < g.node_outputs[n].size() && i < outputs.size(); ++i) {
      const int t = g.node_outputs[n][i];
      if (t == kNoTensor || !outputs[i].defined()) continue;
      if (outputs[i].shape != sig.types.at(t).shape)
        return make_error(ErrorKind::Internal,
                          where + ": node '" + node.name + "' computes shape " + shape_to_string(outputs[i].shape) +
                          " but inference says " + shape_to_string(sig.types.at(t).shape));
      funcs[t] = outputs[i];
    }
  }

  std::set<int> output_set(sig.outputs.begin(), sig.outputs.end());
  std::set<std::string> exposed_names;
  for (const TensorFunc &f : result.exposed) exposed_names.insert(f.func.name());
  // Producers stay inline in their consumers, except reductions: Halide cannot inline a
  // Func with update definitions, so those are computed once, at root (exposed stages are
  // the schedule's to place).
  for (auto &[t, f] : funcs)
    if (!unscheduled && !output_set.count(t) && f.func.has_update_definition() && !exposed_names.count(f.func.name()) &&
        !f.func.function().schedule().compute_level().is_root())
      f.func.compute_root();

  for (int t : sig.outputs) {
    auto it = funcs.find(t);
    if (it == funcs.end())
      return make_error(ErrorKind::Internal, where + ": output '" + g.tensors[t].name + "' is not computed");
    if (shape_numel(it->second.shape) == 0)
      return make_error(ErrorKind::Unsupported, where + ": empty outputs run node by node");
    TensorFunc out = it->second;
    // Two outputs may be one Func (a rule may forward its input): copy the second, since
    // each pipeline output needs a Func of its own.
    for (const TensorFunc &f : result.outputs)
      if (f.func.name() == out.func.name()) {
        out = define_tensor(out.func.name() + "_copy", out.dtype, out.shape,
                            [&](const std::vector<Halide::Expr> &index) { return it->second.at(index); });
        break;
      }
    result.outputs.push_back(out);
  }
  place_deferred_tiles(g, group, sig, result);
  return result;
}

/// The pipeline over the group's outputs, with layouts pinned and used parameters marked.
std::shared_ptr<NodePipeline> finish_pipeline(GroupFuncs &funcs, const GroupSignature &sig) {
  auto result = std::make_shared<NodePipeline>();
  result->parameters = funcs.parameters;
  std::vector<Halide::Func> outputs;
  for (size_t i = 0; i < funcs.outputs.size(); ++i) {
    pin_dense_output_layout(funcs.outputs[i]);
    outputs.push_back(funcs.outputs[i].func);
    result->computed_outputs.push_back(static_cast<int>(i));
    result->output_types.push_back(sig.types.at(sig.outputs[i]));
  }
  result->pipeline = Halide::Pipeline(outputs);
  record_used_parameters(*result);
  return result;
}

/// A Func or RVar name without the "$N" suffixes Halide's unique_name adds when a name was
/// used before in this process ("Add_2$3" -> "Add_2", "conv_r$2$x" -> "conv_r$x"): schedules
/// name things canonically so they apply to any build of the same task.
std::string canonical_name(const std::string &name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    if (name[i] == '$') {
      size_t j = i + 1;
      while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
      if (j > i + 1 && (j == name.size() || name[j] == '$')) {
        i = j;
        continue;
      }
    }
    out += name[i++];
  }
  return out;
}

/// Rewrites the canonical names in a schedule to this build's Func and RVar names.
Result<Schedule> to_build_names(const Schedule &schedule, const std::map<std::string, std::string> &actual) {
  if (actual.empty()) return schedule;
  std::string text;
  std::string line;
  std::istringstream in(to_text(schedule));
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string word, rewritten;
    // The first word is the step's keyword, never a name ("split" is also an op's Func).
    if (words >> word) rewritten = word;
    while (words >> word) {
      // A stage reference is "func" or "func.uK".
      const size_t dot = word.find(".u");
      const std::string head = dot == std::string::npos ? word : word.substr(0, dot);
      auto it = actual.find(head);
      if (it != actual.end()) word = it->second + (dot == std::string::npos ? "" : word.substr(dot));
      rewritten += (rewritten.empty() ? "" : " ") + word;
    }
    text += rewritten + "\n";
  }
  return parse_schedule(text);
}

std::string group_location(const Graph &g, const FusedGroup &group) {
  return "fused group at node '" + g.nodes[group.nodes.front()].name + "'";
}

/// Axes of a Func's pure definition, innermost first, with the extents of `shape` (ONNX order).
std::vector<AxisDesc> pure_axes_of(const TensorFunc &f) {
  std::vector<AxisDesc> axes;
  const std::vector<Halide::Var> args = f.func.args();
  for (size_t d = 0; d < args.size(); ++d) axes.push_back({args[d].name(), f.shape.at(f.shape.size() - 1 - d), false});
  return axes;
}

/// The description of one Func as the schedule sees it.
FuncDesc describe_func(const TensorFunc &f, bool is_output) {
  FuncDesc desc;
  desc.name = canonical_name(f.func.name());
  desc.pure_axes = pure_axes_of(f);
  desc.is_output = is_output;
  desc.inlinable = !f.func.has_update_definition();
  const Halide::Type type = f.func.output_types()[0];
  desc.bytes_per_element = type.bytes();
  desc.element_type = (type.is_float() ? "f" : type.is_uint() ? "u" : "i") + std::to_string(type.bits());
  StageDesc pure;
  pure.axes = desc.pure_axes;
  desc.stages.push_back(pure);
  const Halide::Internal::Function function = f.func.function();
  for (size_t u = 0; u < function.updates().size(); ++u) {
    const Halide::Internal::Definition &def = function.update(static_cast<int>(u));
    std::map<std::string, int64_t> rvar_extent;
    for (const Halide::Internal::ReductionVariable &rv : def.schedule().rvars()) {
      const int64_t *extent = Halide::Internal::as_const_int(rv.extent);
      rvar_extent[canonical_name(rv.var)] = extent ? *extent : 1;
    }
    StageDesc stage;
    stage.update = static_cast<int>(u);
    for (const Halide::Internal::Dim &dim : def.schedule().dims()) {
      if (dim.var == Halide::Var::outermost().name()) continue;
      auto rv = rvar_extent.find(canonical_name(dim.var));
      if (rv != rvar_extent.end()) {
        stage.axes.push_back({rv->first, rv->second, true});
        continue;
      }
      int64_t extent = 1;
      for (const AxisDesc &a : desc.pure_axes)
        if (a.name == dim.var) extent = a.extent;
      stage.axes.push_back({dim.var, extent, false});
    }
    desc.stages.push_back(stage);
  }
  return desc;
}

/// Fuses a stage's pure loops (innermost first, at least one) into one, named after the
/// first with `tag`; returns it.
Halide::Var fuse_pure_loops(Halide::Stage &stage, const std::vector<std::string> &pure_vars, const std::string &tag) {
  Halide::Var fused(pure_vars.front());
  for (size_t i = 1; i < pure_vars.size(); ++i) {
    Halide::Var next(pure_vars.front() + tag + std::to_string(i));
    stage.fuse(fused, Halide::Var(pure_vars[i]), next);
    fused = next;
  }
  return fused;
}

/// Spreads one stage's pure loops over blocks of 256 GPU threads (fused into one loop
/// first, so any rank works); a stage without pure loops runs on a single GPU thread.
void bind_stage_to_gpu(Halide::Stage stage, const std::vector<std::string> &pure_vars) {
  if (pure_vars.empty()) {
    stage.gpu_single_thread();
    return;
  }
  const Halide::Var fused = fuse_pure_loops(stage, pure_vars, "_gpu_fused");
  Halide::Var block(pure_vars.front() + "_gpu_block"), thread(pure_vars.front() + "_gpu_thread");
  stage.gpu_tile(fused, block, thread, 256, Halide::TailStrategy::GuardWithIf);
}

/// The pure loop vars of one definition, innermost first.
std::vector<std::string> pure_loop_vars(const Halide::Internal::Definition &def) {
  std::set<std::string> rvars;
  for (const auto &rv : def.schedule().rvars()) rvars.insert(rv.var);
  std::vector<std::string> vars;
  for (const Halide::Internal::Dim &d : def.schedule().dims())
    if (d.var != Halide::Var::outermost().name() && !rvars.count(d.var) && d.for_type == Halide::Internal::ForType::Serial &&
        d.var.find('.') == std::string::npos)
      vars.push_back(d.var);
  return vars;
}

/// How many partial results a reduction of `extent` (its innermost reduction variable) is
/// split into: the largest divisor from 8 to 32 that leaves each partial at least two
/// elements, or 0 when there is none (the reduction stays on one thread per output).
int64_t partials_for(int64_t extent) {
  for (int64_t p = 32; p >= 8; --p)
    if (extent % p == 0 && extent / p >= 2) return p;
  return 0;
}

/// A long reduction (softmax and normalization statistics, ReduceMean/Sum/Max over an
/// axis) as two stages, so it spreads over many GPU threads instead of one thread per
/// output element looping over the whole axis: an rfactor intermediate computes
/// `partials` interleaved partial results per output (partial u takes elements u, u + P,
/// u + 2P, ... so neighbouring threads read neighbouring addresses), and the Func then
/// folds the partials. Each output element is one block whose P threads keep their
/// partials in registers (P = 32, read by warp shuffles) or shared memory; a reduction to a
/// scalar keeps them at root. The split also binds the fold on a GPU. Only a Func with one
/// update whose reduction covers at least 64 elements; returns false, changing nothing,
/// when the reduction is shorter, its innermost variable has no usable divisor, or Halide
/// cannot prove the update associative.
bool split_reduction_across_threads(Halide::Func f, bool on_gpu) {
  const Halide::Internal::Function function = f.function();
  if (function.updates().size() != 1) return false;
  const Halide::Internal::Definition &update = function.update(0);
  // rfactor needs the update to write where its pure vars say: a scatter (an index computed
  // from the reduction) is not a reduction it can split.
  const std::vector<std::string> pure_args = function.args();
  const std::vector<Halide::Expr> &lhs = update.args();
  for (size_t i = 0; i < lhs.size(); ++i) {
    const auto *v = lhs[i].as<Halide::Internal::Variable>();
    if (!v || i >= pure_args.size() || v->name != pure_args[i]) return false;
  }
  const std::vector<Halide::Internal::ReductionVariable> &rvars = update.schedule().rvars();
  if (rvars.empty()) return false;
  int64_t total = 1, inner_extent = 0;
  for (const Halide::Internal::ReductionVariable &rv : rvars) {
    const int64_t *extent = Halide::Internal::as_const_int(rv.extent);
    if (!extent) return false;
    if (inner_extent == 0) inner_extent = *extent;  // the first is the innermost
    total *= *extent;
  }
  const int64_t partials = partials_for(inner_extent);
  if (total < 64 || partials == 0) return false;
  // Proven before anything changes: a failed rfactor would leave the split behind.
  // Interleaved partials reorder the operands, so the update must also commute.
  const Halide::Internal::AssociativeOp op =
      Halide::Internal::prove_associativity(function.name(), update.args(), update.values());
  if (!op.associative() || !op.commutative()) return false;
  const std::string base = rvars.front().var;
  Halide::RVar inner_rvar(base), outer(base + "_chunk"), lane(base + "_partial");
  Halide::Var partial(function.name() + "_partial");
  Halide::Func intermediate = f.update(0).split(inner_rvar, outer, lane, static_cast<int>(partials)).rfactor(lane, partial);
  const std::vector<std::string> fold_vars = pure_loop_vars(f.function().update(0));
  // A warp's 32 partials fold as a tree: level h adds the partial `h` lanes up to each of the
  // first h lanes' (h = 16, 8, 4, 2), each level one more rfactor of the fold in lane-striped
  // registers; the last fold adds 2. Halide reads the other lane's value by a shuffle: about
  // 10 per fold (20 for a LayerNorm's two statistics), where one lane fetched all 32 before.
  std::vector<std::pair<Halide::Func, Halide::Var>> tree;  // a level, and the lane var of its sums
  constexpr int64_t kWarp = 32;
  if (partials == kWarp && !fold_vars.empty()) {
    std::string folded = lane.name();
    for (int64_t half = kWarp / 2; half >= 2; half /= 2) {
      const std::string level = base + "_tree" + std::to_string(half);
      Halide::RVar pair(level + "_pair"), low(level + "_low");
      Halide::Var slot(function.name() + "_tree" + std::to_string(half));
      tree.emplace_back(f.update(0).split(Halide::RVar(folded), pair, low, static_cast<int>(half)).rfactor(low, slot), slot);
      folded = low.name();
    }
  }
  if (fold_vars.empty()) {
    // A reduction to one scalar: the partials at root, spread over blocks of threads, and
    // a second kernel folding them.
    intermediate.compute_root();
    if (on_gpu) {
      bind_stage_to_gpu(intermediate, pure_loop_vars(intermediate.function().definition()));
      bind_stage_to_gpu(intermediate.update(0), pure_loop_vars(intermediate.function().update(0)));
      bind_stage_to_gpu(f.update(0), fold_vars);
    }
    return true;
  }
  // One block per output element: its `partials` threads (lanes of one warp) accumulate
  // interleaved partials, read by coalesced loads, and the fold reads them back in the same
  // kernel. A full warp keeps them in registers, fetched by warp shuffles over all 32 lanes
  // (shfl.sync); fewer threads share them through shared memory and a barrier. On the host
  // (GPU loops replayed serially) the same loops run unbound.
  Halide::Stage fold = f.update(0);
  // Up to three output dimensions each get a block dimension of their own: inside a fused
  // block loop Halide bounds each dimension by its whole extent (it does not invert the
  // fused index), which sizes the partials for every output along it.
  std::vector<std::string> block_vars = fold_vars;
  if (block_vars.size() > 3) {
    block_vars.resize(2);
    std::vector<std::string> outer(fold_vars.begin() + 2, fold_vars.end());
    block_vars.push_back(fuse_pure_loops(fold, outer, "_fold_fused").name());
  }
  Halide::Var block(fold_vars.front() + "_fold_block"), single(fold_vars.front() + "_fold_thread");
  fold.split(Halide::Var(block_vars.front()), block, single, 1);
  if (on_gpu) {
    fold.gpu_threads(single);
    if (block_vars.size() == 1) fold.gpu_blocks(block);
    else if (block_vars.size() == 2) fold.gpu_blocks(block, Halide::Var(block_vars[1]));
    else fold.gpu_blocks(block, Halide::Var(block_vars[1]), Halide::Var(block_vars[2]));
  }
  intermediate.compute_at(f, block);
  for (auto &[t, slot] : tree) t.compute_at(f, block);
  if (!on_gpu) return true;
  // Registers need each lane to own exactly one partial per block: every other dimension of
  // the partials must be one of the fused block's.
  bool one_per_lane = partials == kWarp;
  for (const std::string &arg : intermediate.function().args())
    one_per_lane &= arg == partial.name() || std::find(fold_vars.begin(), fold_vars.end(), arg) != fold_vars.end();
  intermediate.store_in(one_per_lane ? Halide::MemoryType::Register : Halide::MemoryType::GPUShared);
  intermediate.gpu_lanes(partial);
  intermediate.update(0).gpu_lanes(partial);
  for (auto &[t, slot] : tree) {
    t.store_in(one_per_lane ? Halide::MemoryType::Register : Halide::MemoryType::GPUShared);
    t.gpu_lanes(slot);
    t.update(0).gpu_lanes(slot);
  }
  return true;
}

/// GPU pipelines leave internal stages to this: every Func with update definitions that
/// the schedule does not place (softmax and normalization statistics, pooling windows,
/// reductions) is computed at root and, on a GPU, one thread per element, its long
/// reductions split over threads (split_reduction_across_threads); updates of outputs
/// (reductions, scatter-like rules) get the same. Pure internal Funcs stay inlined. On the
/// host (GpuLoopsOnHost) the same reductions are split, unbound, so their results can be
/// checked without a GPU.
void place_internal_stages_for_gpu(GroupFuncs &funcs, const std::map<std::string, Halide::Func> &scheduled, bool on_gpu) {
  std::set<std::string> outputs;
  for (const TensorFunc &out : funcs.outputs) outputs.insert(out.func.name());
  std::map<std::string, Halide::Internal::Function> all;
  for (const TensorFunc &out : funcs.outputs) {
    for (const auto &[name, function] : Halide::Internal::find_transitive_calls(out.func.function())) all.emplace(name, function);
    all.emplace(out.func.name(), out.func.function());
  }
  // Placed by the schedule: its Funcs by their Halide names (an rfactor intermediate is
  // keyed by the schedule's name for it, but Halide names it "<func>_intm").
  std::set<std::string> placed;
  for (const auto &[key, func] : scheduled) placed.insert(func.name());
  for (auto &[name, function] : all) {
    // A scalar output has no loop a schedule could bind: one GPU thread computes it.
    if (on_gpu && outputs.count(name) && function.args().empty()) Halide::Func(function).gpu_single_thread();
    if (function.updates().empty()) continue;
    Halide::Func f(function);
    const bool is_output = outputs.count(name) > 0;
    if (placed.count(name) && !is_output) continue;  // the schedule placed it
    if (!is_output) {
      f.compute_root();
      if (on_gpu) bind_stage_to_gpu(f, pure_loop_vars(function.definition()));
    }
    // A split reduction's fold is bound by the split itself.
    if (split_reduction_across_threads(f, on_gpu) || !on_gpu) continue;
    for (size_t u = 0; u < function.updates().size(); ++u)
      bind_stage_to_gpu(f.update(static_cast<int>(u)), pure_loop_vars(function.update(static_cast<int>(u))));
  }
}

}  // namespace

Result<std::shared_ptr<NodePipeline>> build_group_pipeline(const Graph &g, const FusedGroup &group,
                                                           const GroupSignature &sig) {
  const std::string where = group_location(g, group);
  if (sig.outputs.empty()) return make_error(ErrorKind::InvalidInput, where + ": nothing reads the group's results");
  try {
    auto funcs = build_group_funcs(g, group, sig, false, where);
    if (!funcs.ok()) return funcs.error();
    for (TensorFunc &out : funcs->outputs) apply_default_schedule(out);
    return finish_pipeline(funcs.value(), sig);
  } catch (const Halide::Error &e) {
    return make_error(ErrorKind::Internal, where + ": Halide rejected the kernel: " + e.what());
  } catch (const std::exception &e) {
    return make_error(where + ": " + e.what());
  }
}

Result<ComputeDesc> describe_group_compute(const Graph &g, const FusedGroup &group, const GroupSignature &sig) {
  const std::string where = group_location(g, group);
  if (sig.outputs.empty()) return make_error(ErrorKind::InvalidInput, where + ": nothing reads the group's results");
  try {
    auto funcs = build_group_funcs(g, group, sig, true, where);
    if (!funcs.ok()) return funcs.error();
    ComputeDesc desc;
    for (const TensorFunc &source : funcs->sources) {
      FuncDesc d = describe_func(source, false);
      d.placeable_source = true;
      for (const TensorFunc &stage : funcs->exposed)
        if (Halide::Internal::find_direct_calls(stage.func.function()).count(source.func.name()))
          d.consumers.push_back(canonical_name(stage.func.name()));
      desc.funcs.push_back(std::move(d));
    }
    for (const TensorFunc &stage : funcs->exposed) {
      FuncDesc d = describe_func(stage, false);
      // Consumers: the outputs that read it, directly or through inlined Funcs.
      for (const TensorFunc &out : funcs->outputs) {
        auto calls = Halide::Internal::find_transitive_calls(out.func.function());
        if (calls.count(stage.func.name())) d.consumers.push_back(canonical_name(out.func.name()));
      }
      desc.funcs.push_back(std::move(d));
    }
    for (const TensorFunc &out : funcs->outputs) desc.funcs.push_back(describe_func(out, true));
    return desc;
  } catch (const Halide::Error &e) {
    return make_error(ErrorKind::Internal, where + ": Halide rejected the kernel: " + e.what());
  } catch (const std::exception &e) {
    return make_error(where + ": " + e.what());
  }
}

Result<std::shared_ptr<NodePipeline>> build_scheduled_group_pipeline(const Graph &g, const FusedGroup &group,
                                                                     const GroupSignature &sig,
                                                                     const Schedule &schedule, PipelineDevice device) {
  const std::string where = group_location(g, group);
  if (sig.outputs.empty()) return make_error(ErrorKind::InvalidInput, where + ": nothing reads the group's results");
  const bool gpu_schedule = device != PipelineDevice::Host;
  try {
    auto funcs = build_group_funcs(g, group, sig, true, where, gpu_schedule, device == PipelineDevice::Gpu);
    if (!funcs.ok()) return funcs.error();
    std::map<std::string, Halide::Func> by_name;
    std::map<std::string, std::string> actual;  // canonical -> this build's name
    auto add = [&](const TensorFunc &f) {
      by_name[f.func.name()] = f.func;
      if (canonical_name(f.func.name()) != f.func.name()) actual[canonical_name(f.func.name())] = f.func.name();
      const Halide::Internal::Function function = f.func.function();
      for (size_t u = 0; u < function.updates().size(); ++u)
        for (const auto &rv : function.update(static_cast<int>(u)).schedule().rvars())
          if (canonical_name(rv.var) != rv.var) actual[canonical_name(rv.var)] = rv.var;
    };
    for (const TensorFunc &f : funcs->sources) add(f);
    for (const TensorFunc &f : funcs->exposed) add(f);
    for (const TensorFunc &f : funcs->outputs) add(f);
    auto renamed = to_build_names(schedule, actual);
    if (!renamed.ok()) return make_error(renamed.error().kind, where + ": " + renamed.error().message);
    ApplyOptions options;
    options.gpu_loops_on_host = device == PipelineDevice::GpuLoopsOnHost;
    options.no_recomputed_tails = !gpu_schedule && group.pattern <= OpPattern::Broadcast;
    if (auto applied = apply_schedule(renamed.value(), by_name, options); !applied.ok())
      return make_error(applied.error().kind, where + ": " + applied.error().message);
    if (gpu_schedule) place_internal_stages_for_gpu(funcs.value(), by_name, device == PipelineDevice::Gpu);
    // A source the schedule moved into an output's loops runs inside one thread's share:
    // its built-in parallel loop would nest a second parallel level there.
    std::set<std::string> placed;
    for (const ScheduleStep &step : renamed.value().steps)
      if (const auto *at = std::get_if<ComputeAtStep>(&step)) placed.insert(at->func);
    for (TensorFunc &source : funcs->sources)
      if (!gpu_schedule && placed.count(source.func.name()))
        for (const Halide::Var &v : source.func.args()) source.func.serial(v);
    return finish_pipeline(funcs.value(), sig);
  } catch (const Halide::Error &e) {
    return make_error(ErrorKind::InvalidInput, where + ": Halide rejected the schedule: " + e.what());
  } catch (const std::exception &e) {
    return make_error(where + ": " + e.what());
  }
}

Result<std::shared_ptr<NodePipeline>> build_unscheduled_group_pipeline(const Graph &g, const FusedGroup &group,
                                                                       const GroupSignature &sig) {
  const std::string where = group_location(g, group);
  if (sig.outputs.empty()) return make_error(ErrorKind::InvalidInput, where + ": nothing reads the group's results");
  try {
    auto funcs = build_group_funcs(g, group, sig, true, where, true);
    if (!funcs.ok()) return funcs.error();
    return finish_pipeline(funcs.value(), sig);
  } catch (const Halide::Error &e) {
    return make_error(ErrorKind::Internal, where + ": " + e.what());
  } catch (const std::exception &e) {
    return make_error(where + ": " + e.what());
  }
}

}  // namespace tessel

namespace tessel {

Result<GroupSignature> static_group_signature(const Graph &g, const FusedGroup &group) {
  GroupSignature sig = group_interface(g, group);
  sig.types.assign(g.tensors.size(), TensorType{});
  sig.values.assign(g.tensors.size(), nullptr);
  for (int n : group.nodes) {
    for (int t : g.node_inputs[n]) {
      if (t == kNoTensor) continue;
      sig.types[t] = g.tensors[t].type;
      if (g.tensors[t].constant) sig.values[t] = &*g.tensors[t].constant;
    }
    for (int t : g.node_outputs[n])
      if (t != kNoTensor) sig.types[t] = g.tensors[t].type;
  }
  for (size_t t = 0; t < sig.types.size(); ++t)
    if (sig.types[t].dtype != DType::Undefined && !sig.types[t].fully_known())
      return make_error(ErrorKind::Unsupported,
                        "tensor '" + g.tensors[t].name + "' has no static shape; the task cannot be built ahead of a run");
  return sig;
}

}  // namespace tessel
