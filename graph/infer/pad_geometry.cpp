#include "graph/infer/pad_geometry.h"

#include <string>

#include "graph/ir/axis_list.h"
#include "graph/ir/int_list_text.h"

namespace tessel {

std::vector<int64_t> pads_from_attributes(const Attributes &attrs) {
  return attrs.has("pads") ? attrs.get_ints("pads") : attrs.get_ints("paddings");
}

Result<std::vector<int64_t>> full_pads(const std::vector<int64_t> &pads, const std::optional<std::vector<int64_t>> &axes,
                                       int64_t rank) {
  std::vector<int64_t> padded_axes;
  if (axes) {
    Result<std::vector<int64_t>> normalized = normalize_axis_list(*axes, rank);
    if (!normalized) return normalized.error();
    padded_axes = std::move(normalized).value();
  } else {
    for (int64_t d = 0; d < rank; ++d) padded_axes.push_back(d);
  }
  const size_t n = padded_axes.size();
  if (pads.size() != 2 * n)
    return make_error(ErrorKind::InvalidInput,
                      "pads " + ints_to_string(pads) + " has " + std::to_string(pads.size()) + " entries, expected " +
                      std::to_string(2 * n));
  std::vector<int64_t> full(2 * rank, 0);
  for (size_t i = 0; i < n; ++i) {
    full[padded_axes[i]] = pads[i];
    full[rank + padded_axes[i]] = pads[n + i];
  }
  return full;
}

}  // namespace tessel
