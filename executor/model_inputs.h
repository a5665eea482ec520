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

/// The graph's inputs from `specs` ("NAME=file.npy", or "file.npy" for the next unnamed
/// input), each refused over `max_bytes` before it is read; with no specs, random_inputs
/// (said in `notes`).
Result<std::vector<Tensor>> model_inputs(const Graph &graph, const std::vector<std::string> &specs, uint64_t seed,
                                         int64_t max_bytes, std::vector<std::string> &notes);

}  // namespace tessel
