#pragma once
// Peer: oneDNN (2.x C++ API) matmul and convolution primitives on the CPU engine.
#include <vector>

#include "peers/kernel_row.h"
#include "peers/problems.h"

namespace tessel::bench {

/// The note of a oneDNN row when tessel was configured without it.
inline constexpr const char *kOneDnnMissing =
    "not built in: libdnnl-dev was not found when tessel was configured";

/// The matmul primitive on plain row-major A, B, C.
KernelRow make_onednn_matmul(const MatmulProblem &problem);

/// Two rows: the convolution on plain NCHW/OIHW tensors, and in the layouts oneDNN prefers
/// (format_tag::any; the reorders into and out of them are done once, outside the timed run,
/// as in a network that stays in the blocked layout from layer to layer).
std::vector<KernelRow> make_onednn_conv(const ConvProblem &problem);

}  // namespace tessel::bench
