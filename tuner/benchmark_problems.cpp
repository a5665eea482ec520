#include "tuner/benchmark_problems.h"

#include <sstream>
#include <vector>

#include "graph/shape_inference.h"
#include "runtime/model_inputs.h"

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
      if (used != item.size() || v <= 0) throw std::invalid_argument(item);
      dims.push_back(v);
    } catch (const std::exception &) {
      return make_error("'" + item + "' in '" + spec + "' is not a positive integer");
    }
  }
  if (dims.size() < min_count || dims.size() > max_count) return make_error("wrong number of sizes in '" + spec + "'");
  return dims;
}

int add_weight(Graph &g, const std::string &name, const Shape &shape, uint64_t seed) {
  TensorType type{DType::Float32, shape, true};
  return g.add_tensor({name, type, random_tensor(type, seed)});
}

}  // namespace

Result<std::shared_ptr<const Graph>> make_benchmark_graph(const std::string &kind, const std::string &spec) {
  Graph g;
  g.name = kind;
  g.opset = 17;
  if (kind == "matmul") {
    auto dims = parse_dims(spec, 'x', 3, 3);
    if (!dims.ok()) return make_error("matmul sizes are MxNxK: " + dims.error().message);
    const int64_t m = (*dims)[0], n = (*dims)[1], k = (*dims)[2];
    const int a = g.add_tensor({"A", TensorType{DType::Float32, {m, k}, true}, std::nullopt});
    g.inputs.push_back(a);
    const int b = add_weight(g, "B", {k, n}, 2);
    const int c = g.add_tensor({"C", {}, std::nullopt});
    g.add_node(Node{"MatMul", "matmul", "", {}}, {a, b}, {c});
    g.outputs = {c};
  } else if (kind == "conv") {
    auto dims = parse_dims(spec, ',', 7, 9);
    if (!dims.ok()) return make_error("conv sizes are N,C,H,W,K,R,S[,stride[,pad]]: " + dims.error().message);
    const auto &d = dims.value();
    const int64_t stride = d.size() > 7 ? d[7] : 1;
    const int64_t pad = d.size() > 8 ? d[8] : d[5] / 2;
    const int x = g.add_tensor({"X", TensorType{DType::Float32, {d[0], d[1], d[2], d[3]}, true}, std::nullopt});
    g.inputs.push_back(x);
    const int w = add_weight(g, "W", {d[4], d[1], d[5], d[6]}, 3);
    const int y = g.add_tensor({"Y", {}, std::nullopt});
    Attributes attrs;
    attrs.set("strides", std::vector<int64_t>{stride, stride});
    attrs.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    g.add_node(Node{"Conv", "conv", "", std::move(attrs)}, {x, w}, {y});
    g.outputs = {y};
  } else {
    return make_error("unknown benchmark kernel '" + kind + "' (matmul or conv)");
  }
  auto inferred = infer_shapes(std::move(g));
  if (!inferred.ok()) return inferred.error();
  return std::make_shared<const Graph>(std::move(inferred.value()));
}

}  // namespace tessel
