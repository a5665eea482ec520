#pragma once
// Feeding a model: binding named files or tensors to graph inputs, and seeded random inputs.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"
#include "tensor/random_tensor.h"

namespace tessel {

/// The graph's inputs in order from (name, tensor) pairs; an empty name takes the next
/// unnamed position. Errors name a missing, unknown or repeated input.
Result<std::vector<Tensor>> bind_inputs(const Graph &graph, const std::vector<std::pair<std::string, Tensor>> &given);

/// Random inputs for every graph input; unknown dimensions become 1 (listed in `notes`). An
/// input of more than `max_bytes` is an error, before anything is allocated.
Result<std::vector<Tensor>> random_inputs(const Graph &graph, uint64_t seed, std::vector<std::string> *notes = nullptr,
                                          int64_t max_bytes = std::numeric_limits<int64_t>::max());

}  // namespace tessel
