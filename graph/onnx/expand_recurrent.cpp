#include "graph/onnx/expand_recurrent.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "graph/infer/shape_inference.h"
#include "graph/onnx/node_emitter.h"
#include "graph/ir/graph_rewriter.h"

namespace tessel {
namespace {

/// One activation function of a cell, with the parameters it takes.
struct Activation {
  std::string name;  // lower case
  float alpha = 0, beta = 0;
};

std::string lower_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// The spec's activation functions and the alpha and beta each takes when none is given.
struct ActivationDefaults {
  bool takes_alpha, takes_beta;
  float alpha, beta;
};
const std::map<std::string, ActivationDefaults> &activation_table() {
  static const std::map<std::string, ActivationDefaults> table = {
      {"sigmoid", {false, false, 0, 0}},       {"tanh", {false, false, 0, 0}},
      {"relu", {false, false, 0, 0}},          {"softsign", {false, false, 0, 0}},
      {"softplus", {false, false, 0, 0}},      {"leakyrelu", {true, false, 0.01f, 0}},
      {"thresholdedrelu", {true, false, 1, 0}}, {"elu", {true, false, 1, 0}},
      {"hardsigmoid", {true, true, 0.2f, 0.5f}}, {"affine", {true, true, 1, 0}},
      {"scaledtanh", {true, true, 1, 1}},
  };
  return table;
}

/// Everything the expansion needs of one recurrent node, read and checked once.
struct RecurrentSpec {
  std::string op, name;
  int64_t gates = 1;  // blocks in W and R: LSTM i,o,f,c; GRU z,r,h; RNN one
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, directions = 1, layout = 0;
  std::string direction;
  DType dtype = DType::Float32;
  std::vector<Activation> activations;  // per_direction of them for each direction
  size_t per_direction = 1;
  float clip = 0;  // 0: no clipping
  bool input_forget = false, linear_before_reset = false;
  int x = kNoTensor, w = kNoTensor, r = kNoTensor, bias = kNoTensor, lens = kNoTensor;
  int initial_h = kNoTensor, initial_c = kNoTensor, peepholes = kNoTensor;
  int y = kNoTensor, y_h = kNoTensor, y_c = kNoTensor;
  bool masked = false;  // sequence_lens may end an entry before the last step

  const Activation &activation(int64_t direction, size_t k) const { return activations[direction * per_direction + k]; }
  bool reverse(int64_t d) const { return direction == "reverse" || (direction == "bidirectional" && d == 1); }
};

int input_or_none(const Graph &g, int n, size_t i) {
  return i < g.node_inputs[n].size() ? g.node_inputs[n][i] : kNoTensor;
}

Result<std::vector<Activation>> read_activations(const Node &node, size_t per_direction, int64_t directions) {
  static const std::map<std::string, std::vector<std::string>> defaults = {
      {"LSTM", {"sigmoid", "tanh", "tanh"}}, {"GRU", {"sigmoid", "tanh"}}, {"RNN", {"tanh"}}};
  std::vector<std::string> names = node.attributes.has("activations") ? node.attributes.get_strings("activations")
                                                                      : defaults.at(node.op_type);
  // A bidirectional node given one direction's list uses it for both.
  if (names.size() == per_direction && directions == 2) {
    const std::vector<std::string> one_direction = names;
    names.insert(names.end(), one_direction.begin(), one_direction.end());
  }
  if (names.size() != per_direction * static_cast<size_t>(directions))
    return make_error(ErrorKind::Unsupported, "activations lists " + std::to_string(names.size()) +
                                                  " functions; the node needs " + std::to_string(per_direction) +
                                                  " per direction");
  const std::vector<float> alphas = node.attributes.get_floats("activation_alpha");
  const std::vector<float> betas = node.attributes.get_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string &given : names) {
    const std::string name = lower_case(given);
    const auto known = activation_table().find(name);
    if (known == activation_table().end())
      return make_error(ErrorKind::Unsupported, "activation function '" + given + "' is not one the ONNX spec lists");
    Activation f{name, known->second.alpha, known->second.beta};
    // Alphas and betas are consumed in order by the functions that take them.
    if (known->second.takes_alpha && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (known->second.takes_beta && next_beta < betas.size()) f.beta = betas[next_beta++];
    out.push_back(f);
  }
  return out;
}

/// Whether sequence_lens may stop an entry early: absent, or a constant of full lengths, it cannot.
bool lengths_may_end_early(const Graph &g, int lens, int64_t seq) {
  if (lens == kNoTensor) return false;
  const Tensor *value = constant_value(g, lens);
  if (!value) return true;
  for (int64_t i = 0; i < value->numel(); ++i)
    if (value->element_as_int64(i) != seq) return true;
  return false;
}

Result<RecurrentSpec> read_spec(const Graph &g, const Graph &typed, int n) {
  const Node &node = g.nodes[n];
  RecurrentSpec s;
  s.op = node.op_type;
  s.name = node.name;
  s.gates = s.op == "LSTM" ? 4 : s.op == "GRU" ? 3 : 1;
  s.per_direction = s.op == "LSTM" ? 3 : s.op == "GRU" ? 2 : 1;
  s.direction = node.attributes.get_string("direction", "forward");
  s.directions = s.direction == "bidirectional" ? 2 : 1;
  s.layout = node.attributes.get_int("layout", 0);
  s.clip = node.attributes.get_float("clip", 0);
  s.input_forget = node.attributes.get_int("input_forget", 0) != 0;
  s.linear_before_reset = node.attributes.get_int("linear_before_reset", 0) != 0;
  s.x = input_or_none(g, n, 0);
  s.w = input_or_none(g, n, 1);
  s.r = input_or_none(g, n, 2);
  s.bias = input_or_none(g, n, 3);
  s.lens = input_or_none(g, n, 4);
  s.initial_h = input_or_none(g, n, 5);
  s.initial_c = s.op == "LSTM" ? input_or_none(g, n, 6) : kNoTensor;
  s.peepholes = s.op == "LSTM" ? input_or_none(g, n, 7) : kNoTensor;
  const std::vector<int> &outs = g.node_outputs[n];
  s.y = outs.size() > 0 ? outs[0] : kNoTensor;
  s.y_h = outs.size() > 1 ? outs[1] : kNoTensor;
  s.y_c = outs.size() > 2 ? outs[2] : kNoTensor;
  if (s.x == kNoTensor || s.w == kNoTensor || s.r == kNoTensor)
    return make_error(ErrorKind::InvalidInput, "X, W and R are required inputs");
  const TensorType &x = typed.tensors[s.x].type, &r = typed.tensors[s.r].type;
  if (!x.fully_known() || x.shape.size() != 3)
    return make_error(ErrorKind::Unsupported,
                      "the time loop is unrolled, so X needs a static shape; it is " + x.to_string());
  s.dtype = x.dtype;
  s.seq = x.shape[s.layout == 0 ? 0 : 1];
  s.batch = x.shape[s.layout == 0 ? 1 : 0];
  s.input = x.shape[2];
  s.hidden = node.attributes.get_int("hidden_size", r.rank_known && r.shape.size() == 3 ? r.shape[2] : kUnknownDim);
  if (s.hidden <= 0) return make_error(ErrorKind::InvalidInput, "hidden_size is missing or not positive");
  auto activations = read_activations(node, s.per_direction, s.directions);
  if (!activations.ok()) return activations.error();
  s.activations = std::move(activations).value();
  s.masked = lengths_may_end_early(g, s.lens, s.seq);
  return s;
}

/// f(x) as graph ops.
int activate(NodeEmitter &e, const Activation &f, int x) {
  auto unary = [&](const char *type, std::initializer_list<std::pair<const char *, float>> params) {
    Attributes a;
    for (const auto &[name, v] : params) a.set(name, v);
    return e.op(type, {x}, a);
  };
  if (f.name == "sigmoid") return unary("Sigmoid", {});
  if (f.name == "tanh") return unary("Tanh", {});
  if (f.name == "relu") return unary("Relu", {});
  if (f.name == "softsign") return unary("Softsign", {});
  if (f.name == "softplus") return unary("Softplus", {});
  if (f.name == "leakyrelu") return unary("LeakyRelu", {{"alpha", f.alpha}});
  if (f.name == "thresholdedrelu") return unary("ThresholdedRelu", {{"alpha", f.alpha}});
  if (f.name == "elu") return unary("Elu", {{"alpha", f.alpha}});
  if (f.name == "hardsigmoid") return unary("HardSigmoid", {{"alpha", f.alpha}, {"beta", f.beta}});
  if (f.name == "affine") return e.add(e.mul(x, e.value(f.alpha)), e.value(f.beta));
  // scaledtanh: alpha * tanh(beta * x)
  return e.mul(e.op("Tanh", {e.mul(x, e.value(f.beta))}), e.value(f.alpha));
}

/// One direction's weights, in the shapes the steps use.
struct DirectionWeights {
  int input_projection = kNoTensor;  // [seq, batch, gates * hidden]: X W^T (+ biases)
  int r_t = kNoTensor;               // [hidden, gates * hidden]
  int r_bias = kNoTensor;            // GRU: Rb [gates * hidden], kept apart for the reset gate
  int r_h_t = kNoTensor, r_h_bias = kNoTensor;  // GRU without linear_before_reset
  int peep_i = kNoTensor, peep_o = kNoTensor, peep_f = kNoTensor;
};

DirectionWeights direction_weights(NodeEmitter &e, const RecurrentSpec &s, int64_t d, int x_steps) {
  const int64_t gh = s.gates * s.hidden;
  DirectionWeights w;
  const int w_t = e.transpose(e.take(s.w, d, 0), {1, 0});
  const int r_d = e.take(s.r, d, 0);
  w.r_t = e.transpose(r_d, {1, 0});
  int projection = e.matmul(e.reshape(x_steps, {s.seq * s.batch, s.input}), w_t);
  if (s.bias != kNoTensor) {
    const int both = e.reshape(e.take(s.bias, d, 0), {2, gh});
    const int w_bias = e.take(both, 0, 0);
    w.r_bias = e.take(both, 1, 0);
    // The recurrent bias folds into the projection, except GRU's, which the reset gate scales.
    projection = e.add(projection, s.op == "GRU" ? w_bias : e.add(w_bias, w.r_bias));
  }
  w.input_projection = e.reshape(projection, {s.seq, s.batch, gh});
  if (s.op == "GRU" && !s.linear_before_reset) {
    w.r_h_t = e.transpose(e.take(e.reshape(r_d, {3, s.hidden, s.hidden}), 2, 0), {1, 0});
    if (w.r_bias != kNoTensor) w.r_h_bias = e.take(e.reshape(w.r_bias, {3, s.hidden}), 2, 0);
  }
  if (s.peepholes != kNoTensor) {
    const int p = e.reshape(e.take(s.peepholes, d, 0), {3, s.hidden});
    w.peep_i = e.take(p, 0, 0);
    w.peep_o = e.take(p, 1, 0);
    w.peep_f = e.take(p, 2, 0);
  }
  return w;
}

struct CellState {
  int h = kNoTensor, c = kNoTensor;
};

/// Gate k of a [batch, gates * hidden] tensor.
int gate(NodeEmitter &e, const RecurrentSpec &s, int all, int64_t k) {
  return e.take(e.reshape(all, {s.batch, s.gates, s.hidden}), k, 1);
}

CellState lstm_step(NodeEmitter &e, const RecurrentSpec &s, int64_t d, const DirectionWeights &w, int x_t,
                    const CellState &prev) {
  const int all = e.add(x_t, e.matmul(prev.h, w.r_t));
  int i_pre = gate(e, s, all, 0), o_pre = gate(e, s, all, 1), f_pre = gate(e, s, all, 2);
  const int c_pre = gate(e, s, all, 3);
  if (w.peep_i != kNoTensor) {
    i_pre = e.add(i_pre, e.mul(w.peep_i, prev.c));
    f_pre = e.add(f_pre, e.mul(w.peep_f, prev.c));
  }
  const Activation &f = s.activation(d, 0), &g = s.activation(d, 1), &h = s.activation(d, 2);
  const int i = activate(e, f, e.clip(i_pre, s.clip));
  // input_forget couples the gates: what is let in is what is forgotten.
  const int forget = s.input_forget ? e.sub(e.value(1), i) : activate(e, f, e.clip(f_pre, s.clip));
  const int candidate = activate(e, g, e.clip(c_pre, s.clip));
  CellState next;
  next.c = e.add(e.mul(forget, prev.c), e.mul(i, candidate));
  if (w.peep_o != kNoTensor) o_pre = e.add(o_pre, e.mul(w.peep_o, next.c));
  const int o = activate(e, f, e.clip(o_pre, s.clip));
  next.h = e.mul(o, activate(e, h, next.c));
  return next;
}

CellState gru_step(NodeEmitter &e, const RecurrentSpec &s, int64_t d, const DirectionWeights &w, int x_t,
                   const CellState &prev) {
  int recurrent = e.matmul(prev.h, w.r_t);
  if (w.r_bias != kNoTensor) recurrent = e.add(recurrent, w.r_bias);
  const Activation &f = s.activation(d, 0), &g = s.activation(d, 1);
  const int z = activate(e, f, e.clip(e.add(gate(e, s, x_t, 0), gate(e, s, recurrent, 0)), s.clip));
  const int r = activate(e, f, e.clip(e.add(gate(e, s, x_t, 1), gate(e, s, recurrent, 1)), s.clip));
  int reset_part;
  if (s.linear_before_reset) {
    reset_part = e.mul(r, gate(e, s, recurrent, 2));
  } else {
    reset_part = e.matmul(e.mul(r, prev.h), w.r_h_t);
    if (w.r_h_bias != kNoTensor) reset_part = e.add(reset_part, w.r_h_bias);
  }
  const int candidate = activate(e, g, e.clip(e.add(gate(e, s, x_t, 2), reset_part), s.clip));
  // (1 - z) * candidate + z * h  ==  candidate + z * (h - candidate)
  return {e.add(candidate, e.mul(z, e.sub(prev.h, candidate))), kNoTensor};
}

CellState rnn_step(NodeEmitter &e, const RecurrentSpec &s, int64_t d, const DirectionWeights &w, int x_t,
                   const CellState &prev) {
  return {activate(e, s.activation(d, 0), e.clip(e.add(x_t, e.matmul(prev.h, w.r_t)), s.clip)), kNoTensor};
}

/// The initial state of direction d from initial_h or initial_c, or zeros.
int initial_state(NodeEmitter &e, const RecurrentSpec &s, int given, int64_t d) {
  if (given == kNoTensor) return e.zeros({s.batch, s.hidden});
  return e.take(given, d, s.layout == 0 ? 0 : 1);
}

/// One direction's outputs: Y's steps in time order ([1, 1, batch, hidden] each) and the last state.
struct DirectionOutputs {
  std::vector<int> steps;
  CellState last;
};

DirectionOutputs run_direction(NodeEmitter &e, const RecurrentSpec &s, int64_t d, int x_steps, int lengths) {
  const DirectionWeights w = direction_weights(e, s, d, x_steps);
  CellState state{initial_state(e, s, s.initial_h, d),
                  s.op == "LSTM" ? initial_state(e, s, s.initial_c, d) : kNoTensor};
  const int no_output = s.masked ? e.zeros({s.batch, s.hidden}) : kNoTensor;
  DirectionOutputs out;
  out.steps.assign(s.seq, kNoTensor);
  for (int64_t k = 0; k < s.seq; ++k) {
    const int64_t t = s.reverse(d) ? s.seq - 1 - k : k;
    const int x_t = e.take(w.input_projection, t, 0);
    CellState next = s.op == "LSTM"  ? lstm_step(e, s, d, w, x_t, state)
                     : s.op == "GRU" ? gru_step(e, s, d, w, x_t, state)
                                     : rnn_step(e, s, d, w, x_t, state);
    int y_t = next.h;
    if (s.masked) {
      // Past an entry's length its state stays and its output is zero.
      const int live = e.reshape(e.op("Less", {e.index(t), lengths}), {s.batch, 1});
      y_t = e.op("Where", {live, next.h, no_output});
      next.h = e.op("Where", {live, next.h, state.h});
      if (next.c != kNoTensor) next.c = e.op("Where", {live, next.c, state.c});
    }
    out.steps[t] = e.reshape(y_t, {1, 1, s.batch, s.hidden});
    state = next;
  }
  out.last = state;
  return out;
}

/// Directions' final states ([batch, hidden] each) into [directions, batch, hidden], or
/// [batch, directions, hidden] with layout 1, written to `out`.
void write_states(NodeEmitter &e, const RecurrentSpec &s, const std::vector<int> &states, int out) {
  std::vector<int> parts;
  for (int state : states) parts.push_back(e.reshape(state, {1, s.batch, s.hidden}));
  if (s.layout == 0) e.concat(parts, 0, out);
  else e.transpose(e.concat(parts, 0), {1, 0, 2}, out);
}

Result<void> expand_node(GraphRewriter &rewriter, const Graph &typed, int n) {
  auto spec = read_spec(rewriter.graph(), typed, n);
  if (!spec.ok()) return spec.error();
  const RecurrentSpec &s = spec.value();
  rewriter.remove_node(n);
  NodeEmitter e(rewriter, s.name, s.dtype);
  const int x_steps = s.layout == 0 ? s.x : e.transpose(s.x, {1, 0, 2});
  int lengths = kNoTensor;
  if (s.masked) {
    lengths = e.cast(s.lens, DType::Int64);
  }
  std::vector<DirectionOutputs> directions;
  for (int64_t d = 0; d < s.directions; ++d) directions.push_back(run_direction(e, s, d, x_steps, lengths));
  if (s.y != kNoTensor) {
    std::vector<int> per_direction;
    for (const DirectionOutputs &o : directions) per_direction.push_back(e.concat(o.steps, 0));
    if (s.layout == 0) e.concat(per_direction, 1, s.y);
    else e.transpose(e.concat(per_direction, 1), {2, 0, 1, 3}, s.y);
  }
  std::vector<int> last_h, last_c;
  for (const DirectionOutputs &o : directions) {
    last_h.push_back(o.last.h);
    last_c.push_back(o.last.c);
  }
  if (s.y_h != kNoTensor) write_states(e, s, last_h, s.y_h);
  if (s.y_c != kNoTensor) write_states(e, s, last_c, s.y_c);
  return {};
}

}  // namespace

bool is_recurrent_op(const std::string &op_type) { return op_type == "LSTM" || op_type == "GRU" || op_type == "RNN"; }

Result<Graph> expand_recurrent_ops(Graph graph) { return expand_nodes(std::move(graph), default_domain(is_recurrent_op), expand_node); }

}  // namespace tessel
