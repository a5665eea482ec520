#include "graph/infer/pool_geometry.h"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "graph/ir/int_list_text.h"

namespace tessel {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// The error of a list attribute that does not have one entry per spatial axis (or two).
Error wrong_length(const char *name, const std::vector<int64_t> &values, size_t want) {
  return make_error(ErrorKind::InvalidInput,
                    std::string(name) + " " + ints_to_string(values) + " must have " + std::to_string(want) +
                    " entries");
}

}  // namespace

Result<PoolGeometry> pool_geometry(const Attributes &attrs, const Shape &spatial_in) {
  const size_t n = spatial_in.size();
  PoolGeometry g;
  g.in = spatial_in;
  if (!attrs.has("kernel_shape")) return make_error(ErrorKind::InvalidInput, "attribute kernel_shape is required");
  g.kernel = attrs.get_ints("kernel_shape");
  if (g.kernel.size() != n)
    return make_error(ErrorKind::InvalidInput,
                      "kernel_shape " + ints_to_string(g.kernel) + " has " + std::to_string(g.kernel.size()) +
                      " entries but the input has " + std::to_string(n) + " spatial dimensions");
  g.strides = attrs.get_ints("strides", std::vector<int64_t>(n, 1));
  g.dilations = attrs.get_ints("dilations", std::vector<int64_t>(n, 1));
  const std::vector<int64_t> pads = attrs.get_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (g.strides.size() != n) return wrong_length("strides", g.strides, n);
  if (g.dilations.size() != n) return wrong_length("dilations", g.dilations, n);
  if (pads.size() != 2 * n) return wrong_length("pads", pads, 2 * n);
  // Windows, steps and pads past 2^31 are no real model's, and their sums would overflow.
  constexpr int64_t kLargest = int64_t{1} << 31;
  const std::initializer_list<const std::vector<int64_t> *> lists = {&g.kernel, &g.strides, &g.dilations, &pads};
  for (const std::vector<int64_t> *list : lists)
    for (int64_t v : *list)
      if (v > kLargest)
        return make_error(ErrorKind::Unsupported,
                          "pooling geometry " + ints_to_string(*list) + " has an entry past 2^31");
  for (int64_t d : spatial_in)
    if (d > kLargest)
      return make_error(ErrorKind::Unsupported, "a spatial dimension past 2^31 (" + std::to_string(d) + ")");
  for (size_t i = 0; i < n; ++i) {
    if (g.kernel[i] < 1)
      return make_error(ErrorKind::InvalidInput, "kernel_shape " + ints_to_string(g.kernel) + " must be positive");
    if (g.strides[i] < 1)
      return make_error(ErrorKind::InvalidInput, "strides " + ints_to_string(g.strides) + " must be positive");
    if (g.dilations[i] < 1)
      return make_error(ErrorKind::InvalidInput, "dilations " + ints_to_string(g.dilations) + " must be positive");
    if (pads[i] < 0 || pads[i + n] < 0)
      return make_error(ErrorKind::InvalidInput, "pads " + ints_to_string(pads) + " must not be negative");
  }
  std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad.empty()) auto_pad = "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    return make_error(ErrorKind::InvalidInput,
                      "auto_pad '" + auto_pad + "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER");
  const bool ceil_mode = attrs.get_int("ceil_mode", 0) != 0;

  g.pad_begin.assign(n, 0);
  g.pad_end.assign(n, 0);
  g.out.assign(n, kUnknownDim);
  for (size_t i = 0; i < n; ++i) {
    const int64_t span = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (auto_pad == "NOTSET") {
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[i + n];
    }
    if (spatial_in[i] == kUnknownDim) continue;
    const int64_t in = spatial_in[i];
    int64_t out = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // Pad so that out = ceil(in / stride); the odd pad goes at the end (UPPER) or start.
      out = ceil_div(in, g.strides[i]);
      const int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + span - in);
      const int64_t small = total / 2, large = total - small;
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : large;
      g.pad_end[i] = total - g.pad_begin[i];
    } else {
      const int64_t room = in + g.pad_begin[i] + g.pad_end[i] - span;
      if (room < 0)
        return make_error(ErrorKind::InvalidInput,
                          "the dilated kernel (" + std::to_string(span) + ") is larger than padded spatial dimension " +
                          std::to_string(i) + " (" + std::to_string(in + g.pad_begin[i] + g.pad_end[i]) + ")");
      out = (ceil_mode && auto_pad == "NOTSET" ? ceil_div(room, g.strides[i]) : floor_div(room, g.strides[i])) + 1;
      // A ceil-mode window must start inside the input or its left padding.
      if (ceil_mode && (out - 1) * g.strides[i] >= in + g.pad_begin[i]) --out;
    }
    g.out[i] = out;
  }
  return g;
}

}  // namespace tessel
