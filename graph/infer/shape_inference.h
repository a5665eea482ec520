#pragma once
// Shape and dtype inference: per node (used by the runtime with concrete values) and over a
// whole graph (static, propagating the values of constants, Shape and Size).
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Output types of one node from its input types and whatever input values are known.
/// Missing values a rule needs give outputs of unknown rank, not an error.
Result<std::vector<TensorType>> infer_node_types(const Node &node, int64_t opset,
                                                 const std::vector<TensorType> &input_types,
                                                 const std::vector<const Tensor *> &input_values,
                                                 size_t num_outputs);

/// The value a Constant node produces (any of its value* attributes).
Result<Tensor> constant_node_value(const Node &node);

/// What a Shape node returns for an input of this shape: the dims between its start/end
/// attributes (opset 15), clamped as the spec says, as a 1-D int64 tensor.
Tensor shape_node_value(const Node &node, const Shape &input_shape);

/// Every unsupported op type in the graph and its nested bodies, each with the names of
/// its nodes, in one error; ok when all are supported.
Result<void> check_supported_ops(const Graph &graph);

/// Fills the type of every tensor of the graph in topological order. Values of Constant,
/// Shape and Size outputs are recorded as constants so shape-computing chains resolve.
Result<Graph> infer_shapes(Graph graph);

}  // namespace tessel
