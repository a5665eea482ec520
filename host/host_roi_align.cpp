// RoiAlign: each region of interest pooled to a fixed grid by averaging (or taking the
// largest of) bilinear samples, as two-stage detectors (Faster R-CNN) use it. Regions come
// from the model's own proposals, so their count is known only at run time.
#include "host/host_detection_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessel {
namespace {

/// One feature map [H, W] of X, read as doubles.
struct Plane {
  const Tensor &x;
  int64_t offset, height, width;
  double at(int64_t y, int64_t x_) const {
    const int64_t i = offset + y * width + x_;
    return x.dtype() == DType::Float32 ? x.data_as<float>()[i] : x.element_as_double(i);
  }
};

/// The four corners and weights of a bilinear sample, zero weights outside the map (the
/// spec's one-pixel border clamps to the edge).
struct Sample {
  int64_t y_low = 0, y_high = 0, x_low = 0, x_high = 0;
  double w[4] = {0, 0, 0, 0};
};

Sample sample_at(double y, double x, int64_t height, int64_t width) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(height) || x < -1.0 || x > static_cast<double>(width)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  s.y_low = static_cast<int64_t>(y);
  s.x_low = static_cast<int64_t>(x);
  if (s.y_low >= height - 1) s.y_high = s.y_low = height - 1, y = static_cast<double>(s.y_low);
  else s.y_high = s.y_low + 1;
  if (s.x_low >= width - 1) s.x_high = s.x_low = width - 1, x = static_cast<double>(s.x_low);
  else s.x_high = s.x_low + 1;
  const double ly = y - static_cast<double>(s.y_low), lx = x - static_cast<double>(s.x_low);
  const double hy = 1 - ly, hx = 1 - lx;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  return s;
}

}  // namespace

Tensor roi_align(const HostCall &ctx) {
  const TensorType &type = ctx.output_types.at(0);
  const Tensor &x = *ctx.inputs.at(0), &rois = *ctx.inputs.at(1), &batch_indices = *ctx.inputs.at(2);
  const Attributes &a = ctx.node.attributes;
  // Opset 10 had no attribute and shifted by nothing; opset 16 added half_pixel as default.
  const bool half_pixel = a.get_string("coordinate_transformation_mode", ctx.opset >= 16 ? "half_pixel" : "output_half_pixel") == "half_pixel";
  const bool max_mode = a.get_string("mode", "avg") == "max";
  const int64_t sampling_ratio = a.get_int("sampling_ratio", 0);
  const double scale = a.get_float("spatial_scale", 1.0f);
  const int64_t rois_count = type.shape[0], channels = type.shape[1], out_h = type.shape[2], out_w = type.shape[3];
  const int64_t height = x.shape()[2], width = x.shape()[3];
  if (rois.shape()[1] != 4)
    throw TesselException("rois must be [num_rois, 4], got " + shape_to_string(rois.shape()));
  if (batch_indices.numel() != rois_count)
    throw TesselException("batch_indices has " + std::to_string(batch_indices.numel()) + " entries for " +
                          std::to_string(rois_count) + " rois");
  Tensor out(type.dtype, type.shape);
  const bool out_float = type.dtype == DType::Float32;
  std::vector<Sample> samples;
  const double offset = half_pixel ? 0.5 : 0.0;
  for (int64_t r = 0; r < rois_count; ++r) {
    const int64_t batch = batch_indices.element_as_int64(r);
    if (batch < 0 || batch >= x.shape()[0])
      throw TesselException("batch index " + std::to_string(batch) + " is outside X's batch of " + std::to_string(x.shape()[0]));
    const double start_w = rois.element_as_double(r * 4) * scale - offset;
    const double start_h = rois.element_as_double(r * 4 + 1) * scale - offset;
    double roi_w = rois.element_as_double(r * 4 + 2) * scale - offset - start_w;
    double roi_h = rois.element_as_double(r * 4 + 3) * scale - offset - start_h;
    if (!half_pixel) roi_w = std::max(roi_w, 1.0), roi_h = std::max(roi_h, 1.0);
    const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
    const int64_t grid_h = sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::ceil(roi_h / out_h));
    const int64_t grid_w = sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::ceil(roi_w / out_w));
    // A region's samples (ceil(roi / bin) per bin side) grow with its size: a corrupt box
    // must not turn into hours of sampling.
    constexpr int64_t kMaxSamplesPerBin = 1 << 16;
    if (!(grid_h >= 0 && grid_w >= 0 && grid_h <= kMaxSamplesPerBin && grid_w <= kMaxSamplesPerBin &&
          grid_h * grid_w <= kMaxSamplesPerBin))
      throw TesselException("region " + std::to_string(r) + " needs more than " + std::to_string(kMaxSamplesPerBin) +
                            " samples per output bin (is the box sane?)");
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    // Where each bin samples is the same for every channel: find it once per region.
    samples.clear();
    for (int64_t ph = 0; ph < out_h; ++ph)
      for (int64_t pw = 0; pw < out_w; ++pw)
        for (int64_t iy = 0; iy < grid_h; ++iy)
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const double y = start_h + ph * bin_h + (iy + 0.5) * bin_h / static_cast<double>(grid_h);
            const double xx = start_w + pw * bin_w + (ix + 0.5) * bin_w / static_cast<double>(grid_w);
            samples.push_back(sample_at(y, xx, height, width));
          }
    for (int64_t c = 0; c < channels; ++c) {
      const Plane plane{x, (batch * x.shape()[1] + c) * height * width, height, width};
      const Sample *s = samples.data();
      for (int64_t ph = 0; ph < out_h; ++ph)
        for (int64_t pw = 0; pw < out_w; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t g = 0; g < grid_h * grid_w; ++g, ++s) {
            const double v[4] = {plane.at(s->y_low, s->x_low), plane.at(s->y_low, s->x_high),
                                 plane.at(s->y_high, s->x_low), plane.at(s->y_high, s->x_high)};
            if (!max_mode) {
              for (int k = 0; k < 4; ++k) acc += s->w[k] * v[k];
              continue;
            }
            // Max mode takes the largest weighted corner, as ONNX Runtime does.
            for (int k = 0; k < 4; ++k) {
              acc = first ? s->w[k] * v[k] : std::max(acc, s->w[k] * v[k]);
              first = false;
            }
          }
          const int64_t at = ((r * channels + c) * out_h + ph) * out_w + pw;
          if (out_float) out.data_as<float>()[at] = static_cast<float>(max_mode ? acc : acc / count);
          else out.set_element_from_double(at, max_mode ? acc : acc / count);
        }
    }
  }
  return out;
}

}  // namespace tessel
