#pragma once
// Helpers of the graph passes' tests: a Graph built by tensor name (a name's tensor is
// created the first time it is mentioned), random constants, one pass run on its own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "graph/ir/graph.h"
#include "graph/passes/pass_manager.h"
#include "tests/support/op_test_util.h"

namespace tessel::testing {

struct Builder {
  Graph g;
  explicit Builder(int64_t opset = 17) {
    g.name = "pass_test";
    g.opset = opset;
  }
  int tensor(const std::string &name) {
    if (name.empty()) return kNoTensor;
    const int t = g.find_tensor(name);
    return t != kNoTensor ? t : g.add_tensor({name, {}, std::nullopt});
  }
  Builder &input(const std::string &name, TensorType type) {
    const int t = tensor(name);
    g.tensors[t].type = std::move(type);
    g.inputs.push_back(t);
    return *this;
  }
  Builder &input(const std::string &name, Shape shape) {
    return input(name, TensorType{DType::Float32, std::move(shape), true});
  }
  Builder &constant(const std::string &name, Tensor value) {
    const int t = tensor(name);
    g.tensors[t].type = value.type();
    g.tensors[t].constant = std::move(value);
    return *this;
  }
  Builder &node(const std::string &op, const std::vector<std::string> &ins, const std::vector<std::string> &outs,
                Attributes attributes = {}) {
    std::vector<int> in_ids, out_ids;
    for (const std::string &n : ins) in_ids.push_back(tensor(n));
    for (const std::string &n : outs) out_ids.push_back(tensor(n));
    g.add_node(Node{op, op + "_" + std::to_string(g.nodes.size()), "", std::move(attributes)}, in_ids, out_ids);
    return *this;
  }
  Builder &node(const std::string &op, const std::vector<std::string> &ins, const char *out,
                Attributes attributes = {}) {
    return node(op, ins, std::vector<std::string>{out}, std::move(attributes));
  }
  Builder &output(const std::string &name) {
    g.outputs.push_back(tensor(name));
    return *this;
  }
};

/// Uniform values in [-1, 1).
inline Tensor random_uniform(Shape shape, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

inline int count_ops(const Graph &g, const std::string &op) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node &n) { return n.op_type == op; }));
}

/// The first node of `op` in g, and its index (a test failure when there is none).
inline int first_node_index(const Graph &g, const std::string &op) {
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].op_type == op) return static_cast<int>(n);
  FAIL("no " << op << " node");
  return -1;
}
inline const Node &first_node(const Graph &g, const std::string &op) { return g.nodes[first_node_index(g, op)]; }

/// The graph after `pass` alone (types inferred before and after); the pass must succeed.
inline Graph after_pass(const Graph &g, const GraphPass &pass) {
  auto out = run_passes(g, {pass});
  INFO((out.ok() ? std::string() : out.error().message));
  REQUIRE(out.ok());
  return std::move(out.value());
}

/// A rewritten graph computes what the original does (every output, within 1e-4).
inline void check_same_outputs(const Graph &before, const Graph &after, const std::vector<Tensor> &inputs) {
  const std::vector<Tensor> a = run_graph(before, inputs), b = run_graph(after, inputs);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].shape() == b[i].shape());
    CHECK(max_abs_diff(a[i], b[i]) < 1e-4);
  }
}

}  // namespace tessel::testing
