// Inference for Einsum.
#include <algorithm>
#include <map>

#include "base/result.h"
#include "graph/infer/einsum.h"
#include "graph/ir/op_registry.h"

namespace tessel {

namespace {

std::vector<TensorType> infer_einsum(const InferenceContext &ctx) {
  const std::string equation = ctx.attrs().get_string("equation", "");
  if (equation.empty()) ctx.fail("attribute 'equation' is missing");
  std::vector<Shape> shapes;
  DType dtype = DType::Undefined;
  for (size_t i = 0; i < ctx.input_types.size(); ++i) {
    ctx.rank(i);  // unknown rank: nothing to infer yet
    if (i == 0) dtype = ctx.input(0).dtype;
    else if (ctx.input(i).dtype != dtype)
      ctx.fail("inputs have different types " + dtype_name(dtype) + " and " + dtype_name(ctx.input(i).dtype));
    shapes.push_back(ctx.input(i).shape);
  }
  if (shapes.empty()) ctx.fail("needs at least one input");
  if (!dtype_is_float(dtype) && !dtype_is_integer(dtype)) ctx.fail("unsupported input type " + dtype_name(dtype));
  std::vector<int64_t> extents;
  std::vector<std::vector<int>> labels;
  try {
    labels = parse_einsum_equation(equation, shapes, extents);
  } catch (const TesselException &e) {
    ctx.fail(e.what());
  }
  Shape out;
  for (int label : labels.back()) out.push_back(extents[label]);
  return {make_type(dtype, out)};
}

}  // namespace

void register_misc_ops(OpRegistry &r) {
  r.add({"Einsum", infer_einsum, {}, OpPattern::Opaque});
  // Ops whose output length only the values tell: the rank and dtype are known, a run
  // gives the rest (host/host_detection_ops.cpp).
  r.add(with_output_dtype({"NonZero", [](const InferenceContext &ctx) {
                             return std::vector<TensorType>{TensorType{DType::Int64, {ctx.rank(0), kUnknownDim}, true}};
                           }, {}, OpPattern::Opaque},
                          always_dtype(DType::Int64)));
  r.add(with_output_dtype({"NonMaxSuppression", [](const InferenceContext &ctx) {
                             if (ctx.rank(0) != 3 || ctx.rank(1) != 3)
                               ctx.fail("boxes and scores must have rank 3");
                             return std::vector<TensorType>{TensorType{DType::Int64, {kUnknownDim, 3}, true}};
                           }, {}, OpPattern::Opaque},
                          always_dtype(DType::Int64)));
  r.add(with_output_dtype({"Unique", [](const InferenceContext &ctx) {
                             const TensorType &x = ctx.input(0);
                             Shape y = {kUnknownDim};
                             if (ctx.attrs().has("axis")) {
                               y = x.shape;
                               y[normalize_axis(ctx, ctx.attrs().get_int("axis"), ctx.rank(0))] = kUnknownDim;
                             }
                             std::vector<TensorType> out = {TensorType{x.dtype, y, true}};
                             for (int i = 0; i < 3; ++i) out.push_back(TensorType{DType::Int64, {kUnknownDim}, true});
                             return out;
                           }, {}, OpPattern::Opaque},
                          [](const InferenceContext &ctx, size_t i) { return i == 0 ? ctx.input(0).dtype : DType::Int64; }));
  r.add({"ReverseSequence", [](const InferenceContext &ctx) {
           const int rank = ctx.rank(0);
           for (const char *name : {"batch_axis", "time_axis"}) {
             const int64_t axis = ctx.attrs().get_int(name, name[0] == 'b' ? 1 : 0);
             if (axis < 0 || axis >= rank || rank < 2) ctx.fail(std::string(name) + " is outside the input's rank");
           }
           return std::vector<TensorType>{ctx.input(0)};
         }, {}, OpPattern::Opaque});
  r.add({"Det", [](const InferenceContext &ctx) {
           const Shape &x = ctx.input(0).shape;
           if (ctx.rank(0) < 2 || (x.back() != kUnknownDim && x[x.size() - 2] != kUnknownDim && x.back() != x[x.size() - 2]))
             ctx.fail("X must end in square matrices, got " + ctx.input(0).to_string());
           return std::vector<TensorType>{make_type(ctx.input(0).dtype, Shape(x.begin(), x.end() - 2))};
         }, {}, OpPattern::Opaque});
  r.add({"DFT", [](const InferenceContext &ctx) {
           const int rank = ctx.rank(0);
           Shape shape = ctx.input(0).shape;
           int64_t axis = ctx.attrs().get_int("axis", 1);
           if (axis < 0) axis += rank;
           if (axis < 0 || axis >= rank - 1) ctx.fail("axis must name a signal axis, not the last");
           int64_t length = ctx.has_input(1) ? ctx.ints_value(1).at(0) : shape[axis];
           if (ctx.attrs().get_int("onesided", 0) != 0 && length != kUnknownDim) length = length / 2 + 1;
           shape[axis] = length;
           shape.back() = 2;
           return std::vector<TensorType>{make_type(ctx.input(0).dtype, shape)};
         }, {1}, OpPattern::Opaque});
  r.add(with_output_dtype({"MelWeightMatrix", [](const InferenceContext &ctx) {
                             const int64_t mel_bins = ctx.ints_value(0).at(0), dft_length = ctx.ints_value(1).at(0);
                             if (mel_bins < 1 || dft_length < 1 || dft_length > (int64_t{1} << 24) || mel_bins > (int64_t{1} << 16))
                               ctx.fail("num_mel_bins and dft_length must be positive (and not absurd)");
                             const DType dtype = static_cast<DType>(ctx.attrs().get_int("output_datatype", 1));
                             if (!dtype_is_float(dtype)) ctx.fail("output_datatype must be a float type");
                             return std::vector<TensorType>{make_type(dtype, {dft_length / 2 + 1, mel_bins})};
                           }, {0, 1}, OpPattern::Opaque},
                          [](const InferenceContext &ctx, size_t) {
                            return static_cast<DType>(ctx.attrs().get_int("output_datatype", 1));
                          }));
  // Output positions come from the attributes alone: max(ngram_indexes) + 1 per row.
  r.add(with_output_dtype({"TfIdfVectorizer", [](const InferenceContext &ctx) {
                             const int rank = ctx.rank(0);
                             if (rank != 1 && rank != 2) ctx.fail("the input must be [C] or [N, C]");
                             const auto positions = ctx.attrs().get_ints("ngram_indexes", {});
                             int64_t size = 0;
                             for (int64_t p : positions) size = std::max(size, p + 1);
                             if (size == 0 || size > (int64_t{1} << 24)) ctx.fail("ngram_indexes must give 1 to 2^24 output positions");
                             Shape out = {size};
                             if (rank == 2) out.insert(out.begin(), ctx.input(0).shape[0]);
                             return std::vector<TensorType>{make_type(DType::Float32, out)};
                           }, {}, OpPattern::Opaque},
                          always_dtype(DType::Float32)));
  r.add({"STFT", [](const InferenceContext &ctx) {
           if (ctx.rank(0) != 3) ctx.fail("signal must be [batch, length, 1 or 2]");
           const Shape &signal = ctx.input(0).shape;
           const int64_t step = ctx.ints_value(1).at(0);
           const int64_t frame_length = ctx.has_input(2) ? ctx.input(2).shape.at(0) : ctx.ints_value(3).at(0);
           if (step < 1 || frame_length < 1 || frame_length > signal[1])
             ctx.fail("frame_step and frame_length must be positive and the frame no longer than the signal");
           const int64_t frames = 1 + (signal[1] - frame_length) / step;
           const int64_t bins = ctx.attrs().get_int("onesided", 1) != 0 ? frame_length / 2 + 1 : frame_length;
           return std::vector<TensorType>{make_type(ctx.input(0).dtype, {signal[0], frames, bins, 2})};
         }, {1, 3}, OpPattern::Opaque});
  r.add({"MaxUnpool", [](const InferenceContext &ctx) {
           const Shape &x = ctx.input(0).shape;
           const size_t spatial = x.size() - 2;
           Shape out = {x[0], x[1]};
           if (ctx.has_input(2)) return std::vector<TensorType>{make_type(ctx.input(0).dtype, ctx.ints_value(2))};
           const auto kernel = ctx.attrs().get_ints("kernel_shape");
           const auto strides = ctx.attrs().get_ints("strides", std::vector<int64_t>(spatial, 1));
           const auto pads = ctx.attrs().get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
           if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial)
             ctx.fail("kernel_shape, strides and pads must match the spatial rank");
           for (size_t d = 0; d < spatial; ++d)
             out.push_back((x[2 + d] - 1) * strides[d] - pads[d] - pads[spatial + d] + kernel[d]);
           return std::vector<TensorType>{make_type(ctx.input(0).dtype, out)};
         }, {2}, OpPattern::Opaque});
  r.add({"GridSample", [](const InferenceContext &ctx) {
           if (ctx.rank(0) != 4 || ctx.rank(1) != 4)
             ctx.fail("X and grid must have rank 4 (2-D sampling), got " + ctx.input(0).to_string() + " and " +
                      ctx.input(1).to_string());
           const Shape &x = ctx.input(0).shape, &grid = ctx.input(1).shape;
           return std::vector<TensorType>{make_type(ctx.input(0).dtype, {x[0], x[1], grid[1], grid[2]})};
         }, {}, OpPattern::Opaque});
  r.add({"RoiAlign", [](const InferenceContext &ctx) {
           if (ctx.rank(0) != 4) ctx.fail("X must have rank 4, got " + ctx.input(0).to_string());
           if (ctx.rank(1) != 2) ctx.fail("rois must have rank 2, got " + ctx.input(1).to_string());
           const int64_t height = ctx.attrs().get_int("output_height", 1), width = ctx.attrs().get_int("output_width", 1);
           if (height < 1 || width < 1) ctx.fail("output_height and output_width must be positive");
           const std::string mode = ctx.attrs().get_string("mode", "avg");
           if (mode != "avg" && mode != "max") ctx.fail("mode '" + mode + "' is not avg or max");
           return std::vector<TensorType>{
               make_type(ctx.input(0).dtype, {ctx.input(1).shape[0], ctx.input(0).shape[1], height, width})};
         }, {}, OpPattern::Opaque});
  r.add({"Compress", [](const InferenceContext &ctx) {
           if (ctx.input(1).dtype != DType::Bool) ctx.fail("condition must be bool");
           if (!ctx.attrs().has("axis")) return std::vector<TensorType>{TensorType{ctx.input(0).dtype, {kUnknownDim}, true}};
           Shape shape = ctx.input(0).shape;
           const int64_t axis = normalize_axis(ctx, ctx.attrs().get_int("axis"), ctx.rank(0));
           shape[axis] = kUnknownDim;
           return std::vector<TensorType>{TensorType{ctx.input(0).dtype, shape, true}};
         }, {}, OpPattern::Opaque});
}

}  // namespace tessel
