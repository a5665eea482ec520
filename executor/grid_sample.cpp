#include "executor/grid_sample.h"

#include <algorithm>
#include <cmath>

namespace tessel {
namespace {

enum class Mode { Bilinear, Nearest, Bicubic };
enum class Padding { Zeros, Border, Reflection };

/// Folds x into [lo, hi] by reflecting at the ends, as often as it takes.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double d = lo - x;
    const int64_t n = static_cast<int64_t>(d / range);
    const double r = d - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double d = x - hi;
    const int64_t n = static_cast<int64_t>(d / range);
    const double r = d - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

/// One [H, W] map of X and how it is read outside its bounds.
struct Plane {
  const Tensor &x;
  int64_t offset, height, width;
  Padding padding;
  double lo_x, lo_y, hi_x, hi_y;  // the sampling area: pixel centres or pixel edges

  double at(int64_t row, int64_t col) const {
    if (padding == Padding::Zeros) {
      if (row < 0 || row >= height || col < 0 || col >= width) return 0;
    } else if (padding == Padding::Border) {
      row = std::clamp<int64_t>(row, 0, height - 1);
      col = std::clamp<int64_t>(col, 0, width - 1);
    } else {
      col = static_cast<int64_t>(reflect(static_cast<double>(col), lo_x, hi_x));
      row = static_cast<int64_t>(reflect(static_cast<double>(row), lo_y, hi_y));
    }
    return x.element_as_double(offset + row * width + col);
  }
};

/// Keys' cubic convolution weights (A = -0.75) of the four taps around a point at `t` in [0, 1).
void cubic_weights(double t, double w[4]) {
  const double a = -0.75;
  t = std::fabs(t);
  w[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  w[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

double sample(const Plane &p, Mode mode, double x, double y) {
  if (mode == Mode::Nearest)
    return p.at(static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)));
  if (mode == Mode::Bilinear) {
    const int64_t x1 = static_cast<int64_t>(std::floor(x)), y1 = static_cast<int64_t>(std::floor(y));
    const double dx = x - static_cast<double>(x1), dy = y - static_cast<double>(y1);
    return (1 - dy) * ((1 - dx) * p.at(y1, x1) + dx * p.at(y1, x1 + 1)) +
           dy * ((1 - dx) * p.at(y1 + 1, x1) + dx * p.at(y1 + 1, x1 + 1));
  }
  const int64_t x0 = static_cast<int64_t>(std::floor(x)) - 1, y0 = static_cast<int64_t>(std::floor(y)) - 1;
  double wx[4], wy[4];
  cubic_weights(x - static_cast<double>(x0) - 1, wx);
  cubic_weights(y - static_cast<double>(y0) - 1, wy);
  double value = 0;
  for (int i = 0; i < 4; ++i) {
    double row = 0;
    for (int j = 0; j < 4; ++j) row += wx[j] * p.at(y0 + i, x0 + j);
    value += wy[i] * row;
  }
  return value;
}

}  // namespace

Result<Tensor> run_grid_sample(const HostOpContext &ctx, const TensorType &type) {
  const Tensor &x = *ctx.inputs.at(0), &grid = *ctx.inputs.at(1);
  const Attributes &a = ctx.node.attributes;
  const bool align_corners = a.get_int("align_corners", 0) != 0;
  const std::string mode_name = a.get_string("mode", "bilinear"), padding_name = a.get_string("padding_mode", "zeros");
  const Mode mode = mode_name == "nearest" ? Mode::Nearest : mode_name == "bicubic" ? Mode::Bicubic : Mode::Bilinear;
  const Padding padding = padding_name == "border"       ? Padding::Border
                          : padding_name == "reflection" ? Padding::Reflection
                                                         : Padding::Zeros;
  if (x.rank() != 4 || grid.rank() != 4 || grid.shape()[3] != 2 || grid.shape()[0] != x.shape()[0])
    return make_error(ErrorKind::InvalidInput,
                      "X must be [N, C, H, W] and grid [N, H_out, W_out, 2]; got " + shape_to_string(x.shape()) +
                      " and " + shape_to_string(grid.shape()));
  const int64_t batch = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
  const int64_t out_h = grid.shape()[1], out_w = grid.shape()[2];
  // With align_corners the extreme grid values are the corner pixels' centres, else their edges.
  const double lo_x = align_corners ? 0 : -0.5, lo_y = lo_x;
  const double hi_x = align_corners ? static_cast<double>(width - 1) : static_cast<double>(width) - 0.5;
  const double hi_y = align_corners ? static_cast<double>(height - 1) : static_cast<double>(height) - 0.5;
  auto denormalize = [&](double g, int64_t size) {
    return align_corners ? (g + 1) / 2 * static_cast<double>(size - 1) : ((g + 1) * static_cast<double>(size) - 1) / 2;
  };
  Tensor out(type.dtype, type.shape);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const Plane plane{x, (n * channels + c) * height * width, height, width, padding, lo_x, lo_y, hi_x, hi_y};
      for (int64_t i = 0; i < out_h; ++i)
        for (int64_t j = 0; j < out_w; ++j) {
          const int64_t g = ((n * out_h + i) * out_w + j) * 2;
          double px = denormalize(grid.element_as_double(g), width);
          double py = denormalize(grid.element_as_double(g + 1), height);
          if (mode == Mode::Nearest) px = std::nearbyint(px), py = std::nearbyint(py);
          // A point outside the sampling area moves onto it first, except with zero padding.
          if (px < lo_x || px > hi_x || py < lo_y || py > hi_y) {
            if (padding == Padding::Border) {
              px = std::clamp(px, 0.0, static_cast<double>(width - 1));
              py = std::clamp(py, 0.0, static_cast<double>(height - 1));
            } else if (padding == Padding::Reflection) {
              px = reflect(px, lo_x, hi_x);
              py = reflect(py, lo_y, hi_y);
            }
          }
          out.set_element_from_double(((n * channels + c) * out_h + i) * out_w + j, sample(plane, mode, px, py));
        }
    }
  return out;
}

}  // namespace tessel
