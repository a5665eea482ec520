#pragma once
// Weight layout for the CPU convolution kernels that vectorize along output channels: a
// spatial Conv's weight [M, C, KH, KW] ([M, C, KT, KH, KW] in 3-D) is stored as
// [M/16, C, KH, KW, 16] ([M/16, C, KT, KH, KW, 16]), so the 16 output
// channels one vector covers are adjacent for every (input channel, tap). Vectorizing along
// channels instead of along the output row keeps every lane busy on short rows (the 14x14
// and 7x7 layers of a ResNet fill a 16-lane row vector by 88% and 44%) and reads each
// input element as one broadcast. A layout pass, run for the CPU target only
// (layout_passes in pass_manager.h).
#include <cstdint>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Output channels per block of a blocked weight: one AVX-512 vector of f32.
constexpr int64_t kConvWeightBlock = 16;
/// Output channels per block of a grouped conv whose groups hold a multiple of 8 but not of
/// 16 (RegNet-Y's and RegNet-X's group width of 8): one AVX2 vector, half an AVX-512 one.
constexpr int64_t kGroupedConvWeightBlock = 8;

/// Name of the Conv attribute that says its weight input is blocked, and by how many
/// output channels: W is [M / block, C / group, kernel..., block]. kernel_shape is then
/// always set. Only this pass writes it; ONNX files never carry it.
constexpr const char *kConvWeightBlockAttr = "tessel_weight_block";

/// The output-channel block of a Conv node's weight (1 when not blocked).
int64_t conv_weight_block(const Node &conv);

/// Where weight element (output channel o, element k of that channel's C x kernel values)
/// sits in the blocked layout.
inline int64_t blocked_weight_offset(int64_t o, int64_t k, int64_t per_channel, int64_t block) {
  return ((o / block) * per_channel + k) * block + o % block;
}

/// A blocked f32 weight [M / block, C, kernel..., block] back in ONNX's [M, C, kernel...]
/// order (for libraries that read that layout).
std::vector<float> unblocked_conv_weight(const float *data, const Shape &blocked_shape);

/// Fewest products (input channels x taps) a blocked convolution sums per output. The
/// blocked accumulator is transposed back to NCHW once per output vector, a cost the
/// reduction amortizes; a short one does not pay for it. MobileNet-V2's 3x3 stride-2 stem
/// (3 x 9 = 27) tied at 128 trials (0.122 blocked, 0.121 ms by rows) and reached 0.110 ms
/// blocked after 524, where a long tune by rows had found 0.087 ms. ResNet-18's 7x7
/// stride-2 stem (3 x 49 = 147) reached 0.588 ms blocked after 300 trials, against 0.683 ms
/// by rows after 2000, and 0.69-0.72 ms in the graph against 0.92-0.98.
constexpr int64_t kMinBlockedReduction = 128;

/// Most output positions of a blocked 1x1 convolution. Elsewhere 1x1 convolutions are matrix
/// products vectorized along the positions (flatten_pointwise_conv makes one row of them);
/// a 3x3 map fills 9 of 16 lanes that way, where the blocked kernel vectorizes along output
/// channels. Measured on AVX2 (`tessel bench` of single convs, C -> M on an HxH map):
/// 2048 -> 512 on 3x3 0.384 -> 0.161 ms, 400 -> 400 on 3x3 0.046-0.057 -> 0.027, 1024 -> 256
/// on 6x6 0.21 -> 0.15, 160 -> 160 on 6x6 level; blocked was slower from 7x7 (960 -> 160:
/// 0.16-0.18 -> 0.22-0.25) and on 56x56 (1.03-1.06 -> 1.22). (MobileNet-V2's 7x7 ones
/// measured within 7% either way before.)
constexpr int64_t kMaxBlockedPointwisePositions = 36;

/// Whether a conv with weight [M, C / group, kernel...] (2 or 3 spatial axes) and output
/// type `y` runs faster blocked, whatever M: more than one tap in all, or one tap over at most
/// kMaxBlockedPointwisePositions output positions, and at least kMinBlockedReduction
/// products per output.
bool blocked_layout_pays(const Shape &w, const TensorType &y);

/// Blocks the weight of every Conv that has: groups of a multiple of 16 output channels (a
/// block then lies inside one group: RegNet-X's and ResNeXt's grouped convs), a constant f32
/// weight read by no other node, 2 or 3 spatial axes with more than one tap in all, or one tap over at most
/// kMaxBlockedPointwisePositions output positions, and at least kMinBlockedReduction products
/// per output. A 2-D grouped conv with more than one tap whose groups hold a multiple of 8
/// output channels but not of 16 is blocked by kGroupedConvWeightBlock instead, whatever its
/// reduction.
Result<Graph> block_conv_weights(Graph graph);

}  // namespace tessel
