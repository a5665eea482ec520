#include "tuner/benchmark_problems.h"

#include <cctype>
#include <map>
#include <sstream>
#include <vector>

#include "executor/model_inputs.h"
#include "graph/fusion/workload_graph.h"
#include "graph/infer/shape_inference.h"

namespace tessel {

namespace {

Result<std::vector<int64_t>> parse_dims(const std::string &spec, char separator, size_t min_count, size_t max_count) {
  std::vector<int64_t> dims;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, separator)) {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument(item);
      dims.push_back(v);
    } catch (const std::exception &) {
      return make_error(ErrorKind::InvalidInput, "'" + item + "' in '" + spec + "' is not a non-negative integer");
    }
  }
  if (dims.size() < min_count || dims.size() > max_count)
    return make_error(ErrorKind::InvalidInput, "wrong number of sizes in '" + spec + "'");
  return dims;
}

/// Sizes must be positive except where a zero means something (a conv's padding).
Result<void> require_positive(const std::vector<int64_t> &dims, size_t count, const std::string &spec) {
  for (size_t i = 0; i < count && i < dims.size(); ++i)
    if (dims[i] <= 0) return make_error(ErrorKind::InvalidInput, "sizes in '" + spec + "' must be positive");
  return {};
}

/// A small graph under construction: fed inputs, constant weights, one node after another.
/// Its ops are read as a model's of the workloads' opset (axes of ReduceSum an input, of
/// ReduceMean an attribute); an opset left at 0 made every rewrite's Reshape read its shape
/// from an attribute, as before opset 5 (`tessel bench conv` failed after winograd_conv).
struct GraphMaker {
  Graph g = [] {
    Graph graph;
    graph.opset = kWorkloadOpset;
    return graph;
  }();
  uint64_t seed = 2;
  int input(const std::string &name, const Shape &shape) {
    const int t = g.add_tensor({name, TensorType{DType::Float32, shape, true}, std::nullopt});
    g.inputs.push_back(t);
    return t;
  }
  int weight(const std::string &name, const Shape &shape) {
    TensorType type{DType::Float32, shape, true};
    return g.add_tensor({name, type, random_tensor(type, seed++)});
  }
  int ints(const std::string &name, const std::vector<int64_t> &values) {
    return g.add_tensor({name, TensorType{DType::Int64, {static_cast<int64_t>(values.size())}, true},
                         Tensor::from_int64s(values, {static_cast<int64_t>(values.size())})});
  }
  int node(const std::string &op, std::vector<int> inputs, Attributes attrs = {}) {
    const int out = g.add_tensor({"t" + std::to_string(g.nodes.size()), {}, std::nullopt});
    std::string name = op;
    for (char &c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    g.add_node(Node{op, name + "_" + std::to_string(g.nodes.size()), "", std::move(attrs)}, std::move(inputs), {out});
    return out;
  }
  /// Bias of `channels` along `axis` of a rank-`rank` output (broadcast as ONNX does), then ReLU.
  int bias_relu(int value, int64_t channels, int rank, int axis) {
    Shape shape(static_cast<size_t>(rank - axis), 1);
    shape[0] = channels;
    const int bias = weight("bias", shape);
    return node("Relu", {node("Add", {value, bias})});
  }
};

Result<std::shared_ptr<const Graph>> finish(GraphMaker &maker, int output) {
  maker.g.outputs = {output};
  auto inferred = infer_shapes(std::move(maker.g));
  if (!inferred.ok()) return inferred.error();
  return std::make_shared<const Graph>(std::move(inferred.value()));
}

Result<std::shared_ptr<const Graph>> make_matmul(const std::string &spec, const BenchmarkGraphOptions &options) {
  auto dims = parse_dims(spec, 'x', 3, 4);
  if (!dims.ok()) return make_error(dims.error().kind, "matmul sizes are MxNxK or BxMxNxK: " + dims.error().message);
  if (auto ok = require_positive(*dims, dims->size(), spec); !ok.ok()) return ok.error();
  GraphMaker m;
  const auto &d = dims.value();
  int product;
  if (d.size() == 3) {
    product = m.node("MatMul", {m.input("A", {d[0], d[2]}), m.weight("B", {d[2], d[1]})});
  } else {
    product = m.node("MatMul", {m.input("A", {d[0], d[1], d[3]}), m.input("B", {d[0], d[3], d[2]})});
  }
  const int rank = static_cast<int>(d.size()) - 1;
  if (options.bias_relu) product = m.bias_relu(product, d[d.size() - 2], rank, rank - 1);
  return finish(m, product);
}

Result<std::shared_ptr<const Graph>> make_conv(const std::vector<int64_t> &d, int64_t groups,
                                               const BenchmarkGraphOptions &options) {
  // d = N, C, H, W, K, R, S, stride, pad
  GraphMaker m;
  if (d[1] % groups != 0 || d[4] % groups != 0)
    return make_error(ErrorKind::InvalidInput,
                      "conv: groups " + std::to_string(groups) + " must divide C (" + std::to_string(d[1]) +
                      ") and K (" + std::to_string(d[4]) + ")");
  Attributes attrs;
  attrs.set("strides", std::vector<int64_t>{d[7], d[7]});
  attrs.set("pads", std::vector<int64_t>{d[8], d[8], d[8], d[8]});
  if (groups != 1) attrs.set("group", groups);
  std::vector<int> inputs = {m.input("X", {d[0], d[1], d[2], d[3]}), m.weight("W", {d[4], d[1] / groups, d[5], d[6]})};
  // A conv's bias is its own third input in ONNX, which is how exporters write it.
  if (options.bias_relu) inputs.push_back(m.weight("bias", {d[4]}));
  int out = m.node("Conv", inputs, std::move(attrs));
  if (options.bias_relu) out = m.node("Relu", {out});
  return finish(m, out);
}

Result<std::shared_ptr<const Graph>> make_row_op(const std::string &kind, const std::string &spec,
                                                 const BenchmarkGraphOptions &options) {
  auto dims = parse_dims(spec, 'x', 1, 6);
  if (!dims.ok()) return make_error(dims.error().kind, kind + " sizes are AxB[x...]: " + dims.error().message);
  if (auto ok = require_positive(*dims, dims->size(), spec); !ok.ok()) return ok.error();
  const Shape shape = dims.value();
  GraphMaker m;
  const int x = m.input("X", shape);
  Attributes attrs;
  if (kind == "softmax") {
    attrs.set("axis", int64_t{-1});
    return finish(m, m.node("Softmax", {x}, attrs));
  }
  if (kind == "layernorm") {
    attrs.set("axis", int64_t{-1});
    attrs.set("epsilon", 1e-5f);
    return finish(m, m.node("LayerNormalization", {x, m.weight("scale", {shape.back()}), m.weight("bias", {shape.back()})},
                            attrs));
  }
  if (kind == "reduce_sum") {  // opset 13+: axes are an input
    attrs.set("keepdims", int64_t{1});
    return finish(m, m.node("ReduceSum", {x, m.ints("axes", {-1})}, attrs));
  }
  if (kind == "reduce_mean" || kind == "reduce_max") {  // axes stay an attribute until opset 18
    attrs.set("keepdims", int64_t{1});
    attrs.set("axes", std::vector<int64_t>{-1});
    return finish(m, m.node(kind == "reduce_mean" ? "ReduceMean" : "ReduceMax", {x}, attrs));
  }
  // elementwise
  static const std::map<std::string, std::string> binary = {{"add", "Add"}, {"sub", "Sub"}, {"mul", "Mul"}};
  static const std::map<std::string, std::string> unary = {
      {"relu", "Relu"}, {"sigmoid", "Sigmoid"}, {"tanh", "Tanh"}, {"exp", "Exp"}, {"abs", "Abs"}};
  if (options.chain.empty())
    return make_error(ErrorKind::InvalidInput, "elementwise needs at least one step in --chain");
  int value = x;
  for (size_t i = 0; i < options.chain.size(); ++i) {
    const std::string &step = options.chain[i];
    if (binary.count(step)) value = m.node(binary.at(step), {value, m.input("Y" + std::to_string(i), shape)});
    else if (unary.count(step)) value = m.node(unary.at(step), {value});
    else
      return make_error(ErrorKind::InvalidInput,
                        "unknown elementwise step '" + step + "' (add, sub, mul, relu, sigmoid, tanh, exp, abs)");
  }
  return finish(m, value);
}

}  // namespace

const std::vector<std::string> &benchmark_kernel_kinds() {
  static const std::vector<std::string> kinds = {"matmul",     "conv",       "depthwise",   "softmax",    "layernorm",
                                                 "reduce_sum", "reduce_mean", "reduce_max", "elementwise"};
  return kinds;
}

Result<std::shared_ptr<const Graph>> make_benchmark_graph(const std::string &kind_in, const std::string &spec,
                                                          const BenchmarkGraphOptions &options) {
  std::string kind = kind_in == "conv2d" ? "conv" : kind_in == "reduce" ? "reduce_sum" : kind_in;
  Result<std::shared_ptr<const Graph>> graph = make_error("");
  if (kind == "matmul") {
    graph = make_matmul(spec, options);
  } else if (kind == "conv") {
    auto dims = parse_dims(spec, ',', 7, 10);
    if (!dims.ok())
      return make_error(dims.error().kind,
                        "conv sizes are N,C,H,W,K,R,S[,stride[,pad[,groups]]]: " + dims.error().message);
    if (auto ok = require_positive(*dims, 7, spec); !ok.ok()) return ok.error();
    std::vector<int64_t> d = dims.value();
    const int64_t groups = d.size() > 9 ? d[9] : 1;
    if (d.size() < 8) d.push_back(1);
    if (d.size() < 9) d.push_back(d[5] / 2);
    if (d[7] <= 0 || groups <= 0)
      return make_error(ErrorKind::InvalidInput, "conv stride and groups must be positive in '" + spec + "'");
    graph = make_conv(d, groups, options);
  } else if (kind == "depthwise") {
    auto dims = parse_dims(spec, ',', 6, 8);
    if (!dims.ok())
      return make_error(dims.error().kind, "depthwise sizes are N,C,H,W,R,S[,stride[,pad]]: " + dims.error().message);
    if (auto ok = require_positive(*dims, 6, spec); !ok.ok()) return ok.error();
    const auto &e = dims.value();
    const int64_t stride = e.size() > 6 ? e[6] : 1, pad = e.size() > 7 ? e[7] : e[4] / 2;
    if (stride <= 0) return make_error(ErrorKind::InvalidInput, "depthwise stride must be positive in '" + spec + "'");
    graph = make_conv({e[0], e[1], e[2], e[3], e[1], e[4], e[5], stride, pad}, e[1], options);
  } else if (kind == "softmax" || kind == "layernorm" || kind == "reduce_sum" || kind == "reduce_mean" ||
             kind == "reduce_max" || kind == "elementwise") {
    graph = make_row_op(kind, spec, options);
  } else {
    std::string known;
    for (const std::string &k : benchmark_kernel_kinds()) known += (known.empty() ? "" : ", ") + k;
    return make_error(ErrorKind::InvalidInput, "unknown benchmark kernel '" + kind_in + "' (" + known + ")");
  }
  return graph;
}

}  // namespace tessel
