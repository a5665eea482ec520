#pragma once
// Winograd F(4x4, 3x3) convolution for the CPU (Lavin and Gray, 2016): a 3x3 stride-1 Conv
// becomes three kernels, each tuned or scheduled on its own:
//   TesselWinogradInput:  X [N, C, H, W] -> V [N, 36, C, TH, TW], every 6x6 input tile
//                         (stride 4, one row and column of zero padding) as B^T d B;
//   MatMul:               U [36, M, C] x V viewed as [N, 36, C, TH*TW] -> [N, 36, M, TH*TW],
//                         U = G g G^T computed here, at compile time;
//   TesselWinogradOutput: [N, 36, M, TH, TW] -> Y [N, M, H, W], each 4x4 output tile as
//                         A^T m A (+ bias), followed by the conv's elementwise epilogue.
// The product does 36 instead of 144 multiply-adds per 4x4 output tile and input channel.
// A layout pass, run for the CPU target only (layout_passes in pass_manager.h).
#include <cstdint>

#include "graph/graph.h"
#include "graph/result.h"

namespace tessel {

/// Output tile edge (m) and input tile edge (m + 2) of F(m x m, 3 x 3).
constexpr int kWinogradTile = 4;
constexpr int kWinogradInputTile = kWinogradTile + 2;
/// Transform points per tile: the MatMul's batch of 36 products.
constexpr int kWinogradPoints = kWinogradInputTile * kWinogradInputTile;

/// Names of the two internal ops (default domain; ONNX files never use them).
constexpr const char *kWinogradInputOp = "TesselWinogradInput";
constexpr const char *kWinogradOutputOp = "TesselWinogradOutput";

/// The transform matrices of F(4x4, 3x3) with interpolation points 0, +-1, +-2.
extern const double kWinogradBT[kWinogradInputTile][kWinogradInputTile];
extern const double kWinogradG[kWinogradInputTile][3];
extern const double kWinogradAT[kWinogradTile][kWinogradInputTile];

/// Fewest output positions (H x W) a convolution needs: the product's tiles are its
/// vectors' lanes. Measured on ResNet-18's layers with a standalone Halide prototype
/// (2 threads, EPYC Zen 5): 64 channels at 56x56 0.33-0.41 ms against 0.49-0.52 direct,
/// 128 at 28x28 0.35-0.39 against ~0.50; 256 at 14x14 (16 tiles, padded from 12.25) took
/// 1.2 ms against 0.48 direct.
constexpr int64_t kWinogradMinPositions = 28 * 28;
/// Fewest input and output channels: the product sums over C, and its M rows are the
/// register tile's broadcasts.
constexpr int64_t kWinogradMinChannels = 32;

/// Rewrites every Conv with a 3x3 kernel, stride 1, dilation 1, one pixel of padding on
/// every side, group 1, a constant f32 weight read by no other node, known f32 shapes, at
/// least kWinogradMinChannels input and output channels and kWinogradMinPositions output
/// positions into the three kernels above. Outputs agree with the direct convolution to
/// about 2e-6 relative (the transform's rounding, measured on ResNet-18's layers).
Result<Graph> winograd_conv(Graph graph);

}  // namespace tessel
