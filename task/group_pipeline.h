#pragma once
// A fused group of nodes as one Halide pipeline (light header: no Halide). Producers inside
// the group are inlined into their consumers; only the group's outputs are written to memory.
#include <memory>
#include <vector>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "graph/fusion/fuse.h"
#include "graph/ir/graph.h"
#include "schedule/schedule_ir.h"

namespace tessel {

struct NodePipeline;

/// Everything a group kernel is specialized on, with the types of this particular run.
struct GroupSignature {
  std::vector<int> inputs;   // external tensors the group reads, in kernel parameter order
  std::vector<int> outputs;  // tensors the group writes (read after it or graph outputs)
  /// By tensor id of the graph: the concrete type of every tensor the group touches.
  std::vector<TensorType> types;
  /// By tensor id: values of external inputs that kernels bake in (shape-like inputs).
  std::vector<const Tensor *> values;
};

/// The external inputs and outputs of a group, in a stable order (first use / production).
GroupSignature group_interface(const Graph &graph, const FusedGroup &group);

/// Builds the pipeline computing every group output from the external inputs. Fails (as a
/// value) when a member op cannot be built in this context, for example when one needs the
/// value of a tensor computed inside the group; the caller then runs the nodes one by one.
Result<std::shared_ptr<NodePipeline>> build_group_pipeline(const Graph &graph, const FusedGroup &group,
                                                           const GroupSignature &signature);

/// The group's tunable compute as the schedule sees it: the accumulator stages of its
/// conv/matmul (plain form, no schedule of their own) and its outputs, with loop axes and
/// extents. Other members keep their built-in internal schedules and are not listed.
Result<ComputeDesc> describe_group_compute(const Graph &graph, const FusedGroup &group,
                                           const GroupSignature &signature);

/// Where a scheduled pipeline runs.
enum class PipelineDevice {
  Host,  ///< the CPU; internal stages keep the rules' own CPU schedules
  /// A CUDA GPU: the schedule binds the outputs (gpu_sketch.h); every internal stage that
  /// cannot be inlined is computed at root, its pure loops over blocks of 256 threads (an
  /// update without pure loops runs on one GPU thread), a long reduction split into
  /// interleaved partials computed by threads of their own.
  Gpu,
  /// A GPU schedule replayed for the host (bind steps left serial, internal stages at
  /// root, long reductions split as on the GPU): checks a GPU schedule's loops and results
  /// on a machine without a GPU.
  GpuLoopsOnHost,
};

/// The group's pipeline in plain form with `schedule` replayed onto it. An invalid schedule
/// is an error value naming the step.
Result<std::shared_ptr<NodePipeline>> build_scheduled_group_pipeline(const Graph &graph, const FusedGroup &group,
                                                                     const GroupSignature &signature,
                                                                     const Schedule &schedule,
                                                                     PipelineDevice device = PipelineDevice::Host);

/// The group's pipeline with no scheduling directive at all (plain form, internal stages
/// unplaced), for Halide's autoschedulers. Not runnable before one has scheduled it.
Result<std::shared_ptr<NodePipeline>> build_unscheduled_group_pipeline(const Graph &graph, const FusedGroup &group,
                                                                       const GroupSignature &signature);

/// The signature of a group with the graph's static types and constant values (for tasks
/// extracted before running: the tuner and the benchmarks). Fails when a type is unknown.
Result<GroupSignature> static_group_signature(const Graph &graph, const FusedGroup &group);

}  // namespace tessel
