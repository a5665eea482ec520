#pragma once
// What tessel knows about each operator at graph level: how to infer its output types
// and which inputs it needs as values (shape-like inputs such as Reshape's `shape`).
#include <functional>
#include <string>
#include <vector>

#include "graph/ir/graph.h"

namespace tessel {

/// Everything an inference rule may look at for one node.
struct InferenceContext {
  const Node &node;
  int64_t opset;
  std::vector<TensorType> input_types;      // Undefined dtype for omitted optional inputs
  std::vector<const Tensor *> input_values;  // nullptr where the value is not known
  size_t num_outputs;

  bool has_input(size_t i) const {
    return i < input_types.size() && input_types[i].dtype != DType::Undefined;
  }
  const TensorType &input(size_t i) const;
  /// Rank of input i; throws when absent or unknown-rank (caught by the framework).
  int rank(size_t i) const;
  /// The value of input i, which this rule needs; throws UnknownValue if not known.
  const Tensor &value(size_t i) const;
  /// Value of input i as int64s, or fallback when the optional input is omitted.
  std::vector<int64_t> ints_value(size_t i, std::vector<int64_t> fallback = {}) const;
  const Attributes &attrs() const { return node.attributes; }
  /// Throws a TesselException that names the node and op.
  [[noreturn]] void fail(const std::string &message) const;
};

/// Raised by InferenceContext::value() when static inference lacks a needed value.
struct UnknownValue {};

/// Output types of one node.
using InferFn = std::function<std::vector<TensorType>(const InferenceContext &)>;

/// The fusion pattern of an op (TVM's OpPatternKind), used by the graph optimizer.
enum class OpPattern { Elementwise, Broadcast, Injective, Reduction, OutElementwiseFusable, Opaque };

struct OpSchema {
  std::string op_type;
  InferFn infer;
  /// Inputs whose values (not just types) the op needs; a kernel is specialized on them.
  std::vector<int> value_inputs;
  OpPattern pattern = OpPattern::Opaque;
  /// The dtype of output `i` from attributes and input dtypes alone, for ops whose outputs
  /// are not of their first data input's type (Shape, comparisons, ArgMax ...). Used when
  /// `infer` cannot run because a shape is only known at run time; without it, outputs
  /// take the first data input's dtype.
  std::function<DType(const InferenceContext &, size_t output)> output_dtype = nullptr;
};

/// `schema` with an output_dtype rule.
OpSchema with_output_dtype(OpSchema schema, std::function<DType(const InferenceContext &, size_t output)> rule);
/// An output_dtype rule: `dtype` for every output.
std::function<DType(const InferenceContext &, size_t)> always_dtype(DType dtype);

/// The schema of a default-domain op, or nullptr if tessel does not support it.
const OpSchema *find_op_schema(const std::string &op_type);
/// All supported op types, sorted.
std::vector<std::string> supported_op_types();

/// Registration hooks, one per family file (infer_*.cpp).
class OpRegistry;
void register_elementwise_ops(OpRegistry &registry);
void register_nn_ops(OpRegistry &registry);
void register_pool_norm_ops(OpRegistry &registry);
void register_reduction_ops(OpRegistry &registry);
void register_shape_ops(OpRegistry &registry);
void register_index_ops(OpRegistry &registry);
void register_misc_ops(OpRegistry &registry);
void register_winograd_ops(OpRegistry &registry);
void register_recurrent_ops(OpRegistry &registry);
void register_quantization_ops(OpRegistry &registry);

class OpRegistry {
 public:
  void add(OpSchema schema);
  const OpSchema *find(const std::string &op_type) const;
  std::vector<std::string> names() const;

 private:
  std::vector<OpSchema> schemas_;
};

// Helpers shared by the inference rules.

/// Numpy-style multidirectional broadcast of shapes; throws via ctx.fail on mismatch.
Shape broadcast_shapes(const InferenceContext &ctx, const std::vector<Shape> &shapes);
/// Normalizes a possibly negative axis into [0, rank); fails when out of range.
int64_t normalize_axis(const InferenceContext &ctx, int64_t axis, int64_t rank);
/// Whether PRelu's slope applies per channel (axis 1), as opset 6 defined it.
bool prelu_slope_is_per_channel(int64_t opset, const Shape &x, const Shape &slope);
/// A type with the given dtype and shape.
inline TensorType make_type(DType dtype, Shape shape) { return TensorType{dtype, std::move(shape), true}; }

}  // namespace tessel
