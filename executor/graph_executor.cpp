#include "executor/graph_executor.h"

#include "executor/host_ops.h"
#include "executor/kernel_cache.h"
#include "graph/fusion/fuse.h"
#include "graph/infer/shape_inference.h"
#include "graph/ir/op_registry.h"
#include "host/host_op.h"

namespace tessel {

const Tensor *Scope::find(const std::string &name) const {
  for (const Scope *s = this; s != nullptr; s = s->parent) {
    if (!s->graph) continue;
    int id = s->graph->find_tensor(name);
    if (id != kNoTensor && (*s->values)[id].defined()) return &(*s->values)[id];
  }
  return nullptr;
}

GraphExecutor::GraphExecutor(std::shared_ptr<const Graph> graph, Target target, ExecutorOptions options)
    : graph_(std::move(graph)), target_(std::move(target)), options_(options) {
  const Graph &g = *graph_;
  if (options_.fuse) {
    groups_ = partition_graph(g);
    for (const FusedGroup &group : groups_) signatures_.push_back(group_interface(g, group));
    tuned_schedule_.resize(groups_.size());
    if (options_.schedule_for)
      for (size_t i = 0; i < groups_.size(); ++i) {
        const FusedGroup &group = groups_[i];
        if (group.nodes.size() == 1 && runs_on_host(g.nodes[group.nodes[0]].op_type)) continue;
        if (auto text = options_.schedule_for(workload_key(g, group))) {
          tuned_schedule_[i] = *text;
          builtin_best_groups_ += text->empty();
        }
      }
    if (options_.use_memory_plan) plan_ = plan_memory(g, groups_);
  } else {
    for (int n : g.topological_order()) groups_.push_back(FusedGroup{{n}, n, node_pattern(g.nodes[n])});
  }
  if (!options_.fuse || !options_.use_memory_plan) plan_.arena_offset.assign(g.tensors.size(), MemoryPlan::kNotInArena);
}

Result<void> GraphExecutor::check_inputs(const std::vector<Tensor> &inputs) const {
  const Graph &g = *graph_;
  if (inputs.size() != g.inputs.size()) {
    std::string names;
    for (int t : g.inputs) names += (names.empty() ? "" : ", ") + g.tensors[t].name;
    return make_error(ErrorKind::InvalidInput,
                      "the model takes " + std::to_string(g.inputs.size()) + " input(s) (" + names +
                      "), got " + std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo &info = g.tensors[g.inputs[i]];
    const Tensor &given = inputs[i];
    if (info.type.dtype != DType::Undefined && given.dtype() != info.type.dtype)
      return make_error(ErrorKind::InvalidInput,
                        "input '" + info.name + "' must be " + dtype_name(info.type.dtype) + ", got " +
                        dtype_name(given.dtype()));
    if (!info.type.rank_known) continue;
    bool match = info.type.shape.size() == given.shape().size();
    for (size_t d = 0; match && d < given.shape().size(); ++d)
      match = info.type.shape[d] == kUnknownDim || info.type.shape[d] == given.shape()[d];
    if (!match)
      return make_error(ErrorKind::InvalidInput,
                        "input '" + info.name + "' must have shape " + shape_to_string(info.type.shape) +
                        ", got " + shape_to_string(given.shape()));
  }
  return {};
}

Result<std::vector<Tensor>> run_node(const Node &node, int64_t opset, const std::vector<const Tensor *> &inputs,
                                     const std::vector<bool> &outputs_wanted, const Scope &scope,
                                     const Target &target, const OutputAllocator &allocate) {
  const size_t num_outputs = outputs_wanted.size();
  HostOpContext host{node, opset, inputs, scope, target};
  if (node.op_type == "If") return run_if(host);
  if (node.op_type == "Loop") return run_loop(host);
  if (node.op_type == "Scan") return run_scan(host);

  std::vector<TensorType> in_types;
  for (const Tensor *t : inputs) in_types.push_back(t ? t->type() : TensorType{});
  auto out_types = infer_node_types(node, opset, in_types, inputs, num_outputs);
  if (!out_types.ok()) return out_types.error();
  if (output_shape_depends_on_values(node.op_type))
    return evaluate_host_op(HostCall{node, opset, inputs, out_types.value()});
  for (size_t i = 0; i < num_outputs; ++i)
    if (outputs_wanted[i] && !out_types.value()[i].fully_known())
      return make_error(ErrorKind::Unsupported,
                        "node '" + node.name + "' (" + node.op_type + "): could not infer the shape of output " +
                        std::to_string(i));
  if (is_host_op(node.op_type)) return run_host_op(host, out_types.value());

  std::vector<Tensor> outputs;
  bool all_empty = true;
  for (size_t i = 0; i < num_outputs; ++i) {
    const TensorType &t = out_types.value()[i];
    if (!t.fully_known()) outputs.emplace_back();
    else outputs.push_back(allocate && outputs_wanted[i] ? allocate(static_cast<int>(i), t) : Tensor(t.dtype, t.shape));
    all_empty &= t.fully_known() && shape_numel(t.shape) == 0;
  }
  if (all_empty) return outputs;  // nothing to compute; the kernel skips empty outputs

  const OpSchema *schema = find_op_schema(node.op_type);
  std::vector<const Tensor *> baked(inputs.size(), nullptr);
  for (int v : schema->value_inputs)
    if (v < static_cast<int>(inputs.size())) baked[v] = inputs[v];
  auto kernel = get_or_compile_kernel(node, opset, in_types, baked, out_types.value(), target);
  if (!kernel.ok()) return kernel.error();
  auto ran = kernel->run(inputs, outputs);
  if (!ran.ok())
    return make_error(ran.error().kind, "node '" + node.name + "' (" + node.op_type + "): " + ran.error().message);
  return outputs;
}

Result<std::vector<Tensor>> GraphExecutor::run(const std::vector<Tensor> &inputs) const {
  if (auto ok = check_inputs(inputs); !ok.ok()) return ok.error();
  return run(inputs, nullptr);
}

/// The values of one run: by tensor id, plus the arena intermediate tensors live in.
struct GraphExecutor::RunState {
  std::vector<Tensor> env;
  const Scope *outer = nullptr;
  Scope scope;
  std::shared_ptr<uint8_t[]> arena;
  uint8_t *arena_base = nullptr;
  int launches = 0;
  GroupSignature signature;  // scratch for run_group

  const Tensor *lookup(const Graph &g, int t) const {
    if (env[t].defined()) return &env[t];
    return outer ? outer->find(g.tensors[t].name) : nullptr;
  }
};

namespace {
constexpr int kArenaAlignment = 64;
}

int GraphExecutor::tuned_groups() const {
  int count = 0;
  for (const std::string &s : tuned_schedule_) count += !s.empty();
  return count;
}

std::shared_ptr<uint8_t[]> GraphExecutor::take_arena() const {
  if (plan_.arena_bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(arena_mutex_);
  if (!free_arenas_.empty()) {
    auto arena = std::move(free_arenas_.back());
    free_arenas_.pop_back();
    return arena;
  }
  return std::shared_ptr<uint8_t[]>(new uint8_t[plan_.arena_bytes + kArenaAlignment]);
}

void GraphExecutor::return_arena(std::shared_ptr<uint8_t[]> arena) const {
  if (!arena) return;
  std::lock_guard<std::mutex> lock(arena_mutex_);
  free_arenas_.push_back(std::move(arena));
}

/// Memory for tensor t: its arena slot when the plan has one for exactly this type.
static Tensor allocate_tensor(const Graph &g, const MemoryPlan &plan, const std::shared_ptr<uint8_t[]> &arena,
                              uint8_t *base, int t, const TensorType &type) {
  const TensorType &planned = g.tensors[t].type;
  if (arena && plan.arena_offset[t] != MemoryPlan::kNotInArena && planned.fully_known() &&
      planned.dtype == type.dtype && planned.shape == type.shape)
    return Tensor::in_storage(arena, base + plan.arena_offset[t], type.dtype, type.shape);
  return Tensor(type.dtype, type.shape);
}

Result<void> GraphExecutor::run_nodes_of(const FusedGroup &group, RunState &state) const {
  const Graph &g = *graph_;
  for (int n : group.nodes) {
    std::vector<const Tensor *> node_inputs;
    for (int t : g.node_inputs[n]) {
      if (t == kNoTensor) { node_inputs.push_back(nullptr); continue; }
      const Tensor *value = state.lookup(g, t);
      if (!value)
        return make_error(ErrorKind::InvalidInput,
                          "node '" + g.nodes[n].name + "' (" + g.nodes[n].op_type + "): input '" + g.tensors[t].name +
                          "' has no value");
      node_inputs.push_back(value);
    }
    std::vector<bool> wanted;
    for (int t : g.node_outputs[n]) wanted.push_back(t != kNoTensor);
    OutputAllocator allocate = [&](int index, const TensorType &type) {
      return allocate_tensor(g, plan_, state.arena, state.arena_base, g.node_outputs[n][index], type);
    };
    auto outputs = run_node(g.nodes[n], g.opset, node_inputs, wanted, state.scope, target_, allocate);
    if (!outputs.ok()) return outputs.error();
    if (!runs_on_host(g.nodes[n].op_type)) ++state.launches;
    for (size_t i = 0; i < g.node_outputs[n].size() && i < outputs->size(); ++i)
      if (g.node_outputs[n][i] != kNoTensor) state.env[g.node_outputs[n][i]] = std::move((*outputs)[i]);
  }
  return {};
}

Result<void> GraphExecutor::run_group(size_t index, RunState &state) const {
  const Graph &g = *graph_;
  const FusedGroup &group = groups_[index];
  const std::string &tuned = tuned_schedule_.empty() ? std::string() : tuned_schedule_[index];
  if (group.nodes.size() == 1 && tuned.empty()) return run_nodes_of(group, state);

  // Concrete types of everything the group touches; a member whose output type is not
  // known from its inputs' types (it needs a value computed inside the group) makes the
  // group run node by node.
  if (signatures_[index].outputs.empty()) return {};  // dead code: nothing reads what the group computes
  // One signature per run, sized once: each group overwrites only the entries of the
  // tensors it touches, which are all anything below reads.
  GroupSignature &sig = state.signature;
  if (sig.types.size() != g.tensors.size()) {
    sig.types.assign(g.tensors.size(), TensorType{});
    sig.values.assign(g.tensors.size(), nullptr);
  }
  sig.inputs = signatures_[index].inputs;
  sig.outputs = signatures_[index].outputs;
  std::vector<const Tensor *> inputs;
  for (int t : sig.inputs) {
    const Tensor *value = state.lookup(g, t);
    if (!value) return run_nodes_of(group, state);  // reports the missing value
    sig.types[t] = value->type();
    sig.values[t] = value;
    inputs.push_back(value);
  }
  for (int n : group.nodes) {
    std::vector<TensorType> in_types;
    std::vector<const Tensor *> in_values;
    for (int t : g.node_inputs[n]) {
      in_types.push_back(t == kNoTensor ? TensorType{} : sig.types[t]);
      in_values.push_back(t == kNoTensor ? nullptr : sig.values[t]);
    }
    auto out_types = infer_node_types(g.nodes[n], g.opset, in_types, in_values, g.node_outputs[n].size());
    if (!out_types.ok()) return run_nodes_of(group, state);
    for (size_t i = 0; i < g.node_outputs[n].size(); ++i) {
      const int t = g.node_outputs[n][i];
      if (t == kNoTensor) continue;
      const TensorType &type = out_types.value()[i];
      if (!type.fully_known() || shape_numel(type.shape) == 0) return run_nodes_of(group, state);
      sig.types[t] = type;
      sig.values[t] = nullptr;  // computed inside: never a baked value
    }
  }
  // A tuned schedule applies only to the static types its workload key describes.
  bool use_tuned = !tuned.empty();
  for (int n : group.nodes)
    for (const std::vector<int> *tensors : {&g.node_inputs[n], &g.node_outputs[n]})
      for (int t : *tensors)
        use_tuned = use_tuned && (t == kNoTensor || sig.types[t] == g.tensors[t].type);
  const std::string key = group_kernel_key(g, group, sig);
  Result<JitKernel> kernel = use_tuned ? get_or_compile_tuned_group_kernel(key, tuned, g, group, sig, target_)
                                       : get_or_compile_group_kernel(key, g, group, sig, target_);
  if (!kernel.ok() && use_tuned) kernel = get_or_compile_group_kernel(key, g, group, sig, target_);
  if (!kernel.ok()) return run_nodes_of(group, state);

  std::vector<Tensor> outputs;
  for (int t : sig.outputs) outputs.push_back(allocate_tensor(g, plan_, state.arena, state.arena_base, t, sig.types[t]));
  auto ran = kernel->run(inputs, outputs);
  if (!ran.ok()) {
    const Node &anchor = g.nodes[group.anchor >= 0 ? group.anchor : group.nodes.back()];
    return make_error(ran.error().kind,
                      "fused group of node '" + anchor.name + "' (" + anchor.op_type + "): " + ran.error().message);
  }
  ++state.launches;
  for (size_t i = 0; i < sig.outputs.size(); ++i) state.env[sig.outputs[i]] = std::move(outputs[i]);
  return {};
}

Result<std::vector<Tensor>> GraphExecutor::run(const std::vector<Tensor> &inputs, const Scope *outer) const {
  const Graph &g = *graph_;
  if (inputs.size() != g.inputs.size())
    return make_error(ErrorKind::InvalidInput,
                      "graph '" + g.name + "' takes " + std::to_string(g.inputs.size()) + " inputs, got " +
                      std::to_string(inputs.size()));
  RunState state;
  state.env.resize(g.tensors.size());
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].constant && g.tensor_producer[t] < 0) state.env[t] = *g.tensors[t].constant;
  for (size_t i = 0; i < inputs.size(); ++i) state.env[g.inputs[i]] = inputs[i];
  state.outer = outer;
  state.scope = Scope{&g, &state.env, outer};
  state.arena = take_arena();
  if (state.arena) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(state.arena.get());
    state.arena_base = state.arena.get() + (kArenaAlignment - p % kArenaAlignment) % kArenaAlignment;
  }
  std::vector<bool> is_output(g.tensors.size(), false);
  for (int t : g.outputs) is_output[t] = true;

  Result<void> status;
  try {
    for (size_t i = 0; i < groups_.size() && status.ok(); ++i) {
      status = run_group(i, state);
      // A graph output must not stay in the arena: later groups reuse those bytes (a view
      // of an intermediate can be an output) and the caller keeps it after the run.
      if (state.arena)
        for (int n : groups_[i].nodes)
          for (int t : g.node_outputs[n])
            if (t != kNoTensor && is_output[t] && state.env[t].defined() && state.env[t].storage() == state.arena)
              state.env[t] = state.env[t].clone();
    }
  } catch (const std::exception &e) {
    status = make_error(e.what());
  }
  last_launches_ = state.launches;
  std::vector<Tensor> results;
  if (status.ok())
    for (int t : g.outputs) {
      const Tensor *value = state.lookup(g, t);
      if (!value) {
        status = make_error(ErrorKind::InvalidInput, "graph output '" + g.tensors[t].name + "' was never computed");
        break;
      }
      results.push_back(*value);
    }
  // Release every arena tensor before the arena can serve another run.
  state.env.clear();
  if (state.arena.use_count() == 1) return_arena(std::move(state.arena));
  if (!status.ok()) return status.error();
  return results;
}

}  // namespace tessel
