#pragma once
// A task: one distinct fused subgraph of a model, made concrete once for compiling, measuring
// and deploying (its workload key and text, FLOPs, the static types and constants the kernel
// is specialized on, and the compute its schedules apply to), and the one way from a task
// and a schedule to a pipeline and a kernel.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "codegen/aot_compile.h"
#include "codegen/jit_kernel.h"
#include "codegen/ptx_compile.h"
#include "codegen/target.h"
#include "compute/compute_desc.h"
#include "graph/fusion/fuse.h"
#include "graph/ir/graph.h"
#include "schedule/schedule_ir.h"
#include "task/group_pipeline.h"

namespace tessel {

/// The workload (key, text, group, weight, FLOPs: graph/fusion/fuse.h) with what compiling
/// it needs. Everything here is computed once, by make_task.
struct Task : Workload {
  std::shared_ptr<const Graph> graph;  // owns the constants the signature points into
  GroupSignature signature;
  ComputeDesc compute;  // what schedules of this task apply to (empty: make_kernel_task)
};

/// The task of `group` (weight 1) with the graph's static shapes. Fails when a shape is not
/// static or the group has no tunable compute.
Result<Task> make_task(std::shared_ptr<const Graph> graph, const FusedGroup &group);
/// The task of `group` specialized on `signature` (the types of one run: the executor's; or
/// an artifact's static plan), for building its kernel only: its compute is left empty, and
/// build_pipeline describes it when a cuda default schedule needs it. (Describing builds
/// Funcs, which would shift the names of the kernel's own and change the artifact's bytes.)
/// Its key and text describe the graph's declared types.
Task make_kernel_task(std::shared_ptr<const Graph> graph, const FusedGroup &group, GroupSignature signature);
/// A pointer to a graph its caller keeps alive, for a task that lives no longer than it.
std::shared_ptr<const Graph> borrow_graph(const Graph &graph);
/// The task of a distinct workload of `graph`, keeping its weight.
Result<Task> make_task(std::shared_ptr<const Graph> graph, const Workload &workload);

/// A model's tasks in order of first occurrence, and the workloads that could not be made
/// tasks (no static shape, no tunable compute), each with the reason.
struct ModelTasks {
  std::vector<Task> tasks;
  std::vector<std::pair<Workload, Error>> skipped;
};
ModelTasks model_tasks(std::shared_ptr<const Graph> graph);

/// The pipeline of the task with `schedule`, or with its built-in schedule when null (on a
/// cuda target: default_gpu_schedule). The one way from a task to a pipeline: the tuner,
/// the compiler, the executor and the benchmarks all build through it.
Result<std::shared_ptr<NodePipeline>> build_pipeline(const Task &task, const Schedule *schedule,
                                                     const Target &target);

/// Compiles the task with `schedule`, or with the built-in default schedule when null (on a
/// cuda target: default_gpu_schedule, run on the GPU of this machine).
Result<JitKernel> compile_task(const Task &task, const Schedule *schedule, const Target &target = {});

/// Compiles the task ahead of time into <prefix>.o and <prefix>.h (see codegen/aot_compile.h).
Result<AotOutput> compile_task_to_object(const Task &task, const Schedule *schedule, const Target &target,
                                         const std::string &prefix, const std::string &function_name);

/// Compiles a GPU schedule of the task for the host CPU, its GPU loops serial: runs the
/// schedule's loop structure where no GPU is, to check its results against the default's.
Result<JitKernel> compile_gpu_schedule_on_host(const Task &task, const Schedule &schedule);
/// The PTX of the task's GPU kernels with `schedule` (null: default_gpu_schedule).
Result<std::string> compile_task_to_ptx(const Task &task, const Schedule *schedule, const Target &target);
/// Inputs for running the task: constants keep their values (weights, shape-like inputs),
/// everything else is random (seeded, never all zeros).
std::vector<Tensor> task_inputs(const Task &task, uint64_t seed);
/// Evicts the task's constant inputs (weights) among `inputs` (task_inputs order) from every
/// CPU cache level, as the other layers of a model do between two calls of the task.
void evict_task_constants(const Task &task, const std::vector<Tensor> &inputs);
/// Bytes of the task's constant inputs.
size_t task_constant_bytes(const Task &task);

/// Runs a compiled task on `inputs` (from task_inputs) into freshly allocated outputs.
Result<std::vector<Tensor>> run_task(const JitKernel &kernel, const Task &task,
                                     const std::vector<Tensor> &inputs);

/// Largest relative difference max|a-b| / max(max|b|, tiny) over all outputs; infinity
/// when shapes or counts differ. For comparing a schedule's output with the default's.
double max_relative_difference(const std::vector<Tensor> &got, const std::vector<Tensor> &want);

}  // namespace tessel
