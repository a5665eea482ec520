#pragma once
// Writes the ops that replace one ONNX node at import (recurrent ops, quantized ops): each
// new node is named under the replaced node's name, and small constants are made once.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/ir/graph_rewriter.h"

namespace tessel {

class NodeEmitter {
 public:
  /// `dtype` is the type of the scalars value() and zeros() make.
  NodeEmitter(GraphRewriter &rewriter, std::string prefix, DType dtype)
      : rewriter_(rewriter), prefix_(std::move(prefix)), dtype_(dtype) {}

  /// One node with one output: `out` when given, else a new tensor.
  int op(const std::string &type, std::vector<int> inputs, Attributes attributes = {}, int out = kNoTensor);
  /// A 1-D int64 constant.
  int shape(const std::vector<int64_t> &dims);
  /// A rank-0 int64 constant.
  int index(int64_t i);
  /// A rank-0 constant of the emitter's dtype.
  int value(double v);
  /// A rank-0 constant of any dtype (not shared).
  int scalar(DType dtype, double v);
  int zeros(const Shape &dims);

  int reshape(int x, const std::vector<int64_t> &dims, int out = kNoTensor) {
    return op("Reshape", {x, shape(dims)}, {}, out);
  }
  /// Entry i of axis `axis`, the axis dropped.
  int take(int x, int64_t i, int64_t axis) { return op("Gather", {x, index(i)}, with("axis", axis)); }
  int transpose(int x, std::vector<int64_t> perm, int out = kNoTensor) {
    return op("Transpose", {x}, with("perm", std::move(perm)), out);
  }
  int concat(std::vector<int> parts, int64_t axis, int out = kNoTensor) {
    return op("Concat", std::move(parts), with("axis", axis), out);
  }
  int cast(int x, DType to, int out = kNoTensor);
  int add(int a, int b) { return op("Add", {a, b}); }
  int sub(int a, int b) { return op("Sub", {a, b}); }
  int mul(int a, int b) { return op("Mul", {a, b}); }
  int div(int a, int b) { return op("Div", {a, b}); }
  int matmul(int a, int b) { return op("MatMul", {a, b}); }
  /// x clamped to [lo, hi] (Max then Min: Clip's form changed between opsets).
  int clamp(int x, int lo, int hi) { return op("Min", {op("Max", {x, lo}), hi}); }
  int clip(int x, float bound) { return bound > 0 ? clamp(x, value(-bound), value(bound)) : x; }

  template <typename T>
  static Attributes with(const std::string &name, T value) {
    Attributes a;
    a.set(name, std::move(value));
    return a;
  }

 private:
  GraphRewriter &rewriter_;
  std::string prefix_;
  DType dtype_;
  int count_ = 0;
  std::map<std::vector<int64_t>, int> shapes_;
  std::map<int64_t, int> indices_;
  std::map<double, int> values_;
};

/// Whether an expansion reads inferred types (else `typed` is the graph as imported, with
/// only its declared types).
enum class TypesNeeded { Yes, No };

/// Replaces each top-level node that `wanted` picks: `expand` removes it and writes its
/// replacement, reading sizes and dtypes from `typed` (the graph as static inference types
/// it). A graph without such nodes comes back as it was, and so does one that inference
/// fails on (the caller's own inference reports it). An expansion's error is returned
/// naming the node.
using ExpandNode = std::function<Result<void>(GraphRewriter &rewriter, const Graph &typed, int node)>;
Result<Graph> expand_nodes(Graph graph, const std::function<bool(const Node &node)> &wanted, const ExpandNode &expand,
                           TypesNeeded types = TypesNeeded::Yes);

/// A `wanted` for expand_nodes: default-domain nodes whose op type `is_op` accepts.
std::function<bool(const Node &)> default_domain(bool (*is_op)(const std::string &op_type));

}  // namespace tessel
