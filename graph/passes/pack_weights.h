#pragma once
// Weight layout for the CPU kernels: constant matrix operands are rewritten at compile time
// into the layout tessel's matrix-product kernel reads without reshuffling them on every
// run. A layout pass, so the pass list includes it only for the CPU target
// (layout_passes in pass_manager.h).
#include <cstdint>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel {

/// When the CPU matrix-product kernel prefers B with rows (not columns) contiguous. With
/// one or two output rows, or fewer than four output columns, it computes dot products
/// along K, which is what a transB=1 weight lays out; with more rows that form re-reads
/// all of B for every pair of rows, while row-major B is read once per tile of rows
/// (measured, transB=1 against B stored transposed: Gemm 3x512 by 512x1000 0.043 against
/// 0.034 ms, but 1x512 by 512x1000 0.026 against 0.033 ms).
constexpr int64_t kPackWeightsMinRows = 3;
constexpr int64_t kPackWeightsMinColumns = 4;

/// Two rewrites; every rewritten constant has no other reader, so the model does not grow:
///  - Transpose(W) with W a constant read by nothing else, feeding only MatMul/Gemm B
///    inputs: W is permuted here and the Transpose removed. fold_constants does this for
///    weights up to kMaxFoldedBytes; this covers the larger ones, which would otherwise be
///    copied by a Transpose on every run;
///  - Gemm(A, B, C) with transB=1, B a 2-D constant read only as B of such Gemms, each
///    with at least kPackWeightsMinRows output rows and kPackWeightsMinColumns columns: B
///    is stored transposed and transB becomes 0, so the kernel reads B's rows as vectors
///    instead of gathering its columns into panels (or re-reading them) on every run.
Result<Graph> pack_weights(Graph graph);

}  // namespace tessel
