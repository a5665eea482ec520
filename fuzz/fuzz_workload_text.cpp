// A workload text, as a tuning database stores it and `tessel bench --task KEY` rebuilds a
// graph from it: any text gives a graph whose own text is the input, or an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/fusion/workload_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static_cast<void>(tessel::graph_from_workload_text(std::string(reinterpret_cast<const char *>(data), size)));
  return 0;
}
