#pragma once
// Feeding a model: binding named files or tensors to graph inputs, and seeded random inputs.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/result.h"

namespace tessel {

/// A tensor of the given type filled from a seeded generator: floats uniform in [-1, 1),
/// integers in [0, 8), bools half true. Never all zeros.
Tensor random_tensor(const TensorType &type, uint64_t seed);

/// The graph's inputs in order from (name, tensor) pairs; an empty name takes the next
/// unnamed position. Errors name a missing, unknown or repeated input.
Result<std::vector<Tensor>> bind_inputs(const Graph &graph, const std::vector<std::pair<std::string, Tensor>> &given);

/// Random inputs for every graph input; unknown dimensions become 1 (listed in `notes`).
Result<std::vector<Tensor>> random_inputs(const Graph &graph, uint64_t seed, std::vector<std::string> *notes = nullptr);

}  // namespace tessel
