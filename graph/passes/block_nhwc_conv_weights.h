#pragma once
// Weight layout for channels-last convolutions (TesselConvNHWC, channels_last_conv.h): the
// weight [KH, KW, C / group, M] is stored as [M / 16, KH, KW, C / group, 16], so the
// channel vectors one register tile reads over its whole reduction are adjacent in memory
// instead of one row of M channels apart. MobileNet-V2's last 1x1 convs (320 -> 1280 and
// 160 -> 320 on a 3x3 map) read a 32-byte vector per input channel from rows 5120 and 1280
// bytes apart: every read of the 320 -> 1280 one lands on another 4 KiB page, where the
// hardware prefetchers stop. In the model (AVX2, 2 threads) it took 0.40 ms at 18 GFLOP/s;
// blocked, 0.14-0.17 ms (with the built-in schedule's rows inside each channel block,
// compute_conv_nhwc.cpp). A layout pass, run for the CPU target only, after
// channels_last_conv (layout_passes in pass_manager.h).
#include <cstdint>
#include <optional>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// The extents a TesselConvNHWC's weight describes, whichever its layout.
struct NhwcConvWeightDims {
  int64_t kernel_h = 0, kernel_w = 0, in_per_group = 0, out_channels = 0;
};

/// Reads W's dims: [KH, KW, C / group, M] when `block` is 1, else [M / block, KH, KW,
/// C / group, block] (kConvWeightBlockAttr on the node); nothing when W's rank or last
/// extent does not match.
std::optional<NhwcConvWeightDims> nhwc_conv_weight_dims(const Shape &w, int64_t block);

/// Blocks the weight of every TesselConvNHWC that has one group, a constant f32 weight read
/// by no other node, and a multiple of 16 output channels (more than 16: 16 are one block
/// already). Depthwise convs keep theirs: each tap's weights are one short row there.
Result<Graph> block_nhwc_conv_weights(Graph graph);

}  // namespace tessel
