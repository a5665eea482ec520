// Compute rules for Resize and Upsample. Shapes and scales are static per kernel, so the
// source positions and interpolation weights of every output coordinate are worked out on
// the host (in double, following the ONNX reference implementation step by step) and baked
// into the kernel as small per-axis tables; the kernel then only gathers and blends.
#include <Halide.h>

#include <cmath>

#include "compute/op_compute.h"

namespace tessel {
namespace {

using Halide::Expr;

struct ResizeSettings {
  std::string mode = "nearest";  // nearest | linear | cubic
  std::string transform = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;
};

/// For one axis: which source elements each output coordinate reads, and their weights.
struct AxisTable {
  int taps = 1;
  std::vector<int32_t> index;   // [out][taps], already in [0, in)
  std::vector<double> weight;   // [out][taps]; unused for nearest
  std::vector<uint8_t> outside; // [out]: 1 where tf_crop_and_resize extrapolates
  bool identity = false;        // output coordinate x reads exactly input x
  bool any_outside = false;
};

/// Where output coordinate x lies in the input, per coordinate_transformation_mode.
/// out_extent is scale * in as the reference computes it (not rounded).
double source_coordinate(const ResizeSettings &s, double x, int64_t in, int64_t out, double scale,
                         double out_extent, double roi_start, double roi_end) {
  const std::string &t = s.transform;
  if (t == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (t == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (t == "align_corners") return out_extent == 1 ? 0.0 : x * (in - 1) / (out_extent - 1);
  if (t == "asymmetric") return x / scale;
  if (t == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  // tf_crop_and_resize
  if (out > 1) return roi_start * (in - 1) + x * (roi_end - roi_start) * (in - 1) / (out - 1);
  return 0.5 * (roi_start + roi_end) * (in - 1);
}

/// The four cubic convolution weights for a sample `ratio` in (0, 1] past the second tap.
std::vector<double> cubic_weights(double ratio, double a) {
  auto near_w = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };          // |d| <= 1
  auto far_w = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };     // 1 < |d| < 2
  return {far_w(ratio + 1), near_w(ratio), near_w(1 - ratio), far_w(2 - ratio)};
}

int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); }

AxisTable build_axis_table(const ResizeSettings &s, int64_t in, int64_t out, double scale, double out_extent,
                           double roi_start, double roi_end) {
  AxisTable table;
  const bool nearest = s.mode == "nearest";
  const int n = nearest ? 1 : (s.mode == "cubic" ? 4 : 2);
  table.taps = n;
  table.index.resize(out * n);
  table.weight.resize(out * n, 0.0);
  table.outside.resize(out, 0);
  table.identity = in == out;
  for (int64_t x = 0; x < out; ++x) {
    const double src = source_coordinate(s, static_cast<double>(x), in, out, scale, out_extent, roi_start, roi_end);
    if (s.transform == "tf_crop_and_resize" && (src < 0 || src > in - 1)) {
      table.outside[x] = 1;
      table.any_outside = true;
      table.identity = false;
    }
    const double lower = std::floor(src);
    const bool integral = src == lower;
    if (nearest) {
      int64_t pick = static_cast<int64_t>(lower);
      const double frac = src - lower;
      if (!integral) {
        const bool up = s.nearest_mode == "ceil" || (s.nearest_mode == "round_prefer_ceil" && frac >= 0.5) ||
                        (s.nearest_mode == "round_prefer_floor" && frac > 0.5);
        if (up) ++pick;
      }
      pick = clamp64(pick, 0, in - 1);
      table.index[x] = static_cast<int32_t>(pick);
      table.weight[x] = 1;
      table.identity = table.identity && pick == x;
      continue;
    }
    // The reference takes the n nearest samples of the edge-padded axis (ties go to the
    // lower index) with the ratio in (0, 1]: an integral position uses ratio 1.
    const double ratio = integral ? 1.0 : src - lower;
    const int64_t pad = n / 2;
    int64_t start = static_cast<int64_t>(lower) - (integral ? n / 2 : n / 2 - 1);
    start = clamp64(start, -pad, in + pad - n);
    std::vector<double> w = n == 2 ? std::vector<double>{1 - ratio, ratio} : cubic_weights(ratio, s.cubic_a);
    if (s.exclude_outside) {
      double sum = 0;
      for (int k = 0; k < n; ++k) {
        if (start + k < 0 || start + k >= in) w[k] = 0;
        sum += w[k];
      }
      if (sum != 0)
        for (double &v : w) v /= sum;
    }
    for (int k = 0; k < n; ++k) {
      const int64_t src_index = clamp64(start + k, 0, in - 1);
      table.index[x * n + k] = static_cast<int32_t>(src_index);
      table.weight[x * n + k] = w[k];
      // Identity needs all the weight on input x.
      if (w[k] != 0 && (src_index != x || w[k] != 1)) table.identity = false;
    }
  }
  return table;
}

std::string attr_mode(const ComputeContext &ctx) {
  std::string mode = ctx.attrs().get_string("mode", "nearest");
  return mode == "bilinear" ? "linear" : mode;
}

/// Blends the input over all tap combinations of the non-identity axes.
TensorFunc resample(const ComputeContext &ctx, const ResizeSettings &s, const std::vector<double> &scales,
                    const std::vector<double> &roi) {
  const TensorFunc &x = ctx.input(0);
  const TensorType &out_type = ctx.output_type(0);
  const int rank = x.rank();
  std::vector<AxisTable> tables;
  for (int d = 0; d < rank; ++d) {
    const int64_t in = x.shape[d], out = out_type.shape[d];
    const double scale = scales.empty() ? static_cast<double>(out) / static_cast<double>(in) : scales[d];
    const double out_extent = scales.empty() ? static_cast<double>(out) : scale * static_cast<double>(in);
    const double roi_start = roi.empty() ? 0.0 : roi[d], roi_end = roi.empty() ? 1.0 : roi[d + rank];
    tables.push_back(build_axis_table(s, in, out, scale, out_extent, roi_start, roi_end));
  }
  const bool nearest = s.mode == "nearest";
  const Halide::Type weight_type = math_type(dtype_is_float(x.dtype) ? x.dtype : DType::Float32);

  // Bake each non-identity axis as Halide buffers [out][taps] (Halide order: taps innermost).
  std::vector<Halide::Buffer<int32_t>> index_buffers(rank);
  std::vector<Halide::Buffer<double>> weight_buffers(rank);
  std::vector<Halide::Buffer<uint8_t>> outside_buffers(rank);
  for (int d = 0; d < rank; ++d) {
    const AxisTable &t = tables[d];
    if (t.identity) continue;
    const int out = static_cast<int>(out_type.shape[d]);
    index_buffers[d] = Halide::Buffer<int32_t>(t.taps, out);
    weight_buffers[d] = Halide::Buffer<double>(t.taps, out);
    for (int o = 0; o < out; ++o)
      for (int k = 0; k < t.taps; ++k) {
        index_buffers[d](k, o) = t.index[o * t.taps + k];
        weight_buffers[d](k, o) = t.weight[o * t.taps + k];
      }
    if (t.any_outside) {
      outside_buffers[d] = Halide::Buffer<uint8_t>(out);
      for (int o = 0; o < out; ++o) outside_buffers[d](o) = t.outside[o];
    }
  }

  return define_tensor(ctx.node.name, out_type.dtype, out_type.shape, [&](const std::vector<Expr> &o) {
    std::vector<int> tap(rank, 0);  // current tap per axis, odometer style
    Expr sum;
    while (true) {
      std::vector<Expr> at(rank);
      Expr weight;
      for (int d = 0; d < rank; ++d) {
        if (tables[d].identity) { at[d] = o[d]; continue; }
        // Clamped again so Halide's bounds inference can see the read stays inside X.
        at[d] = clamp_index(index_buffers[d](Expr(tap[d]), o[d]), x.shape[d]);
        if (nearest) continue;
        Expr w = Halide::cast(weight_type, weight_buffers[d](Expr(tap[d]), o[d]));
        weight = weight.defined() ? weight * w : w;
      }
      Expr value = x.at(at);
      if (!nearest) {
        value = Halide::cast(weight_type, value);
        if (weight.defined()) value = value * weight;
      }
      sum = sum.defined() ? sum + value : value;
      int d = rank - 1;  // advance the odometer over non-identity axes
      for (; d >= 0; --d) {
        if (tables[d].identity || nearest) continue;
        if (++tap[d] < tables[d].taps) break;
        tap[d] = 0;
      }
      if (d < 0) break;
    }
    Expr outside;
    for (int d = 0; d < rank; ++d) {
      if (!outside_buffers[d].defined()) continue;
      Expr here = outside_buffers[d](o[d]) != 0;
      outside = outside.defined() ? (outside || here) : here;
    }
    if (outside.defined()) sum = Halide::select(outside, Halide::cast(sum.type(), Expr(s.extrapolation_value)), sum);
    // Blended integers round to nearest; cubic can overshoot, so saturate to the type.
    if (!nearest && dtype_is_integer(x.dtype))
      sum = Halide::saturating_cast(halide_type(x.dtype), Halide::round(sum));
    return sum;
  });
}

std::vector<double> doubles_of(const Tensor *t) {
  std::vector<double> out;
  if (!t) return out;
  for (int64_t k = 0; k < t->numel(); ++k) out.push_back(t->element_as_double(k));
  return out;
}

std::vector<TensorFunc> resize(const ComputeContext &ctx) {
  ResizeSettings s;
  s.mode = attr_mode(ctx);
  std::vector<double> scales, roi;
  if (ctx.opset < 11) {
    // Resize-10 samples like Upsample: asymmetric coordinates, nearest rounds down.
    s.transform = "asymmetric";
    s.nearest_mode = "floor";
    scales = doubles_of(ctx.has_input(1) ? &ctx.value(1) : nullptr);
  } else {
    s.transform = ctx.attrs().get_string("coordinate_transformation_mode", "half_pixel");
    s.nearest_mode = ctx.attrs().get_string("nearest_mode", "round_prefer_floor");
    s.cubic_a = ctx.attrs().get_float("cubic_coeff_a", -0.75f);
    s.exclude_outside = ctx.attrs().get_int("exclude_outside", 0) != 0;
    s.extrapolation_value = ctx.attrs().get_float("extrapolation_value", 0.0f);
    const bool has_sizes = ctx.has_input(3) && ctx.value(3).numel() > 0;
    if (!has_sizes) scales = doubles_of(ctx.has_input(2) ? &ctx.value(2) : nullptr);
    if (s.transform == "tf_crop_and_resize") roi = doubles_of(ctx.has_input(1) ? &ctx.value(1) : nullptr);
  }
  if (!scales.empty() && scales.size() != ctx.input(0).shape.size()) ctx.fail("scales do not match the rank of X");
  if (!roi.empty() && roi.size() != 2 * ctx.input(0).shape.size()) ctx.fail("roi does not match the rank of X");
  return {resample(ctx, s, scales, roi)};
}

std::vector<TensorFunc> upsample(const ComputeContext &ctx) {
  ResizeSettings s;
  s.mode = attr_mode(ctx);
  s.transform = "asymmetric";
  s.nearest_mode = "floor";
  std::vector<double> scales;
  if (ctx.opset < 9) {
    for (float v : ctx.attrs().get_floats("scales")) scales.push_back(v);
  } else {
    scales = doubles_of(&ctx.value(1));
  }
  if (scales.size() != ctx.input(0).shape.size()) ctx.fail("scales do not match the rank of X");
  return {resample(ctx, s, scales, {})};
}

}  // namespace

void register_resize_compute(ComputeRegistry &r) {
  r.add("Resize", resize);
  r.add("Upsample", upsample);
}

}  // namespace tessel
