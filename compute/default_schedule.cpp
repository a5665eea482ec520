#include <Halide.h>

#include "compute/default_schedule.h"

namespace tessel {

namespace {

/// Parallel over the output's outer axes (those outside the `inner_axes` innermost ones),
/// fused into one loop; serial when the output has fewer than `min_elements`.
void parallel_outer_axes(TensorFunc &output, int inner_axes, int64_t min_elements = 16384) {
  const int rank = output.rank();
  Halide::Func &f = output.func;
  const std::vector<Halide::Var> vars = f.args();
  const int64_t numel = shape_numel(output.shape);
  if (numel < min_elements || inner_axes >= rank) return;
  // Fuse outer loops into one so there is enough parallelism even when N == 1, but no more
  // than that: every iteration of a parallel loop is claimed by an atomic operation, and a
  // [1, 36, 64, 14, 14] tensor fused down to its rows made 32256 claims of 14 elements
  // (1.38 ms against 0.11 ms parallel over its 36 outer slices).
  // Nor finer than a few vector rows per claim: a [1, 48, 48, 16] output fused down to its
  // pixels made 2304 claims of 16 elements, and the two threads' atomics on one cache line
  // took 0.15 ms where one thread alone took 0.06 ms.
  constexpr int64_t kEnoughParallelIterations = 64;
  constexpr int64_t kMinElementsPerIteration = 512;
  Halide::Var fused = vars[rank - 1];
  int64_t iterations = output.shape[0];
  for (int d = rank - 2; d >= inner_axes && iterations < kEnoughParallelIterations; --d) {
    const int64_t next_iterations = iterations * output.shape[rank - 1 - d];
    if (iterations > 1 && numel / next_iterations < kMinElementsPerIteration) break;
    Halide::Var next(fused.name() + "_" + vars[d].name());
    f.fuse(vars[d], fused, next);
    fused = next;
    iterations *= output.shape[rank - 1 - d];
  }
  f.parallel(fused);
}

}  // namespace

void apply_default_schedule(TensorFunc &output) {
  const int rank = output.rank();
  if (rank == 0 || output.scheduled) return;
  Halide::Func &f = output.func;
  std::vector<Halide::Var> vars = f.args();  // Halide order: innermost first
  const int vector_width = output.dtype == DType::Float64 || output.dtype == DType::Int64 ? 8 : 16;
  // Rows shorter than a vector (the 14x14 and 7x7 maps of NCHW CNNs) are fused with the
  // next axes into one loop that is: a row of 14 ran one element at a time. A Concat of 24
  // pieces of [1, 32, 14, 14] with a BatchNormalization+Relu epilogue (DenseNet-121's
  // pattern, whose such kernels took 5.4 of its 19 ms) took 0.59 ms so, 0.115 ms vectorized.
  Halide::Var inner = vars[0];
  int64_t inner_extent = output.shape.back();
  int inner_axes = 1;  // Halide axes fused into `inner`
  if (output.windowed && inner_extent < vector_width) {
    // A pool's short rows keep vectors of their own, the last shifted onto the one before:
    // fused with the next axis, each tap's load became a gather. SqueezeNet's 3x3 stride-2
    // MaxPool onto 11x11 rows of 128 channels took 0.064 ms so (16 lanes over 121, and too
    // few elements to run parallel), 0.008 ms with its 500-trial record's 4-lane rows.
    int width = 4;
    while (width * 2 <= inner_extent) width *= 2;
    if (inner_extent >= width) {
      const bool pure = !f.has_update_definition();
      f.vectorize(inner, width, pure ? Halide::TailStrategy::ShiftInwards : Halide::TailStrategy::GuardWithIf);
    }
    // Parallel from fewer elements than an elementwise op: each reads a window. The 11x11
    // MaxPool above: 0.0144 ms on one thread, 0.0089 on two (alone); its 5x5 one onto 256
    // channels (6400 elements) gained nothing in the model.
    parallel_outer_axes(output, inner_axes, 8192);
    return;
  }
  while (inner_extent < vector_width && inner_axes < rank) {
    Halide::Var next(inner.name() + "_" + vars[inner_axes].name());
    f.fuse(inner, vars[inner_axes], next);
    inner = next;
    inner_extent *= output.shape[rank - 1 - inner_axes];
    ++inner_axes;
  }
  // Half vectors where they divide the rows and whole ones do not: a guarded tail took the
  // whole row off the vector path (ResNet-18's 3x3 stride-2 MaxPool onto 24-wide rows:
  // 0.028 ms with 16 + 8 guarded lanes, 0.012 with three vectors of 8).
  int width = vector_width;
  if (inner_extent % width != 0 && inner_extent % (width / 2) == 0) width /= 2;
  if (inner_extent >= width) f.vectorize(inner, width, Halide::TailStrategy::GuardWithIf);

  parallel_outer_axes(output, inner_axes);
}

}  // namespace tessel
