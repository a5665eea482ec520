// Compute rules for MatMul and Gemm. Both become one tiled matrix product: each tile of
// the result (a few rows by one or two vectors of columns) accumulates in registers over
// the whole K, reading a vector of B's row and broadcasting A's elements. The output Func
// is a pure copy of that product, so the default schedule applies to it unchanged.
#include <Halide.h>

#include <algorithm>
#include <optional>

#include "compute/op_compute.h"
#include "compute/vector_isa.h"
#include "graph/passes/panel_matmul_weights.h"

namespace tessel {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::TailStrategy;
using Halide::Var;

/// Element accessor of one operand: (row, column, batch index in ONNX order) -> value.
using MatrixRead = std::function<Expr(Expr row, Expr col, const std::vector<Expr> &batch)>;

/// One (batched) product out[b, i, j] = epilogue(sum_k a(i, k, b) * b(k, j, b), i, j, b).
struct MatmulSpec {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  Shape batch;  // output batch dims, ONNX order
  MatrixRead a, b;
  /// Whether consecutive columns of B (consecutive K of A) are adjacent in memory.
  bool b_rows_contiguous = true;
  bool a_rows_contiguous = true;
  /// Whether B differs between batch elements (then it is never packed).
  bool b_batched = false;
  /// Columns per panel when B is stored as panels [N / width, K, width]
  /// (panel_matmul_weights); 1 for a plain B.
  int64_t b_panel = 1;
  Halide::Type acc_type;
  std::function<Expr(Expr acc, Expr i, Expr j)> epilogue;
};

int lanes_for(Halide::Type t) { return std::max(1, host_vector_bits() / std::max(t.bits(), 8)); }

/// Largest vector width <= natural lanes that fits n (powers of two down to 4), else 1.
int vector_width_for(int64_t n, int natural) {
  for (int v = natural; v >= 4; v /= 2)
    if (n >= v) return v;
  return 1;
}

/// Vars of the product in Halide order: (j, i, batch innermost-first), and the batch
/// index in ONNX order.
struct ProductVars {
  Var j{"j"}, i{"i"};
  std::vector<Var> batch;  // Halide order
  std::vector<Expr> batch_onnx;
  std::vector<Var> args;
  explicit ProductVars(size_t batch_rank) {
    for (size_t d = 0; d < batch_rank; ++d) batch.emplace_back("b" + std::to_string(d));
    for (size_t d = batch_rank; d-- > 0;) batch_onnx.push_back(batch[d]);
    args = {j, i};
    args.insert(args.end(), batch.begin(), batch.end());
  }
};

/// Splits the product's j and i into tiles, orders the tiles (rows innermost: one panel of
/// B stays in cache across them), and fuses all tile loops into one; returns that var.
Var tile_product(Func &tiled, const ProductVars &v, const MatmulSpec &s, int64_t col_tile, int64_t row_tile,
                 TailStrategy col_tail, Var &ji) {
  Var jo("jo"), io("io"), ii("ii");
  tiled.compute_root()
      .split(v.j, jo, ji, static_cast<int>(col_tile), col_tail)
      .split(v.i, io, ii, static_cast<int>(row_tile), TailStrategy::ShiftInwards);
  std::vector<Halide::VarOrRVar> order = {ji, ii, io, jo};
  order.insert(order.end(), v.batch.begin(), v.batch.end());
  tiled.reorder(order);
  Var fused("io_jo");
  tiled.fuse(io, jo, fused);
  for (const Var &b : v.batch) {
    Var wider(fused.name() + "_" + b.name());
    tiled.fuse(fused, b, wider);
    fused = wider;
  }
  const int64_t tiles = ((s.m + row_tile - 1) / row_tile) * ((s.n + col_tile - 1) / col_tile) * shape_numel(s.batch);
  if (tiles <= 1 || s.m * s.n * std::max<int64_t>(s.k, 1) < 32768) return fused;
  // Every parallel iteration is claimed by an atomic operation on a line the threads share:
  // where K is short, a claim of one tile was a tenth of a microsecond of work (Winograd's
  // 16 products of 64x64 by 64x144: 640 tiles of 8x32x64, 0.074 ms; in claims of 8 tiles,
  // 0.062). Consecutive tiles are the rows of one column panel, so a claim also keeps that
  // panel in cache. At least kMinParallelClaims remain for hosts with many threads.
  constexpr int64_t kMinFlopsPerClaim = 256 * 1024, kMinParallelClaims = 64;
  const int64_t tile_flops = 2 * row_tile * col_tile * std::max<int64_t>(s.k, 1);
  const int64_t grain =
      std::clamp<int64_t>((kMinFlopsPerClaim + tile_flops - 1) / tile_flops, 1, std::max<int64_t>(1, tiles / kMinParallelClaims));
  if (grain == 1) {
    tiled.parallel(fused);
    return fused;
  }
  Var claim(fused.name() + "_claim"), within(fused.name() + "_within");
  tiled.split(fused, claim, within, static_cast<int>(grain), TailStrategy::GuardWithIf).parallel(claim);
  return within;
}

/// Dot-product form for a few rows against a B whose columns are contiguous along K (Gemm
/// with transB, or a matrix-vector product): vector partial sums along K, then one
/// horizontal sum per output element.
Func dot_matmul(const MatmulSpec &s, int lanes) {
  ProductVars v(s.batch.size());
  const int64_t chunks = s.k / lanes;
  Var l("l");
  std::vector<Var> partial_args = {l};
  partial_args.insert(partial_args.end(), v.args.begin(), v.args.end());
  Func partial(s.name + "_partial");
  partial(partial_args) = Halide::Internal::make_zero(s.acc_type);
  RDom rk(Halide::Region{{0, static_cast<int>(chunks)}}, s.name + "_k");
  Expr k = rk.x * lanes + l;
  partial(partial_args) +=
      Halide::cast(s.acc_type, s.a(v.i, k, v.batch_onnx)) * Halide::cast(s.acc_type, s.b(k, v.j, v.batch_onnx));

  std::vector<Expr> lane_args(v.args.begin(), v.args.end());
  lane_args.insert(lane_args.begin(), Expr(0));
  Expr sum;
  for (int lane = 0; lane < lanes; ++lane) {
    lane_args[0] = lane;
    Expr term = partial(lane_args);
    sum = lane == 0 ? term : sum + term;
  }
  for (int64_t t = chunks * lanes; t < s.k; ++t) {
    Expr kk = static_cast<int>(t);
    sum = sum +
          Halide::cast(s.acc_type, s.a(v.i, kk, v.batch_onnx)) * Halide::cast(s.acc_type, s.b(kk, v.j, v.batch_onnx));
  }
  Func tiled(s.name + "_tiled");
  tiled(v.args) = s.epilogue(sum, v.i, v.j);

  const int64_t col_tile = std::min<int64_t>(s.n, 4), row_tile = std::min<int64_t>(s.m, 2);
  Var ji("ji");
  Var fused = tile_product(tiled, v, s, col_tile, row_tile, TailStrategy::ShiftInwards, ji);
  partial.compute_at(tiled, fused).vectorize(l).unroll(v.j).unroll(v.i);
  partial.update().reorder(l, v.j, v.i, rk.x).vectorize(l).unroll(v.j).unroll(v.i);
  return tiled;
}

/// The product as a Func over (j, i, batch innermost-first), computed at root with a tiled
/// schedule: each tile (rows x one or two vectors of columns) accumulates in registers over
/// all of K, broadcasting A and reading vectors of B. B is first packed into panels of
/// tile width (contiguous along K) when it is shared by all batches and the product is big
/// enough to pay for it; the tiles then align with the panels. Otherwise tiles use
/// ShiftInwards, so every tile lies inside the output; either way the register tile has
/// constant extents and is fully unrolled.
Func tiled_matmul(const MatmulSpec &s, bool *tiles_inside = nullptr) {
  const int natural = lanes_for(s.acc_type);
  const bool dot_friendly = !s.b_rows_contiguous || s.n < 4;
  if (dot_friendly && s.a_rows_contiguous && s.k >= natural && (s.m < 8 || s.n < 4)) {
    if (tiles_inside) *tiles_inside = true;  // its tiles shift inwards
    return dot_matmul(s, natural);
  }

  ProductVars v(s.batch.size());
  const Var &j = v.j, &i = v.i;
  const int vec = vector_width_for(s.n, natural);
  int64_t vectors = vec == 1 ? 1 : std::min<int64_t>(2, s.n / vec);
  // Over panels stored at compile time, tiles divide N and lie inside one panel or cover
  // whole ones, so each vector's panel index is one value (a tile of 32 on AVX-512 where N
  // is not a multiple of 32 would straddle a panel at the end).
  if (s.b_panel > 1 && vectors > 1 && (s.n % (vec * vectors) != 0 || (vec * vectors) % s.b_panel != 0)) vectors = 1;
  // Three vectors where they divide N and two do not (N = 144, Winograd's 12x12 tiles of a
  // 24x24 map): two would overlap their neighbours on every last column tile (0.062 ->
  // 0.058 ms for its product, with the claims below).
  if (vectors == 2 && s.b_panel == 1 && s.n % (2 * vec) != 0 && s.n % (3 * vec) == 0 &&
      accumulator_registers() >= 18)
    vectors = 3;
  const int64_t col_tile = vec == 1 ? s.n : vec * vectors;
  // Rows of the register tile: 6 x 3, 8 x 2 or 12 x 1 vectors, fewer where the host has
  // fewer registers (AVX2: 6 x 2).
  const int64_t rows_for_vectors = vectors >= 3 ? 6 : vectors == 2 ? 8 : 12;
  const int64_t row_tile =
      std::min<int64_t>({s.m, rows_for_vectors, std::max<int64_t>(1, accumulator_registers() / vectors)});
  const bool pack =
      vec > 1 && s.k >= 16 && !s.b_batched && s.b_panel == 1 && (s.m >= 2 * row_tile || !s.b_rows_contiguous);

  MatrixRead b_read = s.b;
  if (pack) {
    // panel(jj, k, p) holds column p * col_tile + jj of B; columns past N repeat the last.
    Func panel(s.name + "_b_panels");
    Var jj("jj"), pk("pk"), p("p");
    const int width = static_cast<int>(col_tile);
    panel(jj, pk, p) = s.b(pk, Halide::min(p * width + jj, static_cast<int>(s.n - 1)), {});
    panel.compute_root().vectorize(jj, vec);
    if (!s.b_rows_contiguous) {
      Var pko("pko"), pki("pki");
      panel.split(pk, pko, pki, 4, TailStrategy::GuardWithIf).reorder(jj, pki, pko, p).unroll(pki);
    }
    if (s.k * s.n >= 65536) panel.parallel(p);
    b_read = [panel, width](Expr row, Expr col, const std::vector<Expr> &) {
      return panel(col % width, row, col / width);
    };
  }

  Func acc(s.name + "_acc");
  acc(v.args) = Halide::Internal::make_zero(s.acc_type);
  std::optional<RDom> rk;  // K == 0 leaves the sum empty (an RDom needs extent >= 1)
  if (s.k > 0) {
    rk = RDom(Halide::Region{{0, static_cast<int>(s.k)}}, s.name + "_k");
    acc(v.args) +=
        Halide::cast(s.acc_type, s.a(i, *rk, v.batch_onnx)) * Halide::cast(s.acc_type, b_read(*rk, j, v.batch_onnx));
  }

  // Aligned tiles run past N unless they divide it; shifted ones stay inside.
  if (tiles_inside) *tiles_inside = !pack || s.n % col_tile == 0;
  Func tiled(s.name + "_tiled");
  // Aligned tiles may run past N (RoundUp); the epilogue then reads C at a clamped column.
  tiled(v.args) = s.epilogue(acc(v.args), i, pack ? Halide::min(j, static_cast<int>(s.n - 1)) : Expr(j));
  Var ji("ji");
  Var fused =
      tile_product(tiled, v, s, col_tile, row_tile, pack ? TailStrategy::RoundUp : TailStrategy::ShiftInwards, ji);
  if (vec > 1) tiled.vectorize(ji, vec);

  acc.compute_at(tiled, fused);
  if (vec > 1) acc.vectorize(j, vec);
  acc.unroll(i);
  if (rk) {
    Halide::Stage update = acc.update();
    Var jv("jv"), jvo("jvo");
    if (vec > 1) {
      update.split(j, jvo, jv, vec, TailStrategy::RoundUp).reorder(jv, jvo, i, rk->x).vectorize(jv).unroll(jvo);
    } else {
      update.reorder(j, i, rk->x);
      if (col_tile <= 8) update.unroll(j);
    }
    update.unroll(i);
  }
  return tiled;
}

/// The product itself as the node's output where it can be one: it is already computed at
/// root in tiles, and a pure copy of it into the output was a second pass over a result
/// that leaves L2 meanwhile (Winograd's 16 products of 64x64 by 64x144 in ResNet-18's
/// untuned artifact: 0.111 -> 0.068 ms per call in the model, 0.061 -> 0.054 alone). Not
/// on a GPU or for Halide's autoschedulers (their own placement), nor where the product's
/// element type is not the output's (float16 sums in float32) or its tiles run past it.
std::optional<TensorFunc> product_as_output(const ComputeContext &ctx, const Func &product, bool tiles_inside) {
  const TensorType &out = ctx.output_type(0);
  if (ctx.gpu || ctx.unscheduled || !tiles_inside || product.output_types().at(0) != halide_type(out.dtype)) return std::nullopt;
  TensorFunc result;
  result.func = product;
  result.dtype = out.dtype;
  result.shape = out.shape;
  result.scheduled = true;
  return result;
}

/// B's matrix shape [K, N] from its panels (panel_matmul_weights); fails on any other shape.
Shape panel_matrix_shape(const ComputeContext &ctx, const TensorFunc &b) {
  const int64_t width = matmul_panel_width(ctx.node);
  const std::optional<Shape> matrix = matrix_of_panels(b.shape, width);
  if (!matrix) ctx.fail("B " + shape_to_string(b.shape) + " is not panels of " + std::to_string(width) + " columns");
  return *matrix;
}

/// Element (row k, column j) of a B stored as panels [N / width, K, width].
MatrixRead panel_reader(const TensorFunc &b, int64_t width) {
  const int w = static_cast<int>(width);
  return [b, w](Expr row, Expr col, const std::vector<Expr> &) { return b.at({col / w, row, col % w}); };
}

/// Element of a MatMul operand with numpy batch broadcasting; 1-D operands have no batch.
Expr matmul_operand(const TensorFunc &t, Expr row, Expr col, const std::vector<Expr> &out_batch, bool is_a) {
  if (t.rank() == 1) return t.at({is_a ? col : row});
  std::vector<Expr> index;
  const size_t own_batch = t.shape.size() - 2;
  for (size_t d = 0; d < own_batch; ++d) {
    // Size-1 dims broadcast (and need no batch index: packed operands pass none).
    index.push_back(t.shape[d] == 1 ? Expr(0) : out_batch[out_batch.size() - own_batch + d]);
  }
  index.push_back(row);
  index.push_back(col);
  return t.at(index);
}

Halide::Type accumulator_type(DType dtype) {
  if (dtype_is_float(dtype)) return math_type(dtype);
  return halide_type(dtype);
}

/// The tunable form of a product: acc over the output's own axes (make_vars) summed over K,
/// exposed to the schedule, and the output applying the epilogue; no schedule here.
TensorFunc plain_product(const ComputeContext &ctx, const MatmulSpec &s) {
  const TensorType &out = ctx.output_type(0);
  const size_t rank = out.shape.size();
  std::vector<Var> vars = make_vars(rank);
  std::vector<Var> halide_order(vars.rbegin(), vars.rend());
  Expr i = vars[rank - 2], j = vars[rank - 1];
  std::vector<Expr> batch(vars.begin(), vars.end() - 2);
  Func acc(s.name + "_acc");
  acc(halide_order) = Halide::Internal::make_zero(s.acc_type);
  if (s.k > 0) {
    RDom rk(Halide::Region{{0, static_cast<int>(s.k)}}, s.name + "_k");
    acc(halide_order) += Halide::cast(s.acc_type, s.a(i, rk, batch)) * Halide::cast(s.acc_type, s.b(rk, j, batch));
    ctx.expose_stage(TensorFunc{acc, out.dtype, out.shape});
  }
  return define_tensor(s.name, out.dtype, out.shape, [&](const std::vector<Expr> &index) {
    return s.epilogue(acc(std::vector<Expr>(index.rbegin(), index.rend())), index[rank - 2], index[rank - 1]);
  });
}

/// A MatMul of an A with batch dims by a 2-D B as one product of batch x M rows.
TensorFunc folded_batch_matmul(const ComputeContext &ctx, MatmulSpec s, const TensorFunc &a) {
  const TensorType &out = ctx.output_type(0);
  const Shape batch = s.batch;  // A's own batch dims (B has none)
  const int64_t m = s.m;
  // Row r of the folded product: row r % m of batch element r / m (row-major over the batch).
  auto unfold = [batch, m](Expr row) {
    std::vector<Expr> index(batch.size() + 1);
    index.back() = row % static_cast<int>(m);
    Expr rest = row / static_cast<int>(m);
    for (size_t d = batch.size(); d-- > 0;) {
      index[d] = batch[d] == 1 ? Expr(0) : (d == 0 ? rest : rest % static_cast<int>(batch[d]));
      if (d > 0) rest = rest / static_cast<int>(batch[d]);
    }
    return index;
  };
  s.m = m * shape_numel(batch);
  s.batch.clear();
  s.a = [a, unfold](Expr row, Expr col, const std::vector<Expr> &) {
    std::vector<Expr> index = unfold(row);
    index.push_back(col);
    return a.at(index);
  };
  Func product = tiled_matmul(s);
  const size_t batch_rank = batch.size();
  return define_tensor(s.name, out.dtype, out.shape, [&](const std::vector<Expr> &index) {
    Expr row = index[0];
    for (size_t d = 1; d <= batch_rank; ++d) row = row * static_cast<int>(d < batch_rank ? batch[d] : m) + index[d];
    return product(index.back(), row);
  });
}

std::vector<TensorFunc> matmul_rule(const ComputeContext &ctx) {
  const TensorFunc &a = ctx.input(0), &b = ctx.input(1);
  const TensorType &out = ctx.output_type(0);
  MatmulSpec s;
  s.name = halide_name(ctx.node.name.empty() ? "matmul" : ctx.node.name);
  s.b_panel = matmul_panel_width(ctx.node);
  const Shape b_shape = s.b_panel > 1 ? panel_matrix_shape(ctx, b) : b.shape;
  const int b_rank = static_cast<int>(b_shape.size());
  s.m = a.rank() == 1 ? 1 : a.shape[a.rank() - 2];
  s.k = a.shape.back();
  s.n = b_rank == 1 ? 1 : b_shape.back();
  // Output batch dims: everything but the trailing matrix dims that survive.
  const size_t kept_matrix_dims = (a.rank() != 1) + (b_rank != 1);
  s.batch.assign(out.shape.begin(), out.shape.end() - kept_matrix_dims);
  s.a = [a](Expr row, Expr col, const std::vector<Expr> &batch) { return matmul_operand(a, row, col, batch, true); };
  s.b = s.b_panel > 1 ? panel_reader(b, s.b_panel)
                      : [b](Expr row, Expr col, const std::vector<Expr> &batch) {
                          return matmul_operand(b, row, col, batch, false);
                        };
  s.acc_type = accumulator_type(out.dtype);
  s.epilogue = [](Expr acc, Expr, Expr) { return acc; };
  s.b_batched = b_rank > 2 && shape_numel(Shape(b_shape.begin(), b_shape.end() - 2)) > 1;
  if (ctx.plain && a.rank() >= 2 && b_rank >= 2) return {plain_product(ctx, s)};
  // One B for a batch of A's: the batch is more rows of one product (a ConvNeXt or
  // transformer Linear over [1, H, W, C] tokens), so the register tile spans them and B is
  // read once per tile of rows, not once per batch element.
  if (a.rank() >= 3 && b_rank == 2 && s.m > 0 && shape_numel(s.batch) > 1) return {folded_batch_matmul(ctx, s, a)};
  bool tiles_inside = false;
  Func product = tiled_matmul(s, &tiles_inside);

  const bool a_vector = a.rank() == 1, b_vector = b_rank == 1;
  if (!a_vector && !b_vector)
    if (auto direct = product_as_output(ctx, product, tiles_inside)) return {*direct};
  const size_t batch_rank = s.batch.size();
  return {define_tensor(s.name, out.dtype, out.shape, [&](const std::vector<Expr> &index) {
    // Halide order of the product: (j, i, batch innermost-first).
    Expr i = a_vector ? Expr(0) : index[batch_rank];
    Expr j = b_vector ? Expr(0) : index.back();
    std::vector<Expr> args = {j, i};
    for (size_t d = batch_rank; d-- > 0;) args.push_back(index[d]);
    return product(args);
  })};
}

std::vector<TensorFunc> gemm_rule(const ComputeContext &ctx) {
  const TensorFunc &a = ctx.input(0), &b = ctx.input(1);
  const TensorType &out = ctx.output_type(0);
  const bool trans_a = ctx.attrs().get_int("transA", 0) != 0, trans_b = ctx.attrs().get_int("transB", 0) != 0;
  const float alpha = ctx.attrs().get_float("alpha", 1.0f), beta = ctx.attrs().get_float("beta", 1.0f);
  MatmulSpec s;
  s.name = halide_name(ctx.node.name.empty() ? "gemm" : ctx.node.name);
  s.m = out.shape[0];
  s.n = out.shape[1];
  s.k = trans_a ? a.shape[0] : a.shape[1];
  s.a = [a, trans_a](Expr row, Expr col, const std::vector<Expr> &) {
    return trans_a ? a.at({col, row}) : a.at({row, col});
  };
  s.b_panel = matmul_panel_width(ctx.node);
  if (s.b_panel > 1) {
    if (trans_b) ctx.fail(std::string("a Gemm with ") + kMatmulPanelAttr + " cannot have transB");
    panel_matrix_shape(ctx, b);
    s.b = panel_reader(b, s.b_panel);
  } else {
    s.b = [b, trans_b](Expr row, Expr col, const std::vector<Expr> &) {
      return trans_b ? b.at({col, row}) : b.at({row, col});
    };
  }
  s.b_rows_contiguous = !trans_b || s.n == 1;
  s.a_rows_contiguous = !trans_a || s.m == 1;
  s.acc_type = accumulator_type(out.dtype);
  const bool has_c = ctx.has_input(2) && beta != 0.0f;
  TensorFunc c = has_c ? ctx.input(2) : TensorFunc{};
  Halide::Type t = s.acc_type;
  // Scales by alpha and beta in the accumulator type for floats; integer products scale
  // in double and convert back, so a fractional alpha is not truncated to 0 first.
  auto scale = [t](Expr e, float factor) {
    if (factor == 1.0f) return e;
    if (t.is_float()) return e * Halide::cast(t, factor);
    return Halide::cast(t, Halide::cast(Halide::Float(64), e) * Expr(static_cast<double>(factor)));
  };
  s.epilogue = [=](Expr acc, Expr i, Expr j) {
    Expr result = scale(acc, alpha);
    if (has_c) result = result + scale(Halide::cast(t, broadcast_read(c, {i, j})), beta);
    return result;
  };
  if (ctx.plain) return {plain_product(ctx, s)};
  bool tiles_inside = false;
  Func product = tiled_matmul(s, &tiles_inside);
  // The product's Halide order (j, i) is the output's.
  if (auto direct = product_as_output(ctx, product, tiles_inside)) return {*direct};
  return {define_tensor(
      s.name, out.dtype, out.shape, [&](const std::vector<Expr> &index) { return product(index[1], index[0]); })};
}

}  // namespace

void register_nn_compute(ComputeRegistry &r) {
  r.add("MatMul", matmul_rule);
  r.add("Gemm", gemm_rule);
}

}  // namespace tessel
