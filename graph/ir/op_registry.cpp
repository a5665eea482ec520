#include "graph/ir/op_registry.h"

#include <algorithm>

#include "base/result.h"

namespace tessel {

const TensorType &InferenceContext::input(size_t i) const {
  if (!has_input(i))
    fail("input " + std::to_string(i) + " is missing");
  return input_types[i];
}

int InferenceContext::rank(size_t i) const {
  const TensorType &t = input(i);
  if (!t.rank_known) throw UnknownValue{};
  return static_cast<int>(t.shape.size());
}

const Tensor &InferenceContext::value(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  if (i >= input_values.size() || input_values[i] == nullptr) throw UnknownValue{};
  return *input_values[i];
}

std::vector<int64_t> InferenceContext::ints_value(size_t i, std::vector<int64_t> fallback) const {
  if (!has_input(i)) return fallback;
  return value(i).to_int64_vector();
}

void InferenceContext::fail(const std::string &message) const {
  throw TesselException("node '" + node.name + "' (" + node.op_type + "): " + message);
}

void OpRegistry::add(OpSchema schema) { schemas_.push_back(std::move(schema)); }

OpSchema with_output_dtype(OpSchema schema, std::function<DType(const InferenceContext &, size_t output)> rule) {
  schema.output_dtype = std::move(rule);
  return schema;
}

std::function<DType(const InferenceContext &, size_t)> always_dtype(DType dtype) {
  return [dtype](const InferenceContext &, size_t) { return dtype; };
}

const OpSchema *OpRegistry::find(const std::string &op_type) const {
  for (const OpSchema &s : schemas_)
    if (s.op_type == op_type) return &s;
  return nullptr;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> n;
  for (const OpSchema &s : schemas_) n.push_back(s.op_type);
  std::sort(n.begin(), n.end());
  return n;
}

static const OpRegistry &registry() {
  static const OpRegistry instance = [] {
    OpRegistry r;
    register_elementwise_ops(r);
    register_nn_ops(r);
    register_pool_norm_ops(r);
    register_reduction_ops(r);
    register_shape_ops(r);
    register_index_ops(r);
    register_misc_ops(r);
    register_winograd_ops(r);
    register_recurrent_ops(r);
    register_quantization_ops(r);
    return r;
  }();
  return instance;
}

const OpSchema *find_op_schema(const std::string &op_type) { return registry().find(op_type); }
std::vector<std::string> supported_op_types() { return registry().names(); }

Shape broadcast_shapes(const InferenceContext &ctx, const std::vector<Shape> &shapes) {
  size_t rank = 0;
  for (const Shape &s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape &s : shapes) {
    const size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[offset + i];
      const int64_t d = s[i];
      if (d == 1) continue;
      if (o == 1) o = d;
      else if (d == kUnknownDim) continue;
      else if (o == kUnknownDim) o = d;
      else if (o != d) {
        std::string list;
        for (const Shape &x : shapes) list += (list.empty() ? "" : " and ") + shape_to_string(x);
        ctx.fail("shapes " + list + " cannot be broadcast together");
      }
    }
  }
  return out;
}

int64_t normalize_axis(const InferenceContext &ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace tessel
