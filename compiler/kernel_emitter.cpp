// The artifact compiler's main pass: every fused group becomes plan steps, in graph order.
// A view is a plan alias (or a copy when it is a graph output); a task is one kernel call
// with its tuned schedule, or its built-in one, or, when the group cannot be one kernel,
// one call per node as the executor runs it.
#include <optional>

#include "compiler/artifact_build.h"
#include "task/kernel_key.h"
#include "task/task.h"

namespace tessel {

namespace {

/// A view node: an alias in the plan, or a copy when the view is a graph output.
void emit_view(ArtifactBuild &build, int node) {
  const Graph &g = build.graph;
  const int out = g.node_outputs[node].empty() ? kNoTensor : g.node_outputs[node][0];
  if (out == kNoTensor || build.uses[out] == 0) return;
  const int in = g.node_inputs[node][0];
  // A view that is a graph output is copied out now: the arena bytes it shows are reused by
  // later kernels.
  if (build.plan.is_graph_output(out)) build.plan.copy(in, out);
  // The memory plan aliases a view of an arena tensor to it; a view of an input or a weight
  // (or of such a view) has an arena slot of its own that nothing writes: it views its source.
  else if (!build.plan.in_arena(out) || !build.plan.in_arena(in) || build.plan.is_view(in)) build.plan.view(out, in);
}

/// compile_kernel, with the call added to the plan.
Result<KernelCall> emit_kernel(ArtifactBuild &build, const FusedGroup &group, const GroupSignature &sig,
                               const std::string &schedule_text) {
  auto kernel = compile_kernel(build, group, sig, schedule_text);
  if (!kernel.ok()) return kernel.error();
  build.plan.kernel(kernel->symbol, kernel->args);
  ++build.summary.kernel_steps;
  return kernel;
}

/// The group's nodes one by one with their built-in schedules; the kernel names joined by "+".
Result<std::string> emit_nodes(ArtifactBuild &build, const FusedGroup &group) {
  const Graph &g = build.graph;
  std::string kernels;
  for (int n : group.nodes) {
    FusedGroup single{{n}, n, node_pattern(g.nodes[n])};
    auto sig = static_group_signature(g, single);
    if (!sig.ok()) return make_error(sig.error().kind, "node '" + g.nodes[n].name + "': " + sig.error().message);
    auto done = emit_kernel(build, single, sig.value(), "");
    if (!done.ok())
      return make_error(done.error().kind,
                        "node '" + g.nodes[n].name + "' (" + g.nodes[n].op_type + "): " + done.error().message);
    kernels += (kernels.empty() ? "" : "+") + done->symbol;
  }
  return kernels;
}

/// The manifest entry of a task, with its record when the database has one.
deploy::ArtifactTask describe_task(const ArtifactBuild &build, const FusedGroup &group, const std::string &key,
                                   int64_t flops, const std::optional<DeployedSchedule> &record) {
  deploy::ArtifactTask task;
  task.ops = group_ops_text(build.graph, group);
  task.workload_key = key;
  task.flops = flops;
  task.tuned = record.has_value();
  if (record) {
    task.schedule_hash = record->schedule_hash;
    task.record_median_seconds = record->median_seconds;
  }
  return task;
}

/// One task: its record's schedule, else the built-in one, else node by node.
Result<void> emit_task(ArtifactBuild &build, const FusedGroup &group, const GroupSignature &sig) {
  const std::string key = workload_key(build.graph, group);
  const int64_t flops = group_flops(build.graph, group);
  build.total_flops += flops;
  std::optional<DeployedSchedule> record;
  if (build.options.schedules) {
    auto found = build.options.schedules(key);
    if (!found.ok()) return found.error();
    record = found.value();
  }
  deploy::ArtifactTask task = describe_task(build, group, key, flops, record);
  const std::string schedule_text = record ? record->schedule_text : std::string();
  auto emitted = emit_kernel(build, group, sig, schedule_text);
  if (!emitted.ok() && !schedule_text.empty()) {
    build.summary.warnings.push_back("the tuned schedule of " + task.ops + " (" + record->schedule_hash +
                                     ") does not build here (" + emitted.error().message + "); using the default");
    task.tuned = false;
    emitted = emit_kernel(build, group, sig, "");
  }
  if (emitted.ok()) {
    task.kernel = emitted->symbol;
    if (build.options.alternatives && task.tuned)
      if (auto added = add_alternatives(build, group, sig, task, *record, emitted.value()); !added.ok())
        return added.error();
  } else {
    // The group cannot be one kernel: its nodes run one by one, as the executor does.
    auto kernels = emit_nodes(build, group);
    if (!kernels.ok()) return kernels.error();
    task.kernel = kernels.value();
    task.tuned = false;
  }
  if (task.tuned) ++build.summary.tuned_tasks;
  else {
    ++build.summary.default_tasks;
    build.untuned.emplace_back(task.ops, flops);
  }
  build.manifest.tasks.push_back(task);
  return {};
}

}  // namespace

Result<KernelCall> compile_kernel(ArtifactBuild &build, const FusedGroup &group, const GroupSignature &sig,
                                  const std::string &schedule_text) {
  // Every kernel of a cuda artifact runs on the GPU: without a record, the default GPU schedule.
  const Task task = make_kernel_task(borrow_graph(build.graph), group, sig);
  std::optional<Schedule> schedule;
  if (!schedule_text.empty()) {
    auto parsed = parse_schedule(schedule_text);
    if (!parsed.ok()) return parsed.error();
    schedule = std::move(parsed.value());
  }
  auto pipeline = build_pipeline(task, schedule ? &*schedule : nullptr, build.target);
  if (!pipeline.ok()) return pipeline.error();
  const std::string key = group_kernel_key(build.graph, group, sig) + "\n" + schedule_text;
  auto it = build.compiled.find(key);
  if (it == build.compiled.end()) {
    const std::string symbol = "tessel_k" + std::to_string(build.compiled.size());
    auto object = compile_to_object(*pipeline.value(), build.target, build.staging.file("objects/" + symbol), symbol);
    if (!object.ok()) return object.error();
    build.object_paths.push_back(object->object_path);
    if (object->gpu_max_registers > 0) build.manifest.gpu_max_registers[symbol] = object->gpu_max_registers;
    it = build.compiled.emplace(key, std::make_pair(symbol, object.value())).first;
  }
  const AotOutput &object = it->second.second;
  KernelCall call{it->second.first, {}};
  for (int i : object.used_inputs) call.args.push_back(sig.inputs[i]);
  for (int o : object.computed_outputs) call.args.push_back(sig.outputs[o]);
  return call;
}

Result<void> emit_kernels(ArtifactBuild &build) {
  const Graph &g = build.graph;
  for (size_t i = 0; i < build.groups.size(); ++i) {
    const FusedGroup &group = build.groups[i];
    const Node &first = g.nodes[group.nodes.front()];
    if (build.host_group[i]) {
      if (auto emitted = emit_host_group(build, group); !emitted.ok()) return emitted.error();
      continue;
    }
    // Its inputs' kernels wrote them where the output's slices are: nothing to copy.
    if (group.nodes.size() == 1 && build.memory.concat_in_place[group.nodes.front()]) {
      build.plan.join(g.node_outputs[group.nodes.front()][0], g.node_inputs[group.nodes.front()]);
      ++build.summary.concats_in_place;
      continue;
    }
    if (group.nodes.size() == 1 && runs_on_host(first.op_type)) {
      emit_view(build, group.nodes.front());
      continue;
    }
    auto sig = static_group_signature(g, group);
    if (!sig.ok()) return make_error(sig.error().kind, "group of '" + first.name + "': " + sig.error().message);
    if (sig->outputs.empty()) continue;  // nothing reads what it computes
    if (auto emitted = emit_task(build, group, sig.value()); !emitted.ok()) return emitted.error();
  }
  return {};
}

}  // namespace tessel
