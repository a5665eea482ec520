#pragma once
// Dead-tap pruning: a zero-padded Conv whose dilated kernel reaches past its input at every
// output position for some taps (DeepLab-V3's ASPP convs: 3x3 at dilation 12, 24 and 36 on
// the 6x6 feature map of a 96x96 image read nothing but padding outside the centre tap) multiplies zeros for
// those taps. The taps no output position ever reads inside the input are cut from the
// weight, and the pads shrink to match, so the conv computes the same output with less work
// (there, a 1x1 conv that flatten_pointwise_conv then makes a matrix product).
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Rewrites every Conv with a constant weight, explicit (NOTSET) or no padding, static
/// spatial shapes and, along some axis, a leading or trailing run of taps that no output
/// position reads inside the input: the weight keeps the taps in between, the pads lose
/// what the cut taps reached. Left alone when a pad would turn negative or the output
/// shape would change.
Result<Graph> prune_conv_taps(Graph graph);

}  // namespace tessel
