// Inference for the Winograd convolution's internal transform ops (graph/passes/winograd_conv.h).
#include "graph/ir/op_registry.h"
#include "graph/passes/winograd_conv.h"

namespace tessel {
namespace {

const WinogradTransform &transform_of(const InferenceContext &ctx) {
  const int64_t tile = ctx.attrs().get_int(kWinogradTileAttr, 0);
  const WinogradTransform *t = winograd_transform(tile);
  if (!t) ctx.fail("tile " + std::to_string(tile) + " is not 2 or 4");
  return *t;
}

/// X [N, C, H, W] -> [N, P, C, ceil(H/m), ceil(W/m)].
std::vector<TensorType> infer_winograd_input(const InferenceContext &ctx) {
  const WinogradTransform &t = transform_of(ctx);
  if (ctx.rank(0) != 4) ctx.fail("X must be 4-D, got " + shape_to_string(ctx.input(0).shape));
  const Shape &x = ctx.input(0).shape;
  const int64_t th = winograd_tiles(x[2], t.tile), tw = winograd_tiles(x[3], t.tile);
  return {make_type(ctx.input(0).dtype, {x[0], t.points(), x[1], th, tw})};
}

/// Products [N, P, M, TH, TW] (+ bias [M]) -> [N, M, H, W], H and W from output_shape.
std::vector<TensorType> infer_winograd_output(const InferenceContext &ctx) {
  const WinogradTransform &t = transform_of(ctx);
  if (ctx.rank(0) != 5) ctx.fail("products must be 5-D, got " + shape_to_string(ctx.input(0).shape));
  const Shape &p = ctx.input(0).shape;
  const std::vector<int64_t> hw = ctx.attrs().get_ints("output_shape");
  if (hw.size() != 2) ctx.fail("output_shape must have 2 entries");
  if (p[1] != t.points() || p[3] != winograd_tiles(hw[0], t.tile) || p[4] != winograd_tiles(hw[1], t.tile))
    ctx.fail("products " + shape_to_string(p) + " do not tile an output of " + std::to_string(hw[0]) + "x" +
             std::to_string(hw[1]) + " with F(" + std::to_string(t.tile) + "x" + std::to_string(t.tile) + ", 3x3)");
  if (ctx.has_input(1) && ctx.input(1).shape != Shape{p[2]})
    ctx.fail("bias " + shape_to_string(ctx.input(1).shape) + " must be [" + std::to_string(p[2]) + "]");
  return {make_type(ctx.input(0).dtype, {p[0], p[2], hw[0], hw[1]})};
}

}  // namespace

void register_winograd_ops(OpRegistry &r) {
  // The input transform reads a whole window per output element: its own kernel.
  r.add({kWinogradInputOp, infer_winograd_input, {}, OpPattern::Opaque});
  // The output transform takes the conv's elementwise epilogue (bias, Add, Relu) along.
  r.add({kWinogradOutputOp, infer_winograd_output, {}, OpPattern::OutElementwiseFusable});
}

}  // namespace tessel
