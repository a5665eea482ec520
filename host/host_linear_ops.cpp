// Matrix products on host tensors: MatMul (numpy batch broadcasting, 1-D operands) and Gemm.
// One blocked kernel serves both, accumulating in the element type (float32 in float, as
// the executor's kernels do; integers wrap). Fast enough for the box heads of detection
// models on one core: a [150 x 12544] x [12544 x 1024] product takes about 0.3 s.
#include <algorithm>

#include "host/host_op_families.h"
#include "host/host_op_util.h"

namespace tessel {
namespace {

using namespace host_util;

std::vector<Tensor> single(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

/// c[m x n] += a[m x k] * b[k x n], row-major with leading dimensions lda, ldb, ldc. Blocked
/// so a panel of b (kBlockK x kBlockN) stays in cache while the rows of a stream past, four
/// rows at a time so each element of b loaded feeds four products; the inner loop runs over
/// contiguous j and vectorizes. Every element of c sums its products in increasing k.
template <typename T>
void multiply_add(const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc, int64_t m, int64_t k,
                  int64_t n) {
  constexpr int64_t kBlockN = 256, kBlockK = 256;
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    const int64_t j1 = std::min(n, j0 + kBlockN);
    for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
      const int64_t k1 = std::min(k, k0 + kBlockK);
      int64_t i = 0;
      for (; i + 4 <= m; i += 4) {
        T *c0 = c + i * ldc, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;
        const T *a0 = a + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        for (int64_t p = k0; p < k1; ++p) {
          const T x0 = a0[p], x1 = a1[p], x2 = a2[p], x3 = a3[p];
          const T *row = b + p * ldb;
          for (int64_t j = j0; j < j1; ++j) {
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
        for (int64_t p = k0; p < k1; ++p) {
          const T x = ai[p];
          const T *row = b + p * ldb;
          for (int64_t j = j0; j < j1; ++j) ci[j] = wrapping_add(ci[j], wrapping_mul(x, row[j]));
        }
      }
    }
  }
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
                     multiply_add(pa + at[1] + j * step[1], k, pb + at[2] + j * step[2], n, pc + at[0] + j * step[0], n,
                                  m, k, n);
                 });
  });
  return single(out);
}

/// Gemm: alpha * A' B' + beta * C, with A' and B' optionally transposed and C broadcast to
/// [M, N]. Transposed operands are copied upright first, so the kernel reads rows.
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
  const Tensor upright_b = trans_b ? transposed_2d(b) : b;
  const int64_t m = upright_a.shape()[0], k = upright_a.shape()[1], n = upright_b.shape()[1];
  if (upright_b.shape()[0] != k)
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
    multiply_add(upright_a.data_as<T>(), k, upright_b.data_as<T>(), n, pc, n, m, k, n);
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
