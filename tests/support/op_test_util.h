#pragma once
// Builds one-node graphs and runs them, for op unit tests, and the tensor makers and checks
// those tests share. The names avoid the local helpers of the files that include this one
// (attrs, floats, run_op, run_error, check_close ...), which would otherwise be ambiguous.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "executor/graph_executor.h"
#include "graph/infer/shape_inference.h"
#include "graph/ir/graph.h"

namespace tessel::testing {

/// A graph with one node of `op` reading the given inputs (all fed by the caller, or
/// constant where `constants[i]` is set) and producing `num_outputs` outputs. An input
/// whose type has DType::Undefined is an omitted optional input (no tensor at all).
inline Graph single_node_graph(const std::string &op, const std::vector<TensorType> &inputs,
                               size_t num_outputs = 1, Attributes attributes = {},
                               const std::vector<std::optional<Tensor>> &constants = {}, int64_t opset = 17) {
  Graph g;
  g.name = op + "_test";
  g.opset = opset;
  std::vector<int> ins, outs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype == DType::Undefined) {
      ins.push_back(kNoTensor);
      continue;
    }
    TensorInfo info{"in" + std::to_string(i), inputs[i], std::nullopt};
    if (i < constants.size() && constants[i]) info.constant = constants[i];
    int id = g.add_tensor(info);
    ins.push_back(id);
    if (!info.constant) g.inputs.push_back(id);
  }
  for (size_t i = 0; i < num_outputs; ++i) outs.push_back(g.add_tensor({"out" + std::to_string(i), {}, std::nullopt}));
  g.add_node(Node{op, op + "_node", "", std::move(attributes)}, ins, outs);
  g.outputs = outs;
  return g;
}

/// Runs a graph on inputs; fails the test with the error message if it does not run.
inline std::vector<Tensor> run_graph(const Graph &g, const std::vector<Tensor> &inputs) {
  GraphExecutor executor(std::make_shared<const Graph>(g));
  auto out = executor.run(inputs);
  if (!out.ok()) throw std::runtime_error(out.error().message);
  return out.value();
}

/// The types of the given tensors, for graphs that feed them all.
inline std::vector<TensorType> types_of(const std::vector<Tensor> &tensors) {
  std::vector<TensorType> types;
  for (const Tensor &t : tensors) types.push_back(t.type());
  return types;
}

/// Runs a one-node graph whose value inputs are constants (`constants`) and whose other
/// inputs are fed (`fed`); returns all its outputs.
inline std::vector<Tensor> run_node(const std::string &op, const std::vector<TensorType> &types,
                                    const std::vector<std::optional<Tensor>> &constants,
                                    const std::vector<Tensor> &fed, Attributes attributes = {},
                                    size_t num_outputs = 1, int64_t opset = 17) {
  return run_graph(single_node_graph(op, types, num_outputs, std::move(attributes), constants, opset), fed);
}

/// Runs `op` with every input fed at run time; returns all its outputs.
inline std::vector<Tensor> run_on_inputs(const std::string &op, const std::vector<Tensor> &inputs,
                                         Attributes attributes = {}, size_t num_outputs = 1, int64_t opset = 17) {
  return run_node(op, types_of(inputs), {}, inputs, std::move(attributes), num_outputs, opset);
}

/// The error message of running a graph that must fail (the test fails if it runs).
inline std::string run_error_message(const Graph &g, const std::vector<Tensor> &fed) {
  GraphExecutor executor(std::make_shared<const Graph>(g));
  auto out = executor.run(fed);
  REQUIRE_FALSE(out.ok());
  return out.error().message;
}

/// The error message of running `op` with every input fed, which must fail.
inline std::string run_error_message(const std::string &op, const std::vector<Tensor> &inputs,
                                     Attributes attributes = {}, int64_t opset = 17) {
  return run_error_message(single_node_graph(op, types_of(inputs), 1, std::move(attributes), {}, opset), inputs);
}

/// Attributes from name-value pairs: make_attributes({{"axis", int64_t{1}}}).
inline Attributes make_attributes(std::initializer_list<std::pair<std::string, AttributeValue>> list) {
  Attributes a;
  for (const auto &[name, value] : list) a.set(name, value);
  return a;
}

inline TensorType float_type(Shape shape) { return TensorType{DType::Float32, std::move(shape), true}; }
inline TensorType int64_type(Shape shape) { return TensorType{DType::Int64, std::move(shape), true}; }

/// A float32 tensor with the given values.
inline Tensor float_tensor(Shape shape, const std::vector<float> &values) {
  Tensor t(DType::Float32, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}

/// A float32 tensor holding 0, 1, 2, ... in row-major order.
inline Tensor iota_tensor(Shape shape) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = static_cast<float>(i);
  return t;
}

/// Every element of a tensor of any numeric dtype, as double.
inline std::vector<double> values_of(const Tensor &t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

/// Every element as float, for exact comparisons with float32 results.
inline std::vector<float> float_values(const Tensor &t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(t.element_as_double(i)));
  return v;
}

/// Checks every element against `expected` within an absolute tolerance.
inline void check_values_close(const Tensor &t, const std::vector<double> &expected, double tolerance = 1e-5) {
  REQUIRE(t.numel() == static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    CHECK(t.element_as_double(static_cast<int64_t>(i)) == Approx(expected[i]).margin(tolerance));
  }
}

/// Largest elementwise |a - b| of two tensors of one shape.
inline double max_abs_diff(const Tensor &a, const Tensor &b) {
  REQUIRE(a.shape() == b.shape());
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::fabs(a.element_as_double(i) - b.element_as_double(i)));
  return worst;
}

}  // namespace tessel::testing
