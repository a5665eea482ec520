#include "executor/host_ops.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "executor/graph_executor.h"
#include "executor/grid_sample.h"
#include "executor/roi_align.h"
#include "graph/fusion/fuse.h"
#include "graph/infer/shape_inference.h"

namespace tessel {

bool is_host_op(const std::string &op_type) { return runs_on_host(op_type); }

/// Values and indices of the k largest (or smallest) elements along one axis; ties go to
/// the lower index, as the ONNX reference does. Sorting has no good Halide form.
static Result<std::vector<Tensor>> run_topk(const HostOpContext &ctx, const std::vector<TensorType> &types) {
  const Tensor &x = *ctx.inputs[0];
  const int64_t rank = x.rank();
  int64_t axis = ctx.node.attributes.get_int("axis", -1);
  if (axis < 0) axis += rank;
  const bool largest = ctx.node.attributes.get_int("largest", 1) != 0;
  const int64_t k = types[0].shape[axis];
  Tensor values(types[0].dtype, types[0].shape), indices(DType::Int64, types[1].shape);
  const int64_t n = x.shape()[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape()[d];
  std::vector<int64_t> order(n);
  std::vector<double> row(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) row[j] = x.element_as_double((o * n + j) * inner + i);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return largest ? row[a] > row[b] : row[a] < row[b];
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t out = (o * k + j) * inner + i;
        if (x.dtype() == DType::Int64) values.data_as<int64_t>()[out] = x.data_as<int64_t>()[(o * n + order[j]) * inner + i];
        else values.set_element_from_double(out, row[order[j]]);
        indices.data_as<int64_t>()[out] = order[j];
      }
    }
  }
  return std::vector<Tensor>{values, indices};
}

Result<std::vector<Tensor>> run_host_op(const HostOpContext &ctx, const std::vector<TensorType> &types) {
  const std::string &op = ctx.node.op_type;
  try {
    if (op == "Constant") {
      auto value = constant_node_value(ctx.node);
      if (!value.ok()) return value.error();
      return std::vector<Tensor>{value.value()};
    }
    if (op == "Shape") return std::vector<Tensor>{shape_node_value(ctx.node, ctx.inputs[0]->shape())};
    if (op == "Size") return std::vector<Tensor>{Tensor::scalar(DType::Int64, ctx.inputs[0]->numel())};
    if (op == "Identity") return std::vector<Tensor>{*ctx.inputs[0]};
    if (op == "Dropout") {
      // Inference: the output is the input; the optional mask is all true.
      Tensor mask(DType::Bool, ctx.inputs[0]->shape());
      if (mask.bytes()) std::memset(mask.data(), 1, mask.bytes());
      return std::vector<Tensor>{*ctx.inputs[0], mask};
    }
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze")
      return std::vector<Tensor>{ctx.inputs[0]->reshaped(types[0].shape)};  // zero-copy view
    if (op == "TopK") return run_topk(ctx, types);
    if (op == "GridSample") {
      auto sampled = run_grid_sample(ctx, types[0]);
      if (!sampled.ok()) return make_error("node '" + ctx.node.name + "' (GridSample): " + sampled.error().message);
      return std::vector<Tensor>{sampled.value()};
    }
    if (op == "RoiAlign") {
      auto pooled = run_roi_align(ctx, types[0]);
      if (!pooled.ok()) return make_error("node '" + ctx.node.name + "' (RoiAlign): " + pooled.error().message);
      return std::vector<Tensor>{pooled.value()};
    }
  } catch (const std::exception &e) {
    return make_error("node '" + ctx.node.name + "' (" + op + "): " + e.what());
  }
  return make_error("node '" + ctx.node.name + "': " + op + " is not a host op");
}

}  // namespace tessel
