#pragma once
// Recurrent ops at import: LSTM, GRU and RNN become the graph ops of their time steps.
//
// The time loop runs on the host, unrolled: one matrix product projects every step's
// input at once (the big, tunable task), and each step adds its hidden state's product
// with R (a small task that every step shares, so it is compiled once) and the gate
// arithmetic, which fusion folds into a few kernels. That needs static sequence and batch
// sizes, which the exported recurrent models have; a model without them gets a clear error.
//
// Every attribute of the ONNX spec is honoured: direction (forward, reverse,
// bidirectional), activations with their alpha and beta, clip, hidden_size, layout,
// LSTM's input_forget and peepholes, GRU's linear_before_reset, and the optional inputs
// B, sequence_lens, initial_h and initial_c. With sequence_lens, steps past a batch
// entry's length keep its state and write zeros to Y, so a reverse direction starts at
// each entry's own last step.
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Whether the op is one that expand_recurrent_ops expands.
bool is_recurrent_op(const std::string &op_type);

/// The graph with every top-level LSTM, GRU and RNN node replaced by its steps; their
/// output tensors keep their ids and names. The graph is returned as it was when it has
/// none. Nested bodies (If, Loop) keep theirs.
Result<Graph> expand_recurrent_ops(Graph graph);

}  // namespace tessel
