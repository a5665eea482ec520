#pragma once
// Winograd F(m x m, 3x3) convolution for the CPU (Lavin and Gray, 2016): a 3x3 stride-1 Conv
// becomes three kernels, each tuned or scheduled on its own (P = (m + 2)^2 points):
//   TesselWinogradInput:  X [N, C, H, W] -> V [N, P, C, TH, TW], every (m+2)-square input
//                         tile (stride m, one row and column of zero padding) as B^T d B;
//   MatMul:               U [P, M, C] x V viewed as [N, P, C, TH*TW] -> [N, P, M, TH*TW],
//                         U = G g G^T computed here, at compile time;
//   TesselWinogradOutput: [N, P, M, TH, TW] -> Y [N, M, H, W], each m x m output tile as
//                         A^T p A (+ bias), followed by the conv's elementwise epilogue.
// With m = 4 the product does 36 instead of 144 multiply-adds per output tile and input
// channel; with m = 2, 16 instead of 36.
// A layout pass, run for the CPU target only (layout_passes in pass_manager.h).
#include <cstdint>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Names of the two internal ops (default domain; the ONNX checker rejects them in files).
/// Both carry the attribute `tile`: the output tile edge m of F(m x m, 3 x 3).
constexpr const char *kWinogradInputOp = "TesselWinogradInput";
constexpr const char *kWinogradOutputOp = "TesselWinogradOutput";
constexpr const char *kWinogradTileAttr = "tile";

/// The transform matrices of F(m x m, 3 x 3) for m = 2 (interpolation points 0, +-1) and
/// m = 4 (0, -1, 1, 1/2, -2: a lower float32 error than 0, +-1, +-2):
/// Y = A^T [(G g G^T) . (B^T d B)] A over an (m + 2)-square input tile.
struct WinogradTransform {
  int tile;        ///< m, the output tile edge
  int input_tile;  ///< m + 2
  const double *bt;  ///< B^T, input_tile x input_tile, row-major
  const double *g;   ///< G, input_tile x 3
  const double *at;  ///< A^T, tile x input_tile
  /// Transform points per tile: the MatMul's batch of products.
  int points() const { return input_tile * input_tile; }
  double BT(int i, int j) const { return bt[i * input_tile + j]; }
  double G(int i, int j) const { return g[i * 3 + j]; }
  double AT(int i, int j) const { return at[i * input_tile + j]; }
};

/// The transform for output tiles of edge `tile` (2 or 4); nullptr for any other.
const WinogradTransform *winograd_transform(int64_t tile);

/// Tiles of edge `tile` along an output axis of `extent` positions (the last may stick out).
inline int64_t winograd_tiles(int64_t extent, int tile) { return (extent + tile - 1) / tile; }

/// When F(4x4, 3x3) pays: output maps of 28x28 or more. Measured on ResNet-18's layers with
/// a standalone Halide prototype (2 threads, EPYC Zen 5): 64 channels at 56x56 0.33-0.41 ms
/// against 0.49-0.52 direct, 128 at 28x28 0.35-0.39 against ~0.50; 256 at 14x14 (16 tiles,
/// padded from 12.25, and a transformed weight 4x the direct one) took 1.2 ms against 0.48.
constexpr int64_t kWinograd4MinPositions = 28 * 28;
/// Smaller maps, down to 14x14, use F(2x2, 3x3): 2.25x fewer multiply-adds, no tile padding
/// at 14x14 and a transformed weight 1.8x the direct one.
constexpr int64_t kWinograd2MinPositions = 14 * 14;
/// Below that, down to 7x7, only convs of 512+ input and output channels. Measured in two
/// tuned blocks of two residual units each (300 trials each way, cold weights, artifacts
/// interleaved, 2 threads, EPYC): 512 channels at 7x7 ran 7.24 ms Winograd against 8.52 ms
/// direct (faster in all six rounds, though the 16 tiles pad 7x7 to 8x8 and the transformed
/// weight streams 1.8x the bytes); 256 channels at 12x12 ran 5.14 against 4.84 ms (the
/// direct conv reached 81% of the FMA peak, the product's 36 columns half that).
constexpr int64_t kWinograd2SmallMapMinPositions = 7 * 7;
constexpr int64_t kWinograd2SmallMapMinChannels = 512;
/// Fewest input and output channels: the product sums over C, and its M rows are the
/// register tile's broadcasts.
constexpr int64_t kWinogradMinChannels = 32;

/// Rewrites every Conv with a 3x3 kernel, stride 1, dilation 1, one pixel of padding on
/// every side, group 1, a constant f32 weight read by no other node, known f32 shapes, at
/// least kWinogradMinChannels input and output channels and kWinograd2MinPositions output
/// positions (or kWinograd2SmallMap* for both) into the three kernels above (m = 4 from
/// kWinograd4MinPositions). Outputs agree with the direct convolution to about 2e-6
/// relative for m = 4 and 2e-7 for m = 2 (the transforms' rounding, measured on ResNet-18's
/// layers).
Result<Graph> winograd_conv(Graph graph);

}  // namespace tessel
