#include "graph/ir/int_list_text.h"

namespace tessel {

std::string ints_to_string(const std::vector<int64_t> &values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

}  // namespace tessel
