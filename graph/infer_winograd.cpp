// Inference for the Winograd convolution's internal transform ops (graph/winograd_conv.h).
#include "graph/op_registry.h"
#include "graph/winograd_conv.h"

namespace tessel {
namespace {

int64_t tiles(int64_t extent) { return (extent + kWinogradTile - 1) / kWinogradTile; }

/// X [N, C, H, W] -> [N, 36, C, ceil(H/4), ceil(W/4)].
std::vector<TensorType> infer_winograd_input(const InferenceContext &ctx) {
  if (ctx.rank(0) != 4) ctx.fail("X must be 4-D, got " + shape_to_string(ctx.input(0).shape));
  const Shape &x = ctx.input(0).shape;
  return {make_type(ctx.input(0).dtype, {x[0], kWinogradPoints, x[1], tiles(x[2]), tiles(x[3])})};
}

/// Products [N, 36, M, TH, TW] (+ bias [M]) -> [N, M, H, W], H and W from output_shape.
std::vector<TensorType> infer_winograd_output(const InferenceContext &ctx) {
  if (ctx.rank(0) != 5) ctx.fail("products must be 5-D, got " + shape_to_string(ctx.input(0).shape));
  const Shape &p = ctx.input(0).shape;
  const std::vector<int64_t> hw = ctx.attrs().get_ints("output_shape");
  if (hw.size() != 2) ctx.fail("output_shape must have 2 entries");
  if (p[1] != kWinogradPoints || p[3] != tiles(hw[0]) || p[4] != tiles(hw[1]))
    ctx.fail("products " + shape_to_string(p) + " do not tile an output of " + std::to_string(hw[0]) + "x" +
             std::to_string(hw[1]));
  if (ctx.has_input(1) && ctx.input(1).shape != Shape{p[2]})
    ctx.fail("bias " + shape_to_string(ctx.input(1).shape) + " must be [" + std::to_string(p[2]) + "]");
  return {make_type(ctx.input(0).dtype, {p[0], p[2], hw[0], hw[1]})};
}

}  // namespace

void register_winograd_ops(OpRegistry &r) {
  // The input transform reads a whole 6x6 window per output element: its own kernel.
  r.add({kWinogradInputOp, infer_winograd_input, {}, OpPattern::Opaque});
  // The output transform takes the conv's elementwise epilogue (bias, Add, Relu) along.
  r.add({kWinogradOutputOp, infer_winograd_output, {}, OpPattern::OutElementwiseFusable});
}

}  // namespace tessel
