#include "peers/bench_peer_problem.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "graph/fusion/fuse.h"
#include "graph/passes/block_conv_weights.h"
#include "graph/passes/block_nhwc_conv_weights.h"
#include "graph/passes/channels_last_conv.h"
#include "graph/passes/panel_matmul_weights.h"
#include "tuner/schedule_benchmark.h"

namespace tessel {

namespace {

/// Reads the task's graph around its group: who produces what, which external input a tensor is.
class GroupView {
 public:
  GroupView(const Task &task, const std::vector<Tensor> &inputs) : task_(task), inputs_(inputs) {
    for (size_t i = 0; i < task.signature.inputs.size(); ++i) input_index_[task.signature.inputs[i]] = i;
  }
  const Graph &graph() const { return *task_.graph; }
  const Node &node(size_t position) const { return graph().nodes[task_.group.nodes.at(position)]; }
  size_t size() const { return task_.group.nodes.size(); }
  std::string ops() const { return group_ops_text(graph(), task_.group); }
  const std::vector<int> &inputs_of(size_t position) const { return graph().node_inputs[task_.group.nodes.at(position)]; }
  int output_of(size_t position) const { return graph().node_outputs[task_.group.nodes.at(position)].at(0); }
  const Shape &shape(int tensor) const { return task_.signature.types.at(tensor).shape; }
  /// The value the kernel bakes in for `tensor` (shape-like inputs), or null.
  const Tensor *value(int tensor) const {
    return tensor >= 0 && static_cast<size_t>(tensor) < task_.signature.values.size() ? task_.signature.values[tensor]
                                                                                       : nullptr;
  }

  /// The kernel input behind `tensor` as a peer buffer; an error if it is computed in the group
  /// or is not fp32.
  Result<bench::PeerBuffer> buffer(int tensor) const {
    auto it = input_index_.find(tensor);
    if (it == input_index_.end()) return make_error(ErrorKind::Unsupported, "an operand is computed inside the group");
    const Tensor &t = inputs_.at(it->second);
    if (t.dtype() != DType::Float32)
      return make_error(ErrorKind::Unsupported, "peers take float32 only, an input is " + dtype_name(t.dtype()));
    return bench::PeerBuffer{t.data_as<float>(), t.shape(), value(tensor) != nullptr};
  }

  /// Whether position `p` reads the previous member's output and otherwise only kernel inputs.
  bool chains_from_previous(size_t p) const {
    const int previous = output_of(p - 1);
    const auto &ins = inputs_of(p);
    return !ins.empty() && ins[0] == previous &&
           std::all_of(ins.begin() + 1, ins.end(), [&](int t) { return input_index_.count(t) > 0; });
  }

 private:
  const Task &task_;
  const std::vector<Tensor> &inputs_;
  std::map<int, size_t> input_index_;
};

/// The last axis, however the attribute spells it.
bool is_last_axis(int64_t axis, size_t rank) { return axis == -1 || axis == static_cast<int64_t>(rank) - 1; }

/// Trailing Add(bias over the last channel axis) and Relu after a product, as peers fuse them.
Result<void> absorb_bias_relu(const GroupView &view, size_t first, int64_t channels, int channel_axis,
                              bench::PeerProblem &problem) {
  for (size_t p = first; p < view.size(); ++p) {
    const Node &node = view.node(p);
    if (!view.chains_from_previous(p))
      return make_error(ErrorKind::Unsupported, "member " + node.op_type + " does not extend a chain");
    if (node.op_type == "Relu" && !problem.relu) {
      problem.relu = true;
      continue;
    }
    if (node.op_type == "Add" && !problem.has_bias && !problem.relu && view.inputs_of(p).size() == 2) {
      const int bias = view.inputs_of(p)[1];
      const Shape &s = view.shape(bias);
      // The bias must vary along the channel axis only: [K], [K,1,1] for conv; [N], [1,N] for matmul.
      int64_t count = 1, along = 1;
      const int rank = static_cast<int>(view.shape(view.output_of(p)).size());
      for (size_t d = 0; d < s.size(); ++d) {
        count *= s[d];
        if (static_cast<int>(d) + rank - static_cast<int>(s.size()) == channel_axis) along = s[d];
      }
      if (count != channels || along != channels)
        return make_error(ErrorKind::Unsupported, "the Add is not a per-channel bias (a residual add)");
      auto buffer = view.buffer(bias);
      if (!buffer.ok()) return buffer.error();
      buffer->shape = {channels};
      problem.inputs.push_back(buffer.value());
      problem.has_bias = true;
      continue;
    }
    return make_error(ErrorKind::Unsupported, "no peer fuses " + node.op_type + " after the product");
  }
  return {};
}

Result<void> describe_matmul(const GroupView &view, bench::PeerProblem &problem) {
  const Node &node = view.node(0);
  if (node.op_type == "Gemm") {
    const Attributes &a = node.attributes;
    if (a.get_int("transA", 0) || a.get_int("transB", 0) || a.get_float("alpha", 1) != 1 || a.get_float("beta", 1) != 1)
      return make_error(ErrorKind::Unsupported, "Gemm with transposes or scales has no peer here");
  }
  const auto &ins = view.inputs_of(0);
  auto a = view.buffer(ins[0]);
  auto b = view.buffer(ins[1]);
  if (!a.ok()) return a.error();
  if (!b.ok()) return b.error();
  std::shared_ptr<std::vector<float>> matrix;
  if (matmul_panel_width(node) > 1) {
    // panel_matmul_weights stored B as [N / width, K, width]; peers read [K, N].
    const std::vector<int64_t> panels = b->shape;
    matrix = std::make_shared<std::vector<float>>(matrix_from_panels(b->data, panels));
    b.value() = bench::PeerBuffer{matrix->data(), {panels[1], panels[0] * panels[2]}, true};
  }
  if (a->shape.size() < 2 || b->shape.size() < 2)
    return make_error(ErrorKind::Unsupported, "matrix-vector products have no peer here");
  if (b->shape.size() > 2 && b->shape.size() != a->shape.size())
    return make_error(ErrorKind::Unsupported, "B's batch dims differ from A's");
  problem.op = bench::PeerOp::Matmul;
  problem.inputs = {a.value(), b.value()};
  if (matrix) problem.storage.push_back(matrix);
  const int64_t n = b->shape.back();
  if (node.op_type == "Gemm" && ins.size() > 2 && ins[2] != kNoTensor) {
    auto c = view.buffer(ins[2]);
    if (!c.ok()) return c.error();
    int64_t count = 1;
    for (int64_t d : c->shape) count *= d;
    if (count != n) return make_error(ErrorKind::Unsupported, "Gemm's C is not a bias over N");
    c->shape = {n};
    problem.inputs.push_back(c.value());
    problem.has_bias = true;
  }
  const int rank = static_cast<int>(view.shape(view.output_of(0)).size());
  return absorb_bias_relu(view, 1, n, rank - 1, problem);
}

/// A conv's strides, dilations, pads and groups (Conv and TesselConvNHWC name them alike),
/// and its bias input when it has one.
Result<void> take_conv_attributes(const GroupView &view, bench::PeerProblem &problem) {
  const Attributes &a = view.node(0).attributes;
  const auto &ins = view.inputs_of(0);
  const std::vector<int64_t> strides = a.get_ints("strides", {1, 1}), dilations = a.get_ints("dilations", {1, 1}),
                             pads = a.get_ints("pads", {0, 0, 0, 0});
  problem.strides = {strides.at(0), strides.at(1)};
  problem.dilations = {dilations.at(0), dilations.at(1)};
  problem.pads = {pads.at(0), pads.at(1), pads.at(2), pads.at(3)};
  problem.groups = a.get_int("group", 1);
  if (ins.size() > 2 && ins[2] != kNoTensor) {
    auto bias = view.buffer(ins[2]);
    if (!bias.ok()) return bias.error();
    problem.inputs.push_back(bias.value());
    problem.has_bias = true;
  }
  return {};
}

Result<void> describe_conv(const GroupView &view, bench::PeerProblem &problem) {
  const Node &node = view.node(0);
  const Attributes &a = node.attributes;
  if (a.get_string("auto_pad", "NOTSET") != "NOTSET")
    return make_error(ErrorKind::Unsupported, "auto_pad convolutions have no peer here");
  const auto &ins = view.inputs_of(0);
  auto x = view.buffer(ins[0]);
  auto w = view.buffer(ins[1]);
  if (!x.ok()) return x.error();
  if (!w.ok()) return w.error();
  if (x->shape.size() != 4) return make_error(ErrorKind::Unsupported, "only 2-D convolutions have a peer here");
  problem.op = bench::PeerOp::Conv;
  problem.inputs = {x.value(), w.value()};
  if (const int64_t block = conv_weight_block(node); block > 1) {
    // block_conv_weights stored W as [K / block, C, R, S, block]; peers read [K, C, R, S].
    const std::vector<int64_t> &s = w->shape;
    auto plain = std::make_shared<std::vector<float>>(unblocked_conv_weight(w->data, s));
    problem.inputs[1] = bench::PeerBuffer{plain->data(), {s[0] * block, s[1], s[2], s[3]}, true};
    problem.storage.push_back(plain);
  }
  TESSEL_TRY_VOID(take_conv_attributes(view, problem));
  const int64_t k = problem.inputs[1].shape[0];
  return absorb_bias_relu(view, 1, k, 1, problem);
}

/// A channels-last conv (TesselConvNHWC): X [N, H, W, C], W [KH, KW, C / group, M] (or
/// blocked [M / b, KH, KW, C / group, b]), output [N, OH, OW, M]; peers get W as [M, C / group,
/// KH, KW] and read X and write the output channels-last.
Result<void> describe_conv_nhwc(const GroupView &view, bench::PeerProblem &problem) {
  const Node &node = view.node(0);
  const Attributes &a = node.attributes;
  if (a.get_string("input_layout", "NHWC") != "NHWC")
    return make_error(ErrorKind::Unsupported, "a channels-last conv reading an NCHW image has no peer here");
  const auto &ins = view.inputs_of(0);
  auto x = view.buffer(ins[0]);
  auto w = view.buffer(ins[1]);
  if (!x.ok()) return x.error();
  if (!w.ok()) return w.error();
  const int64_t block = conv_weight_block(node);
  const std::optional<NhwcConvWeightDims> dims = nhwc_conv_weight_dims(w->shape, block);
  if (x->shape.size() != 4 || !dims) return make_error(ErrorKind::Unsupported, "an unexpected channels-last conv weight");
  const int64_t m_count = dims->out_channels, per_group = dims->in_per_group, kh = dims->kernel_h, kw = dims->kernel_w;
  auto plain = std::make_shared<std::vector<float>>(static_cast<size_t>(m_count * per_group * kh * kw));
  for (int64_t m = 0; m < m_count; ++m)
    for (int64_t c = 0; c < per_group; ++c)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          const int64_t from = block > 1 ? (((m / block) * kh + i) * kw + j) * per_group * block + c * block + m % block
                                         : ((i * kw + j) * per_group + c) * m_count + m;
          (*plain)[static_cast<size_t>(((m * per_group + c) * kh + i) * kw + j)] = w->data[from];
        }
  problem.op = bench::PeerOp::Conv;
  problem.channels_last = true;
  problem.inputs = {x.value(), bench::PeerBuffer{plain->data(), {m_count, per_group, kh, kw}, true}};
  problem.storage.push_back(plain);
  TESSEL_TRY_VOID(take_conv_attributes(view, problem));
  return absorb_bias_relu(view, 1, m_count, 3, problem);
}

Result<void> describe_elementwise(const GroupView &view, bench::PeerProblem &problem) {
  static const std::map<std::string, std::string> binary = {{"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}};
  static const std::map<std::string, std::string> unary = {
      {"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"}, {"Abs", "abs"}};
  problem.op = bench::PeerOp::Elementwise;
  for (size_t p = 0; p < view.size(); ++p) {
    const Node &node = view.node(p);
    const auto &ins = view.inputs_of(p);
    if (p == 0) {
      auto x = view.buffer(ins[0]);
      if (!x.ok()) return x.error();
      problem.inputs = {x.value()};
    } else if (!view.chains_from_previous(p)) {
      return make_error(ErrorKind::Unsupported, node.op_type + " does not extend the chain");
    }
    if (auto b = binary.find(node.op_type); b != binary.end()) {
      auto operand = view.buffer(ins.at(1));
      if (!operand.ok()) return operand.error();
      if (operand->shape != problem.output_shape)
        return make_error(ErrorKind::Unsupported, "broadcasting operands have no peer here");
      problem.inputs.push_back(operand.value());
      problem.steps.push_back(b->second);
    } else if (auto u = unary.find(node.op_type); u != unary.end()) {
      problem.steps.push_back(u->second);
    } else {
      return make_error(ErrorKind::Unsupported, "no peer computes " + node.op_type + " in an elementwise chain");
    }
  }
  if (problem.inputs[0].shape != problem.output_shape)
    return make_error(ErrorKind::Unsupported, "a broadcast first operand has no peer here");
  return {};
}

Result<void> describe_row_op(const GroupView &view, bench::PeerProblem &problem) {
  static const std::set<std::string> chain_ops = {"Add", "Sub", "Mul", "Relu", "Sigmoid", "Tanh", "Exp", "Abs"};
  if (chain_ops.count(view.node(0).op_type)) return describe_elementwise(view, problem);
  if (view.size() != 1) return make_error(ErrorKind::Unsupported, "no peer fuses " + view.ops());
  const Node &node = view.node(0);
  const auto &ins = view.inputs_of(0);
  auto x = view.buffer(ins[0]);
  if (!x.ok()) return x.error();
  const size_t rank = x->shape.size();
  problem.inputs = {x.value()};
  if (node.op_type == "Softmax") {
    if (!is_last_axis(node.attributes.get_int("axis", -1), rank))
      return make_error(ErrorKind::Unsupported, "softmax over another axis than the last");
    problem.op = bench::PeerOp::Softmax;
    return {};
  }
  if (node.op_type == "LayerNormalization") {
    if (!is_last_axis(node.attributes.get_int("axis", -1), rank))
      return make_error(ErrorKind::Unsupported, "layer norm over more than the last axis");
    if (ins.size() < 3 || ins[2] == kNoTensor)
      return make_error(ErrorKind::Unsupported, "layer norm without a bias has no peer here");
    for (int i : {1, 2}) {
      auto b = view.buffer(ins[i]);
      if (!b.ok()) return b.error();
      problem.inputs.push_back(b.value());
    }
    problem.op = bench::PeerOp::LayerNorm;
    problem.epsilon = node.attributes.get_float("epsilon", 1e-5f);
    return {};
  }
  static const std::map<std::string, std::string> reductions = {
      {"ReduceSum", "sum"}, {"ReduceMean", "mean"}, {"ReduceMax", "max"}};
  if (auto r = reductions.find(node.op_type); r != reductions.end()) {
    std::vector<int64_t> axes = node.attributes.get_ints("axes");
    if (ins.size() > 1 && ins[1] != kNoTensor) {  // opset 13+ ReduceSum: axes as an input
      const Tensor *value = view.value(ins[1]);
      if (!value) return make_error(ErrorKind::Unsupported, node.op_type + "'s axes are not known when compiling");
      axes = value->to_int64_vector();
    }
    if (axes.size() != 1 || !is_last_axis(axes[0], rank) || node.attributes.get_int("keepdims", 1) != 1)
      return make_error(ErrorKind::Unsupported, node.op_type + " over another axis than the last, or without keepdims");
    problem.op = bench::PeerOp::Reduce;
    problem.reduce_kind = r->second;
    return {};
  }
  return make_error(ErrorKind::Unsupported, "no peer computes " + node.op_type);
}

}  // namespace

Result<bench::PeerProblem> peer_problem_for_task(const Task &task, const std::vector<Tensor> &inputs,
                                                 const std::vector<float> *reference) {
  GroupView view(task, inputs);
  bench::PeerProblem problem;
  problem.reference = reference;
  problem.flops = static_cast<double>(task.flops);
  problem.bytes = task_compulsory_bytes(task);
  if (task.signature.outputs.size() != 1)
    return make_error(ErrorKind::Unsupported, "tasks with several outputs have no peer here");
  problem.output_shape = task.signature.types.at(task.signature.outputs[0]).shape;
  const std::string first = view.node(0).op_type;
  Result<void> described = make_error("");
  if (first == "MatMul" || first == "Gemm") described = describe_matmul(view, problem);
  else if (first == "Conv") described = describe_conv(view, problem);
  else if (first == kConvNhwcOp) described = describe_conv_nhwc(view, problem);
  else described = describe_row_op(view, problem);
  if (!described.ok()) return make_error(described.error().kind, view.ops() + ": " + described.error().message);
  return problem;
}

double task_compulsory_bytes(const Task &task) {
  double bytes = 0;
  for (int t : task.signature.inputs) bytes += shape_numel(task.signature.types.at(t).shape) * dtype_size(task.signature.types.at(t).dtype);
  for (int t : task.signature.outputs) bytes += shape_numel(task.signature.types.at(t).shape) * dtype_size(task.signature.types.at(t).dtype);
  return bytes;
}

}  // namespace tessel
