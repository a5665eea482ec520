#include <Halide.h>

#include "compute/root_reduction.h"

namespace tessel {

using Halide::Expr;

/// Builds and schedules a RootReduction; read it with func(kept index reversed).
/// The result is a pure Func computed at root over the kept axes, vectorized and
/// parallelized; each block of it folds into a small accumulator computed inside that
/// block, so the fold's state stays in registers.
Halide::Func build_root_reduction(const RootReduction &spec) {
  const size_t k = spec.kept.size(), nr = spec.reduce.size();
  std::vector<Halide::Var> onnx_vars = make_vars(k, spec.name + "_k");
  std::vector<Halide::Var> vars(onnx_vars.rbegin(), onnx_vars.rend());  // Halide order
  std::vector<Expr> kept_index = to_exprs(onnx_vars);
  const bool tuple = spec.init.size() > 1;
  const int width = spec.init[0].type().bits() == 64 ? 8 : 16;
  const int64_t inner_extent = nr > 0 ? spec.reduce.back() : 0;
  const bool lanes = spec.scheduled && spec.merge && !spec.vectorize_kept_inner && inner_extent >= 2 * width;

  auto assign = [tuple](Halide::Func &g, const std::vector<Expr> &args, const std::vector<Expr> &values) {
    if (tuple)
      g(args) = Halide::Tuple(values);
    else
      g(args) = values[0];
  };
  auto current = [tuple, &spec](Halide::Func &g, const std::vector<Expr> &args) {
    std::vector<Expr> values;
    if (!tuple) return std::vector<Expr>{g(args)};
    for (size_t j = 0; j < spec.init.size(); ++j) values.push_back(g(args)[static_cast<int>(j)]);
    return values;
  };
  std::vector<Expr> args(vars.begin(), vars.end());

  // The reduction domain, innermost axis first; with lanes its innermost axis counts chunks.
  Halide::Region box;
  for (size_t i = 0; i < nr; ++i) {
    int64_t extent = spec.reduce[nr - 1 - i];
    if (lanes && i == 0) extent = (extent + width - 1) / width;
    box.emplace_back(0, static_cast<int>(extent));
  }
  Halide::RDom r;
  std::vector<Expr> r_index;
  if (nr > 0) {
    r = Halide::RDom(box, spec.name + "_r");
    for (size_t i = 0; i < nr; ++i) r_index.push_back(r[static_cast<int>(nr - 1 - i)]);
  }

  Halide::Func acc(spec.name + "_acc"), partial(spec.name + "_lanes");
  Halide::Var lane(spec.name + "_lane");
  if (!lanes) {
    assign(acc, args, spec.init);
    assign(acc, args, spec.update(kept_index, r_index, current(acc, args)));
  } else {
    // partial(lane, kept) folds elements lane, lane + width, ... of the innermost axis.
    std::vector<Expr> largs{lane};
    largs.insert(largs.end(), args.begin(), args.end());
    assign(partial, largs, spec.init);
    Expr position = r_index.back() * width + lane;
    const bool ragged = inner_extent % width != 0;
    std::vector<Expr> index = r_index;
    index.back() = ragged ? Halide::min(position, static_cast<int>(inner_extent - 1)) : position;
    std::vector<Expr> before = current(partial, largs);
    std::vector<Expr> next = spec.update(kept_index, index, before);
    if (ragged)
      for (size_t j = 0; j < next.size(); ++j)
        next[j] = Halide::select(position < static_cast<int>(inner_extent), next[j], before[j]);
    assign(partial, largs, next);
    std::vector<Expr> first{Expr(0)}, others;
    first.insert(first.end(), args.begin(), args.end());
    assign(acc, args, current(partial, first));
    Halide::RDom other_lanes(1, width - 1, spec.name + "_l");
    others.push_back(other_lanes);
    others.insert(others.end(), args.begin(), args.end());
    assign(acc, args, spec.merge(current(acc, args), current(partial, others)));
  }

  Halide::Func f(spec.name);
  if (tuple)
    f(args) = Halide::Tuple(acc(args));
  else
    f(args) = acc(args);
  if (!spec.scheduled) return f;
  f.compute_root();
  if (k == 0) {
    acc.compute_root();
    if (lanes) partial.compute_root().vectorize(lane).update().reorder(lane, r[0]).vectorize(lane);
    return f;
  }

  int64_t work = shape_numel(spec.kept);
  for (int64_t e : spec.reduce) work *= e;
  const bool parallel = work >= 65536 && shape_numel(spec.kept) > 1;
  if (spec.vectorize_kept_inner && spec.kept.back() >= width) {
    // Each block is one row of the innermost kept axis: the reduction loops run around
    // a vector loop along that row, which reads the input densely.
    f.vectorize(vars[0], width, Halide::TailStrategy::GuardWithIf);
    if (k >= 2) {
      Halide::Var block = vars[1];
      for (size_t d = 2; d < k; ++d) {
        Halide::Var fused(block.name() + "_f" + std::to_string(d));
        f.fuse(block, vars[d], fused);
        block = fused;
      }
      if (parallel) f.parallel(block);
      acc.compute_at(f, block);
    } else {
      acc.compute_root();
    }
    acc.vectorize(vars[0], width, Halide::TailStrategy::GuardWithIf);
    Halide::Stage u = acc.update(0);
    std::vector<Halide::VarOrRVar> order{vars[0]};
    for (size_t i = 0; i < nr; ++i) order.push_back(r[static_cast<int>(i)]);
    u.reorder(order);
    u.vectorize(vars[0], width, Halide::TailStrategy::GuardWithIf);
    return f;
  }
  // Otherwise each block is one kept element, folded in registers.
  Halide::Var block = vars[0];
  for (size_t d = 1; d < k; ++d) {
    Halide::Var fused(block.name() + "_f" + std::to_string(d));
    f.fuse(block, vars[d], fused);
    block = fused;
  }
  if (parallel) f.parallel(block);
  acc.compute_at(f, block);
  if (lanes) {
    partial.compute_at(f, block).vectorize(lane);
    std::vector<Halide::VarOrRVar> order{lane};
    for (size_t i = 0; i < nr; ++i) order.push_back(r[static_cast<int>(i)]);
    partial.update().reorder(order).vectorize(lane);
  }
  return f;
}


/// Reads a RootReduction result at its kept index (ONNX order).
Expr read_root(const Halide::Func &f, const std::vector<Expr> &kept, int tuple_element) {
  std::vector<Expr> args(kept.rbegin(), kept.rend());
  if (tuple_element >= 0) return f(args)[tuple_element];
  return f(args);
}

}  // namespace tessel
