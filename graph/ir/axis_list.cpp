#include "graph/ir/axis_list.h"

#include <algorithm>
#include <string>

#include "graph/ir/int_list_text.h"

namespace tessel {

Result<std::vector<int64_t>> normalize_axis_list(std::vector<int64_t> axes, int64_t rank) {
  // Sized for at least one axis: a scalar accepts axis 0, as normalize_axis does.
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 1)), false);
  for (int64_t &a : axes) {
    if (a < -rank || a >= std::max<int64_t>(rank, 1))
      return make_error(ErrorKind::InvalidInput,
                        "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    if (a < 0) a += rank;
    // The message lists the axes normalized so far and the later ones as given.
    if (seen[a])
      return make_error(ErrorKind::InvalidInput,
                        "axis " + std::to_string(a) + " is repeated in " + ints_to_string(axes));
    seen[a] = true;
  }
  return axes;
}

}  // namespace tessel
