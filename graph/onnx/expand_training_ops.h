#pragma once
// The optimizer steps of the ai.onnx.preview.training domain (Adagrad, Adam, Momentum) at
// import: each is a few element-wise formulas per optimized tensor, so it becomes those ops
// and fuses and runs like any other element-wise chain. The formulas are the ONNX spec's.
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// The domain of the training ops.
inline constexpr const char *kTrainingDomain = "ai.onnx.preview.training";

bool is_training_optimizer(const Node &node);

/// The graph with every top-level optimizer node replaced; output names are kept.
Result<Graph> expand_training_ops(Graph graph);

}  // namespace tessel
