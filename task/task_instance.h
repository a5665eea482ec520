#pragma once
// One task of a model made concrete for compiling and measuring: the graph it comes from,
// its fused group, and the static types the kernel is specialized on.
#include <cstdint>
#include <memory>
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

struct TaskInstance {
  std::shared_ptr<const Graph> graph;  // owns the constants the signature points into
  FusedGroup group;
  GroupSignature signature;
  ComputeDesc compute;  // what schedules of this task apply to
};

/// The task of `group` with the graph's static shapes. Fails when a shape is not static or
/// the group has no tunable compute.
Result<TaskInstance> make_task_instance(std::shared_ptr<const Graph> graph, const FusedGroup &group);

/// Compiles the task with `schedule`, or with the built-in default schedule when null (on a
/// cuda target: default_gpu_schedule, run on the GPU of this machine).
Result<JitKernel> compile_task(const TaskInstance &task, const Schedule *schedule, const Target &target = {});

/// Compiles the task ahead of time into <prefix>.o and <prefix>.h (see codegen/aot_compile.h).
Result<AotOutput> compile_task_to_object(const TaskInstance &task, const Schedule *schedule, const Target &target,
                                         const std::string &prefix, const std::string &function_name);

/// Compiles a GPU schedule of the task for the host CPU, its GPU loops serial: runs the
/// schedule's loop structure where no GPU is, to check its results against the default's.
Result<JitKernel> compile_gpu_schedule_on_host(const TaskInstance &task, const Schedule &schedule);
/// The PTX of the task's GPU kernels with `schedule` (null: default_gpu_schedule).
Result<std::string> compile_task_to_ptx(const TaskInstance &task, const Schedule *schedule, const Target &target);
/// Inputs for running the task: constants keep their values (weights, shape-like inputs),
/// everything else is random (seeded, never all zeros).
std::vector<Tensor> task_inputs(const TaskInstance &task, uint64_t seed);

/// Runs a compiled task on `inputs` (from task_inputs) into freshly allocated outputs.
Result<std::vector<Tensor>> run_task(const JitKernel &kernel, const TaskInstance &task,
                                     const std::vector<Tensor> &inputs);

/// Largest relative difference max|a-b| / max(max|b|, tiny) over all outputs; infinity
/// when shapes or counts differ. For comparing a schedule's output with the default's.
double max_relative_difference(const std::vector<Tensor> &got, const std::vector<Tensor> &want);

}  // namespace tessel
