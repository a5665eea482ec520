#include <Halide.h>

#include "schedule/default_schedule.h"

namespace tessel {

void apply_default_schedule(TensorFunc &output) {
  const int rank = output.rank();
  if (rank == 0) return;
  Halide::Func &f = output.func;
  std::vector<Halide::Var> vars = f.args();  // Halide order: innermost first
  const int64_t inner_extent = output.shape.back();
  const int vector_width = output.dtype == DType::Float64 || output.dtype == DType::Int64 ? 8 : 16;
  if (inner_extent >= vector_width) f.vectorize(vars[0], vector_width, Halide::TailStrategy::GuardWithIf);

  const int64_t numel = shape_numel(output.shape);
  if (numel < 16384 || rank < 2) return;
  // Fuse the outer loops into one so there is enough parallelism even when N == 1.
  Halide::Var fused = vars[rank - 1];
  for (int d = rank - 2; d >= 1; --d) {
    Halide::Var next(fused.name() + "_" + vars[d].name());
    f.fuse(vars[d], fused, next);
    fused = next;
  }
  f.parallel(fused);
}

}  // namespace tessel
