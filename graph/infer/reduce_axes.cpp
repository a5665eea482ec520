#include "graph/infer/reduce_axes.h"

#include <string>

namespace tessel {

const std::vector<std::pair<std::string, ReduceKind>> &reduce_op_kinds() {
  static const std::vector<std::pair<std::string, ReduceKind>> kinds = {
      {"ReduceSum", ReduceKind::Sum},       {"ReduceMean", ReduceKind::Mean},
      {"ReduceMax", ReduceKind::Max},       {"ReduceMin", ReduceKind::Min},
      {"ReduceProd", ReduceKind::Prod},     {"ReduceL1", ReduceKind::L1},
      {"ReduceL2", ReduceKind::L2},         {"ReduceLogSum", ReduceKind::LogSum},
      {"ReduceLogSumExp", ReduceKind::LogSumExp}, {"ReduceSumSquare", ReduceKind::SumSquare}};
  return kinds;
}

Result<std::vector<bool>> reduced_axis_mask(const Attributes &attrs, const std::vector<int64_t> &input_axes,
                                            int64_t rank) {
  const std::vector<int64_t> axes = attrs.has("axes") ? attrs.get_ints("axes") : input_axes;
  if (axes.empty()) {
    const bool noop = attrs.get_int("noop_with_empty_axes", 0) != 0;
    return std::vector<bool>(static_cast<size_t>(rank), !noop);
  }
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return make_error(ErrorKind::InvalidInput,
                        "axis " + std::to_string(axis) + " in axes is out of range for rank " + std::to_string(rank));
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (mask[a])
      return make_error(ErrorKind::InvalidInput, "axis " + std::to_string(axis) + " appears more than once in axes");
    mask[a] = true;
  }
  return mask;
}

Shape reduced_shape(const Shape &in, const std::vector<bool> &reduced, bool keepdims) {
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) out.push_back(in[d]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

}  // namespace tessel
