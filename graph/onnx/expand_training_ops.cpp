#include "graph/onnx/expand_training_ops.h"

#include "graph/onnx/node_emitter.h"

namespace tessel {
namespace {

/// One optimized tensor's slots: its inputs after R and T (X, G, then the optimizer's
/// states) and its outputs (the new X, then the new states).
struct OptimizedTensor {
  int x, g;
  std::vector<int> states, new_states;
  int new_x;
};

/// The node's inputs R, T, X1..Xn, G1..Gn, S1_1..S1_n, ... grouped per tensor, for an
/// optimizer with `num_states` state inputs per tensor.
Result<std::vector<OptimizedTensor>> group_slots(const Graph &g, int n, size_t num_states) {
  const std::vector<int> &in = g.node_inputs[n], &out = g.node_outputs[n];
  const size_t per_tensor = 2 + num_states;
  if (in.size() < 2 + per_tensor || (in.size() - 2) % per_tensor != 0)
    return make_error(ErrorKind::InvalidInput,
                      "expected R, T and " + std::to_string(per_tensor) + " inputs per optimized tensor, got " +
                      std::to_string(in.size()) + " inputs");
  const size_t count = (in.size() - 2) / per_tensor;
  if (out.size() > count * (1 + num_states))
    return make_error(ErrorKind::InvalidInput, "more outputs than the optimized tensors have");
  std::vector<OptimizedTensor> tensors(count);
  const auto output = [&](size_t i) { return i < out.size() ? out[i] : kNoTensor; };
  for (size_t i = 0; i < count; ++i) {
    OptimizedTensor &t = tensors[i];
    t.x = in[2 + i];
    t.g = in[2 + count + i];
    t.new_x = output(i);
    for (size_t s = 0; s < num_states; ++s) {
      t.states.push_back(in[2 + (2 + s) * count + i]);
      t.new_states.push_back(output((1 + s) * count + i));
    }
    for (int slot : {t.x, t.g})
      if (slot == kNoTensor)
        return make_error(ErrorKind::InvalidInput, "an optimized tensor or its gradient is missing");
    for (int slot : t.states)
      if (slot == kNoTensor) return make_error(ErrorKind::InvalidInput, "an optimizer state input is missing");
  }
  return tensors;
}

/// `value` written to `out` (an Identity, so the output keeps its name), or dropped when the
/// model does not read that output.
void write(NodeEmitter &e, int value, int out) {
  if (out != kNoTensor) e.op("Identity", {value}, {}, out);
}

/// norm_coefficient * X + G: the gradient with the L2 regularization term's gradient.
int regularized_gradient(NodeEmitter &e, const OptimizedTensor &t, float norm_coefficient) {
  return norm_coefficient == 0 ? t.g : e.add(e.mul(e.value(norm_coefficient), t.x), t.g);
}

void adagrad(NodeEmitter &e, const Node &node, int r, int step, const OptimizedTensor &t) {
  const float decay = node.attributes.get_float("decay_factor", 0.f);
  const float epsilon = node.attributes.get_float("epsilon", 1e-6f);
  // r / (1 + T * decay_factor)
  const int rate = e.div(r, e.add(e.value(1), e.mul(step, e.value(decay))));
  const int gradient = regularized_gradient(e, t, node.attributes.get_float("norm_coefficient", 0.f));
  const int h = e.add(t.states[0], e.mul(gradient, gradient));
  const int step_size = e.div(e.mul(rate, gradient), e.add(e.op("Sqrt", {h}), e.value(epsilon)));
  write(e, e.sub(t.x, step_size), t.new_x);
  write(e, h, t.new_states[0]);
}

void momentum(NodeEmitter &e, const Node &node, int r, int step, const OptimizedTensor &t) {
  const float alpha = node.attributes.get_float("alpha", 0.f), beta = node.attributes.get_float("beta", 0.f);
  const bool nesterov = node.attributes.get_string("mode", "standard") == "nesterov";
  const int gradient = regularized_gradient(e, t, node.attributes.get_float("norm_coefficient", 0.f));
  // The first step (T = 0) takes the whole gradient: beta applies from the second on.
  const int first_step = e.op("Equal", {step, e.value(0)});
  const int beta_adjusted = e.op("Where", {first_step, e.value(1), e.value(beta)});
  const int v = e.add(e.mul(e.value(alpha), t.states[0]), e.mul(beta_adjusted, gradient));
  const int direction = nesterov ? e.add(gradient, e.mul(e.value(alpha), v)) : v;
  write(e, e.sub(t.x, e.mul(r, direction)), t.new_x);
  write(e, v, t.new_states[0]);
}

void adam(NodeEmitter &e, const Node &node, int r, int step, const OptimizedTensor &t) {
  const float alpha = node.attributes.get_float("alpha", 0.9f), beta = node.attributes.get_float("beta", 0.999f);
  const float epsilon = node.attributes.get_float("epsilon", 1e-6f);
  const float decay_after = node.attributes.get_float("norm_coefficient_post", 0.f);
  const int gradient = regularized_gradient(e, t, node.attributes.get_float("norm_coefficient", 0.f));
  const int v = e.add(e.mul(e.value(alpha), t.states[0]), e.mul(e.value(1 - alpha), gradient));
  const int h = e.add(e.mul(e.value(beta), t.states[1]), e.mul(e.value(1 - beta), e.mul(gradient, gradient)));
  // Bias correction from the first step on: R * sqrt(1 - beta^T) / (1 - alpha^T).
  const int corrected = e.div(e.mul(r, e.op("Sqrt", {e.sub(e.value(1), e.op("Pow", {e.value(beta), step}))})),
                              e.sub(e.value(1), e.op("Pow", {e.value(alpha), step})));
  const int rate = e.op("Where", {e.op("Greater", {step, e.value(0)}), corrected, r});
  const int x = e.sub(t.x, e.mul(rate, e.div(v, e.add(e.op("Sqrt", {h}), e.value(epsilon)))));
  write(e, decay_after == 0 ? x : e.mul(e.value(1 - decay_after), x), t.new_x);
  write(e, v, t.new_states[0]);
  write(e, h, t.new_states[1]);
}

Result<void> expand_optimizer(GraphRewriter &rewriter, const Graph &, int n) {
  const Node node = rewriter.graph().nodes[n];
  const size_t num_states = node.op_type == "Adam" ? 2 : 1;
  auto tensors = group_slots(rewriter.graph(), n, num_states);
  if (!tensors.ok()) return tensors.error();
  const std::vector<int> inputs = rewriter.graph().node_inputs[n];
  if (inputs[0] == kNoTensor || inputs[1] == kNoTensor)
    return make_error(ErrorKind::InvalidInput, "R and T are required");
  // Every formula runs in X's type; R and T are cast to it once.
  const DType dtype = rewriter.graph().tensors[tensors->front().x].type.dtype;
  if (dtype != DType::Float32 && dtype != DType::Float64)
    return make_error(ErrorKind::Unsupported, "the optimized tensors' type must be declared float32 or float64");
  rewriter.remove_node(n);
  NodeEmitter e(rewriter, node.name, dtype);
  const int r = e.cast(inputs[0], dtype), step = e.cast(inputs[1], dtype);
  for (const OptimizedTensor &t : tensors.value()) {
    if (node.op_type == "Adagrad") adagrad(e, node, r, step, t);
    else if (node.op_type == "Momentum") momentum(e, node, r, step, t);
    else adam(e, node, r, step, t);
  }
  return {};
}

}  // namespace

bool is_training_optimizer(const Node &node) {
  return node.domain == kTrainingDomain &&
         (node.op_type == "Adagrad" || node.op_type == "Adam" || node.op_type == "Momentum");
}

Result<Graph> expand_training_ops(Graph graph) {
  // The formulas need only the declared types of X, so no inference runs first (it would
  // reject the graph for the very ops being replaced).
  return expand_nodes(std::move(graph), is_training_optimizer, expand_optimizer, TypesNeeded::No);
}

}  // namespace tessel
