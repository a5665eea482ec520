#pragma once
// A fused group of nodes as one Halide pipeline (light header: no Halide). Producers inside
// the group are inlined into their consumers; only the group's outputs are written to memory.
#include <memory>
#include <vector>

#include "graph/fuse.h"
#include "graph/graph.h"
#include "graph/result.h"

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

}  // namespace tessel
