#pragma once
// Einsum equations ("bij,bjk->bik", "...ii->...i"): parsed once, the same way for inference
// and code generation.
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace tessel {

/// Parses an Einsum equation for inputs of the given shapes (kUnknownDim allowed). Every
/// subscript becomes a label id: the broadcast ellipsis dimensions first, then letters.
/// Returns one label list per input, then the output's list; label_extents[id] is the
/// size of each label (numpy broadcasting: a size-1 dimension stretches). Throws
/// TesselException naming the problem.
std::vector<std::vector<int>> parse_einsum_equation(const std::string &equation,
                                                    const std::vector<Shape> &input_shapes,
                                                    std::vector<int64_t> &label_extents);

}  // namespace tessel
