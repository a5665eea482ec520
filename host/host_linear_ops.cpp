// Matrix products on host tensors: MatMul (numpy batch broadcasting, 1-D operands) and Gemm.
// One blocked kernel serves both, accumulating in the element type (float32 in float, as
// the executor's kernels do; integers wrap), parallel over column blocks on the deploy
// runtime's pool, float32 in AVX2 with FMA where the CPU has them.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "base/spin_pool.h"

#include "host/host_op_families.h"
#include "host/host_op_util.h"

namespace tessel {
namespace {

using namespace host_util;


constexpr int64_t kBlockN = 256, kBlockK = 256;

/// One panel of the product: c[m x jn] += a[m x kn] * panel[kn x jn], the panel dense with
/// rows of kBlockN. Four rows of a at a time, so each element of the panel loaded feeds four
/// products; the inner loop runs over contiguous j and vectorizes. Every element of c sums
/// its products in increasing k.
/// Always inlined, so the AVX2 clone below compiles this body for AVX2 rather than calling
/// the baseline copy.
template <typename T>
inline __attribute__((always_inline)) void multiply_add_panel(const T *a, int64_t lda, const T *panel, T *c,
                                                              int64_t ldc, int64_t m, int64_t kn, int64_t jn) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    T *c0 = c + i * ldc, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;
    const T *a0 = a + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
    for (int64_t p = 0; p < kn; ++p) {
      const T x0 = a0[p], x1 = a1[p], x2 = a2[p], x3 = a3[p];
      const T *row = panel + p * kBlockN;
      for (int64_t j = 0; j < jn; ++j) {
        const T y = row[j];
        c0[j] = wrapping_add(c0[j], wrapping_mul(x0, y));
        c1[j] = wrapping_add(c1[j], wrapping_mul(x1, y));
        c2[j] = wrapping_add(c2[j], wrapping_mul(x2, y));
        c3[j] = wrapping_add(c3[j], wrapping_mul(x3, y));
      }
    }
  }
  for (; i < m; ++i) {
    T *ci = c + i * ldc;
    const T *ai = a + i * lda;
    for (int64_t p = 0; p < kn; ++p) {
      const T x = ai[p];
      const T *row = panel + p * kBlockN;
      for (int64_t j = 0; j < jn; ++j) ci[j] = wrapping_add(ci[j], wrapping_mul(x, row[j]));
    }
  }
}

/// The float32 panel, compiled a second time for x86-64-v3 (AVX2, FMA) and picked at load by the CPU
/// (the deploy runtime is built for baseline x86-64; box heads spend most of a detector's
/// host time here).
__attribute__((target_clones("arch=x86-64-v3", "default"))) void multiply_add_panel_float(
    const float *a, int64_t lda, const float *panel, float *c, int64_t ldc, int64_t m, int64_t kn, int64_t jn) {
  multiply_add_panel<float>(a, lda, panel, c, ldc, m, kn, jn);
}

/// c[m x n] += a[m x k] * b, where b is [k x n] (ldb) or, transposed, [n x k] (ldb). Blocked
/// so a panel of b (kBlockK x kBlockN, copied upright into a buffer of its own) stays in
/// cache while the rows of a stream past; the column blocks run on the deploy runtime's
/// thread pool when the product is large.
template <typename T>
void multiply_add(const T *a, int64_t lda, const T *b, int64_t ldb, bool b_transposed, T *c, int64_t ldc, int64_t m,
                  int64_t k, int64_t n) {
  const int64_t blocks = (n + kBlockN - 1) / kBlockN;
  auto column_block = [&](int64_t block) {
    const int64_t j0 = block * kBlockN, jn = std::min(n, j0 + kBlockN) - j0;
    std::vector<T> panel(static_cast<size_t>(kBlockK * kBlockN));
    for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
      const int64_t kn = std::min(k, k0 + kBlockK) - k0;
      if (b_transposed) {
        // In 16 x 16 tiles, so reads and writes both stay within a few cache lines.
        constexpr int64_t kTile = 16;
        for (int64_t jt = 0; jt < jn; jt += kTile)
          for (int64_t pt = 0; pt < kn; pt += kTile)
            for (int64_t j = jt; j < std::min(jn, jt + kTile); ++j)
              for (int64_t p = pt; p < std::min(kn, pt + kTile); ++p) panel[p * kBlockN + j] = b[(j0 + j) * ldb + k0 + p];
      } else {
        for (int64_t p = 0; p < kn; ++p) std::copy_n(b + (k0 + p) * ldb + j0, jn, panel.data() + p * kBlockN);
      }
      if constexpr (std::is_same_v<T, float>)
        multiply_add_panel_float(a + k0, lda, panel.data(), c + j0, ldc, m, kn, jn);
      else
        multiply_add_panel<T>(a + k0, lda, panel.data(), c + j0, ldc, m, kn, jn);
    }
  };
  // Below a few MFLOP a loop on the pool costs more than it saves.
  if (m * k * n < (int64_t{1} << 22) || blocks < 2) {
    for (int64_t block = 0; block < blocks; ++block) column_block(block);
    return;
  }
  auto task = [](void *, int block, uint8_t *closure) {
    (*reinterpret_cast<decltype(column_block) *>(closure))(block);
    return 0;
  };
  spin_pool_par_for(nullptr, task, 0, static_cast<int>(blocks), reinterpret_cast<uint8_t *>(&column_block));
}

/// A 2-D tensor transposed, in tiles so both sides stay in cache.
Tensor transposed_2d(const Tensor &in) {
  const int64_t rows = in.shape()[0], cols = in.shape()[1];
  Tensor out(in.dtype(), {cols, rows});
  constexpr int64_t kTile = 32;
  visit_by_size(in.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U *src = in.data_as<U>();
    U *dst = out.data_as<U>();
    for (int64_t r0 = 0; r0 < rows; r0 += kTile)
      for (int64_t c0 = 0; c0 < cols; c0 += kTile)
        for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r)
          for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c) dst[c * rows + r] = src[r * cols + c];
  });
  return out;
}

std::vector<Tensor> matmul(const HostCall &call) {
  const Tensor &a = required_input(call, 0), &b = required_input(call, 1);
  if (a.dtype() != b.dtype())
    fail("A and B have different types " + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
  if (a.rank() < 1 || b.rank() < 1) fail("A and B must have rank >= 1");
  // 1-D operands act as a row (A) or a column (B); that axis is not in the output.
  const bool a_vector = a.rank() == 1, b_vector = b.rank() == 1;
  const Shape &as = a.shape(), &bs = b.shape();
  const int64_t m = a_vector ? 1 : as[as.size() - 2], k = as.back();
  const int64_t kb = b_vector ? bs[0] : bs[bs.size() - 2], n = b_vector ? 1 : bs.back();
  if (k != kb) fail("inner dimensions do not match: A " + shape_to_string(as) + ", B " + shape_to_string(bs));
  Tensor out = new_output(call);
  require_dtype(out, a.dtype(), "the output");
  const size_t matrix_axes = (a_vector ? 0 : 1) + (b_vector ? 0 : 1);
  if (static_cast<size_t>(out.rank()) < matrix_axes) fail("the output rank is too small");
  const Shape batch(out.shape().begin(), out.shape().end() - static_cast<int64_t>(matrix_axes));
  if (shape_numel(batch) * m * n != out.numel()) fail("the output shape does not match A and B");
  const Shape a_batch = a_vector ? Shape{} : Shape(as.begin(), as.end() - 2);
  const Shape b_batch = b_vector ? Shape{} : Shape(bs.begin(), bs.end() - 2);
  // Matrix offsets per batch index: broadcast strides scaled by each operand's matrix size.
  std::array<std::vector<int64_t>, 3> strides = {shape_strides(batch), broadcast_strides(a_batch, batch),
                                                 broadcast_strides(b_batch, batch)};
  const int64_t sizes[3] = {m * n, m * k, k * n};
  for (size_t op = 0; op < 3; ++op)
    for (int64_t &s : strides[op]) s *= sizes[op];
  visit_numeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *pa = a.data_as<T>(), *pb = b.data_as<T>();
    T *pc = out.data_as<T>();
    walk_rows<3>(batch, strides, {0, 0, 0},
                 [&](const std::array<int64_t, 3> &at, const std::array<int64_t, 3> &step, int64_t count) {
                   for (int64_t j = 0; j < count; ++j)
                     multiply_add(pa + at[1] + j * step[1], k, pb + at[2] + j * step[2], n, false,
                                  pc + at[0] + j * step[0], n, m, k, n);
                 });
  });
  return single(out);
}

/// Gemm: alpha * A' B' + beta * C, with A' and B' optionally transposed and C broadcast to
/// [M, N]. A transposed A is copied upright first; a transposed B (the usual fully connected
/// layer) is read panel by panel.
std::vector<Tensor> gemm(const HostCall &call) {
  const Tensor &a = required_input(call, 0), &b = required_input(call, 1);
  const Tensor *c = optional_input(call, 2);
  if (a.dtype() != b.dtype())
    fail("A and B have different types " + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
  if (a.rank() != 2 || b.rank() != 2) fail("A and B must be 2-D");
  const Attributes &attrs = call.node.attributes;
  const bool trans_a = attrs.get_int("transA", 0) != 0, trans_b = attrs.get_int("transB", 0) != 0;
  const float alpha = attrs.get_float("alpha", 1.0f), beta = attrs.get_float("beta", 1.0f);
  const Tensor upright_a = trans_a ? transposed_2d(a) : a;
  const int64_t m = upright_a.shape()[0], k = upright_a.shape()[1], n = b.shape()[trans_b ? 0 : 1];
  if (b.shape()[trans_b ? 1 : 0] != k)
    fail("inner dimensions do not match: A " + shape_to_string(a.shape()) + (trans_a ? " (transposed)" : "") + ", B " +
         shape_to_string(b.shape()) + (trans_b ? " (transposed)" : ""));
  Tensor out = new_output(call);
  require_dtype(out, a.dtype(), "the output");
  if (out.shape() != Shape{m, n}) fail("the output shape must be [M, N]");
  const bool has_c = c && beta != 0.0f;
  if (has_c && c->dtype() != a.dtype())
    fail("C has type " + dtype_name(c->dtype()) + ", A has " + dtype_name(a.dtype()));
  visit_numeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T *pc = out.data_as<T>();
    multiply_add(upright_a.data_as<T>(), k, b.data_as<T>(), trans_b ? k : n, trans_b, pc, n, m, k, n);
    // Floats scale in their own type; integers in double, so a fractional factor is not
    // truncated to 0 first.
    auto scale = [](T v, float factor) {
      if (factor == 1.0f) return v;
      if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v * static_cast<T>(factor));
      else return convert_value<T>(static_cast<double>(v) * static_cast<double>(factor));
    };
    if (alpha != 1.0f)
      for (int64_t i = 0; i < m * n; ++i) pc[i] = scale(pc[i], alpha);
    if (has_c) {
      const T *pcin = c->data_as<T>();
      walk_rows<2>(out.shape(), {shape_strides(out.shape()), broadcast_strides(c->shape(), out.shape())}, {0, 0},
                   [&](const std::array<int64_t, 2> &at, const std::array<int64_t, 2> &step, int64_t count) {
                     for (int64_t j = 0; j < count; ++j)
                       pc[at[0] + j] = wrapping_add(pc[at[0] + j], scale(pcin[at[1] + j * step[1]], beta));
                   });
    }
  });
  return single(out);
}

}  // namespace

void register_linear_host_ops() {
  register_host_op("MatMul", in_float32(matmul));
  register_host_op("Gemm", in_float32(gemm));
}

}  // namespace tessel
