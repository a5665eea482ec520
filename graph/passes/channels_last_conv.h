#pragma once
// Channels-last activations for CPU models with depthwise convolutions (MobileNet-style).
// A depthwise 3x3 conv in NCHW vectorizes along rows of 7..112 positions, reading nine
// shifted unaligned rows per output vector; in NHWC it vectorizes along channels, every
// tap one aligned vector load. Measured with a standalone Halide program on this host
// (2 threads): 192 channels at 28x28, 28 us in NHWC against 123 us in NCHW; oneDNN's
// channels-last kernel takes 20 us where tessel's tuned NCHW record took 75. A layout pass,
// run for the CPU target only (layout_passes in pass_manager.h).
//
// Every 2-D Conv of such a graph becomes a TesselConvNHWC (below) between Transposes;
// the Transposes then sink through elementwise ops (Clip, Relu, Add, ...) and cancel
// against the next conv's, so the activations between convs stay NHWC. A GlobalAveragePool
// of a channels-last value becomes a ReduceMean over its spatial axes.
#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Internal op (default domain; the ONNX checker rejects it in files):
///   Y [N, OH, OW, M] = conv(X, W) (+ B), X [N, H, W, C] (or [N, C, H, W] with attribute
///   input_layout = "NCHW"), W [KH, KW, C / group, M], B [M].
/// Attributes: strides [2], dilations [2], pads [h_begin, w_begin, h_end, w_end] (resolved,
/// never auto_pad), group, input_layout ("NHWC" or "NCHW").
constexpr const char *kConvNhwcOp = "TesselConvNHWC";

/// Whether the graph has a 2-D depthwise Conv (group == input channels > 1): the gate of
/// channels_last_conv.
bool has_depthwise_conv(const Graph &graph);

/// Rewrites the graph's 2-D f32 Convs with constant weights to TesselConvNHWC when the
/// graph has a depthwise one (unchanged otherwise). Inputs with at most 4 channels that no
/// converted op produced (an image) are read in NCHW by the conv itself.
Result<Graph> channels_last_conv(Graph graph);

}  // namespace tessel
