// Inference for the recurrent ops LSTM, GRU and RNN. Import expands them into per-step
// graph ops (graph/onnx/expand_recurrent.h); these rules give their output types before
// that, so the expansion can read the sequence and batch sizes of inputs that are not
// graph inputs (an embedding's output, a transposed tensor).
#include <string>

#include "graph/ir/op_registry.h"

namespace tessel {
namespace {

/// Gate blocks per direction in W and R: LSTM has i, o, f, c; GRU z, r, h; RNN one.
int64_t gate_count(const std::string &op_type) {
  if (op_type == "LSTM") return 4;
  if (op_type == "GRU") return 3;
  return 1;
}

std::vector<TensorType> infer_recurrent(const InferenceContext &ctx) {
  const std::string direction = ctx.attrs().get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    ctx.fail("direction '" + direction + "' is not forward, reverse or bidirectional");
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = ctx.attrs().get_int("layout", 0);
  if (layout != 0 && layout != 1) ctx.fail("layout " + std::to_string(layout) + " is not 0 or 1");
  const TensorType &x = ctx.input(0);
  if (ctx.rank(0) != 3) ctx.fail("X must have rank 3, got " + x.to_string());
  if (ctx.rank(1) != 3) ctx.fail("W must have rank 3, got " + ctx.input(1).to_string());
  if (ctx.rank(2) != 3) ctx.fail("R must have rank 3, got " + ctx.input(2).to_string());
  int64_t hidden = ctx.attrs().get_int("hidden_size", kUnknownDim);
  if (hidden == kUnknownDim) hidden = ctx.input(2).shape[2];
  if (hidden != kUnknownDim && hidden <= 0) ctx.fail("hidden_size must be positive, got " + std::to_string(hidden));
  const int64_t gates = gate_count(ctx.node.op_type);
  const Shape &w = ctx.input(1).shape;
  if (w[0] != kUnknownDim && w[0] != directions)
    ctx.fail("W has " + std::to_string(w[0]) + " directions, the direction attribute says " + std::to_string(directions));
  if (w[1] != kUnknownDim && hidden != kUnknownDim && w[1] != gates * hidden)
    ctx.fail("W's second dimension is " + std::to_string(w[1]) + ", expected " + std::to_string(gates) +
             " x hidden_size = " + std::to_string(gates * hidden));
  const int64_t seq = x.shape[layout == 0 ? 0 : 1], batch = x.shape[layout == 0 ? 1 : 0];
  const Shape y = layout == 0 ? Shape{seq, directions, batch, hidden} : Shape{batch, seq, directions, hidden};
  const Shape state = layout == 0 ? Shape{directions, batch, hidden} : Shape{batch, directions, hidden};
  std::vector<TensorType> out = {make_type(x.dtype, y), make_type(x.dtype, state)};
  if (ctx.node.op_type == "LSTM") out.push_back(make_type(x.dtype, state));
  return out;
}

}  // namespace

void register_recurrent_ops(OpRegistry &r) {
  for (const char *op : {"LSTM", "GRU", "RNN"}) r.add({op, infer_recurrent, {}, OpPattern::Opaque});
}

}  // namespace tessel
