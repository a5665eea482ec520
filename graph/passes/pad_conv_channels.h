#pragma once
// Output channels padded to whole blocks, so that convs with a count of output channels
// that is not a multiple of kConvWeightBlock get the blocked CPU kernel too
// (block_conv_weights.h). SqueezeNet's classifier (512 -> 1000 channels, 1x1 on a 5x5 map)
// and RegNet-Y-400MF's 1x1 convs to 440 channels on 3x3 and 6x6 maps otherwise run as
// matrix products vectorized along their 9 to 36 positions: `tessel bench` timed SqueezeNet's
// at 0.37 ms against oneDNN's 0.13 ms, and 1008 channels, blocked, at 0.17 ms. A layout pass,
// run for the CPU target only, right before block_conv_weights (layout_passes in
// pass_manager.h).
#include <cstdint>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Most padding, as a share of the conv's output channels: the padded channels' work is
/// thrown away (SqueezeNet's 1000 -> 1024 adds 2.4%, RegNet-Y's 440 -> 448 1.8%).
constexpr double kMaxChannelPadding = 1.0 / 16;

/// The output channels a conv with `channels` of them is padded to: the next multiple of two
/// blocks (the built-in kernel's register tile holds two, blocked_direct_conv) or else of one
/// block, when that stays within kMaxChannelPadding; `channels` itself otherwise.
int64_t padded_conv_channels(int64_t channels);

/// Rewrites every Conv with one group, a constant f32 weight read by no other node, a
/// constant f32 bias or none, a count of output channels M that is not a multiple of
/// kConvWeightBlock but pads within kMaxChannelPadding, and a shape for which
/// blocked_layout_pays, into a Conv of padded_conv_channels(M) outputs (zero weights and
/// bias in the new ones) followed by a Slice of the first M channels, which keeps the
/// original output tensor.
Result<Graph> pad_conv_channels(Graph graph);

}  // namespace tessel
