#pragma once
// Feeding an artifact from files or seeds, as `tessel run model.tsl` does: the deploy-side
// twin of executor/model_inputs.h, on the Module's declared inputs instead of a graph's.
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "deploy/module.h"

namespace tessel {

/// The module's inputs, in order, from `specs` ("NAME=file.npy", or "file.npy" for the next
/// unnamed input); with no specs, seeded random tensors (said in `notes`). Every input is
/// refused over `max_bytes` before it is allocated. Errors name a missing, unknown or
/// repeated input.
Result<std::vector<Tensor>> artifact_inputs(const Module &module, const std::vector<std::string> &specs,
                                            uint64_t seed, int64_t max_bytes, std::vector<std::string> &notes);

}  // namespace tessel
