#include "task/task.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/cache_eviction.h"
#include "compute/node_pipeline.h"
#include "search/gpu/gpu_sketch.h"
#include "tensor/random_tensor.h"

namespace tessel {

Result<Task> make_task(std::shared_ptr<const Graph> graph, const FusedGroup &group) {
  auto signature = static_group_signature(*graph, group);
  if (!signature.ok()) return signature.error();
  Task task = make_kernel_task(std::move(graph), group, std::move(signature.value()));
  auto compute = describe_group_compute(*task.graph, group, task.signature);
  if (!compute.ok()) return compute.error();
  task.compute = std::move(compute.value());
  return task;
}

Task make_kernel_task(std::shared_ptr<const Graph> graph, const FusedGroup &group, GroupSignature signature) {
  Task task;
  task.graph = std::move(graph);
  task.group = group;
  task.workload_text = workload_text(*task.graph, group);
  task.workload_key = workload_key_of_text(task.workload_text);
  task.weight = 1;
  task.flops = group_flops(*task.graph, group);
  task.signature = std::move(signature);
  return task;
}

std::shared_ptr<const Graph> borrow_graph(const Graph &graph) {
  return std::shared_ptr<const Graph>(std::shared_ptr<const Graph>(), &graph);
}

Result<Task> make_task(std::shared_ptr<const Graph> graph, const Workload &workload) {
  auto task = make_task(std::move(graph), workload.group);
  if (task.ok()) task->weight = workload.weight;
  return task;
}

ModelTasks model_tasks(std::shared_ptr<const Graph> graph) {
  ModelTasks result;
  for (const Workload &workload : distinct_workloads(*graph, partition_graph(*graph))) {
    auto task = make_task(graph, workload);
    if (task.ok()) result.tasks.push_back(std::move(task.value()));
    else result.skipped.emplace_back(workload, task.error());
  }
  return result;
}

Result<std::shared_ptr<NodePipeline>> build_pipeline(const Task &task, const Schedule *schedule,
                                                     const Target &target) {
  if (target.kind == Target::Kind::Cuda) {
    // Without a schedule, the GPU's own default: the CPU one would run on the host.
    if (!schedule && task.compute.funcs.empty()) {
      auto compute = describe_group_compute(*task.graph, task.group, task.signature);
      if (!compute.ok()) return compute.error();
      Task described = task;
      described.compute = std::move(compute.value());
      return build_pipeline(described, nullptr, target);
    }
    const GpuTargetDesc gpu = gpu_target_desc(target);
    const Schedule chosen = schedule ? *schedule : default_gpu_schedule(task.compute, gpu);
    auto pipeline = build_scheduled_group_pipeline(*task.graph, task.group, task.signature, chosen, PipelineDevice::Gpu);
    if (!pipeline.ok()) return pipeline;
    // The driver may give its kernels as many registers as their largest block leaves room for.
    if (auto tree = check_gpu_schedule(task.compute, chosen, gpu); tree.ok())
      set_gpu_max_registers(*pipeline.value(), gpu_register_cap(gpu_launch_shape(tree.value()), gpu));
    return pipeline;
  }
  return schedule ? build_scheduled_group_pipeline(*task.graph, task.group, task.signature, *schedule)
                  : build_group_pipeline(*task.graph, task.group, task.signature);
}

Result<JitKernel> compile_task(const Task &task, const Schedule *schedule, const Target &target) {
  auto pipeline = build_pipeline(task, schedule, target);
  if (!pipeline.ok()) return pipeline.error();
  return JitKernel::compile(pipeline.value(), target);
}

Result<AotOutput> compile_task_to_object(const Task &task, const Schedule *schedule, const Target &target,
                                         const std::string &prefix, const std::string &function_name) {
  auto pipeline = build_pipeline(task, schedule, target);
  if (!pipeline.ok()) return pipeline.error();
  return compile_to_object(*pipeline.value(), target, prefix, function_name);
}

Result<JitKernel> compile_gpu_schedule_on_host(const Task &task, const Schedule &schedule) {
  auto pipeline = build_scheduled_group_pipeline(*task.graph, task.group, task.signature, schedule,
                                                 PipelineDevice::GpuLoopsOnHost);
  if (!pipeline.ok()) return pipeline.error();
  return JitKernel::compile(pipeline.value(), Target{});
}

Result<std::string> compile_task_to_ptx(const Task &task, const Schedule *schedule, const Target &target) {
  if (target.kind != Target::Kind::Cuda)
    return make_error(ErrorKind::InvalidInput, "PTX needs a cuda target, not '" + target.to_string() + "'");
  auto pipeline = build_pipeline(task, schedule, target);
  if (!pipeline.ok()) return pipeline.error();
  return compile_to_ptx(*pipeline.value(), target);
}

std::vector<Tensor> task_inputs(const Task &task, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < task.signature.inputs.size(); ++i) {
    const int t = task.signature.inputs[i];
    if (const Tensor *value = task.signature.values[t]) inputs.push_back(*value);
    else inputs.push_back(random_tensor(task.signature.types[t], seed + i));
  }
  return inputs;
}

void evict_task_constants(const Task &task, const std::vector<Tensor> &inputs) {
  for (size_t i = 0; i < task.signature.inputs.size() && i < inputs.size(); ++i)
    if (task.signature.values[task.signature.inputs[i]]) evict_from_caches(inputs[i].data(), inputs[i].bytes());
}

size_t task_constant_bytes(const Task &task) {
  size_t bytes = 0;
  for (int t : task.signature.inputs)
    if (const Tensor *value = task.signature.values[t]) bytes += value->bytes();
  return bytes;
}

Result<std::vector<Tensor>> run_task(const JitKernel &kernel, const Task &task,
                                     const std::vector<Tensor> &inputs) {
  std::vector<const Tensor *> pointers;
  for (const Tensor &t : inputs) pointers.push_back(&t);
  std::vector<Tensor> outputs;
  for (int t : task.signature.outputs) outputs.emplace_back(task.signature.types[t].dtype, task.signature.types[t].shape);
  auto ran = kernel.run(pointers, outputs);
  if (!ran.ok()) return ran.error();
  return outputs;
}

double max_relative_difference(const std::vector<Tensor> &got, const std::vector<Tensor> &want) {
  const double inf = std::numeric_limits<double>::infinity();
  if (got.size() != want.size()) return inf;
  double worst = 0;
  for (size_t o = 0; o < want.size(); ++o) {
    if (got[o].shape() != want[o].shape() || got[o].dtype() != want[o].dtype()) return inf;
    double scale = 1e-30, diff = 0;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      const double a = got[o].element_as_double(i), b = want[o].element_as_double(i);
      if (std::isnan(a) != std::isnan(b)) return inf;
      if (std::isnan(b)) continue;
      scale = std::max(scale, std::fabs(b));
      diff = std::max(diff, std::fabs(a - b));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

}  // namespace tessel
