#pragma once
// Weight layout for the CPU matrix-product kernel: a constant B [K, N] of a MatMul or Gemm is
// stored as panels [N / 16, K, 16], so the columns one register tile covers are adjacent
// over the whole of K instead of one row of N floats apart. ConvNeXt-T's stage-4 Linear
// layers (9 rows of A by a 768 x 3072 or 3072 x 768 B) read a vector per K from rows 12 KiB
// apart, each on another page where the hardware prefetchers stop: 2.0-2.9 ms per call in the
// model, 3 GB/s of weight. The kernel packed B into panels itself on every run where enough
// rows shared them; with panels stored at compile time none does. A layout pass, run for
// the CPU target only (layout_passes in pass_manager.h), after pack_weights.
#include <cstdint>
#include <optional>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// Columns per panel: one AVX-512 vector of f32 (two AVX2 ones).
constexpr int64_t kMatmulPanelWidth = 16;

/// Name of the MatMul/Gemm attribute that says B is stored as panels of that many columns:
/// B is [N / width, K, width]. Only this pass writes it; ONNX files never carry it.
constexpr const char *kMatmulPanelAttr = "tessel_b_panel";

/// The panel width of a MatMul or Gemm node's B (1 when B is a plain matrix).
int64_t matmul_panel_width(const Node &node);

/// B's matrix shape [K, N] from its panels [N / width, K, width]; nothing when the shape is
/// not such panels.
std::optional<Shape> matrix_of_panels(const Shape &panels, int64_t width);

/// Copies a row-major f32 matrix [rows, cols] into panels [cols / width, rows, width]
/// (cols a multiple of width). block_nhwc_conv_weights lays out its weights this way too.
void copy_into_panels(const float *matrix, int64_t rows, int64_t cols, int64_t width, float *panels);

/// An f32 B stored as panels [N / width, K, width] back as the matrix [K, N] (for libraries
/// that read that layout).
std::vector<float> matrix_from_panels(const float *data, const Shape &panels);

/// Stores as panels the B of every MatMul (and Gemm with transB = 0) whose B is a 2-D f32
/// constant read by no other node, with N a multiple of kMatmulPanelWidth above it (one
/// panel is the matrix itself).
Result<Graph> panel_matmul_weights(Graph graph);

}  // namespace tessel
