// Compute rule for Einsum: every output element is the sum, over the labels missing from
// the output, of the product of the operands' elements. The sum runs in an intermediate
// compute_root Func; the output stays pure.
#include <Halide.h>

#include "base/result.h"
#include "compute/op_compute.h"
#include "graph/infer/einsum.h"

namespace tessel {

namespace {

using Halide::Expr;

/// Work (output elements times summed elements) below which threads cost more than they save.

std::vector<TensorFunc> compute_einsum(const ComputeContext &ctx) {
  const TensorType &out = ctx.output_type(0);
  std::vector<Shape> shapes;
  for (const TensorFunc &in : ctx.inputs) shapes.push_back(in.shape);
  std::vector<int64_t> extents;
  std::vector<std::vector<int>> labels;
  try {
    labels = parse_einsum_equation(ctx.attrs().get_string("equation", ""), shapes, extents);
  } catch (const TesselException &e) {
    ctx.fail(e.what());
  }
  const std::vector<int> &out_labels = labels.back();
  const size_t num_labels = extents.size();

  // Each label reads as an output Var or, when summed, an RDom dimension.
  std::vector<Expr> label_expr(num_labels);
  std::vector<Halide::Var> out_vars;  // ONNX order of the output
  std::vector<bool> is_output(num_labels, false);
  for (size_t k = 0; k < out_labels.size(); ++k) {
    out_vars.emplace_back("e" + std::to_string(k));
    label_expr[out_labels[k]] = out_vars.back();
    is_output[out_labels[k]] = true;
  }
  // Summed labels, innermost first: the last-appearing label runs in the innermost loop.
  std::vector<int> summed;
  int64_t summed_count = 1;
  for (int label = static_cast<int>(num_labels) - 1; label >= 0; --label) {
    if (is_output[label]) continue;
    summed.push_back(label);
    summed_count *= extents[label];
  }
  const Halide::Type acc_type = dtype_is_float(out.dtype) ? math_type(out.dtype) : halide_type(out.dtype);
  Halide::RDom r;
  if (!summed.empty() && summed_count > 0) {
    Halide::Region ranges;
    for (int label : summed) ranges.emplace_back(0, static_cast<int>(extents[label]));
    r = Halide::RDom(ranges, halide_name(ctx.node.name + "_r"));
    for (size_t k = 0; k < summed.size(); ++k) label_expr[summed[k]] = r[static_cast<int>(k)];
  }

  auto product = [&]() {
    Expr p;
    for (size_t t = 0; t < ctx.inputs.size(); ++t) {
      const TensorFunc &in = ctx.inputs[t];
      std::vector<Expr> index;
      for (size_t d = 0; d < labels[t].size(); ++d) {
        const int label = labels[t][d];
        // A size-1 dimension broadcasts against a longer one.
        index.push_back(in.shape[d] == 1 && extents[label] != 1 ? Expr(0) : label_expr[label]);
      }
      Expr v = Halide::cast(acc_type, in.at(index));
      p = p.defined() ? p * v : v;
    }
    return p;
  };

  if (summed.empty()) {
    return {define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &o) {
      // define_tensor's Vars stand in for the label Vars.
      for (size_t k = 0; k < out_labels.size(); ++k) label_expr[out_labels[k]] = o[k];
      return product();
    })};
  }

  std::vector<Halide::Var> halide_vars(out_vars.rbegin(), out_vars.rend());
  std::vector<Expr> halide_args(halide_vars.begin(), halide_vars.end());
  Halide::Func sum(halide_name(ctx.node.name + "_sum"));
  sum(halide_vars) = Halide::Internal::make_zero(acc_type);
  if (!ctx.unscheduled) sum.compute_root();
  if (summed_count > 0) {  // an empty sum stays 0 (an RDom cannot have extent 0)
    sum(halide_args) += product();
    if (!ctx.unscheduled) schedule_independent_fold(sum.update(), out_vars, out.shape, r, true, summed_count);
  }
  return {define_tensor(ctx.node.name, out.dtype, out.shape, [&](const std::vector<Expr> &o) {
    return sum(std::vector<Expr>(o.rbegin(), o.rend()));
  })};
}

}  // namespace

void register_misc_compute(ComputeRegistry &r) { r.add("Einsum", compute_einsum); }

}  // namespace tessel
