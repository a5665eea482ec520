// Tests of Conv, ConvTranspose, MatMul and Gemm against hand-computed values and naive
// reference loops over many (small, odd) shapes, plus error paths and a hidden benchmark.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>

#include "executor/kernel_cache.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

Attributes attrs(std::initializer_list<std::pair<std::string, AttributeValue>> list) {
  Attributes a;
  for (const auto &[name, value] : list) a.set(name, value);
  return a;
}

std::vector<float> floats(const Tensor &t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(t.element_as_double(i)));
  return v;
}

Tensor random_tensor(Shape shape, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

/// Runs a node on the given inputs (all fed at run time); returns its single output.
Tensor run_op(const std::string &op, const std::vector<Tensor> &inputs, Attributes a = {}, int64_t opset = 17) {
  std::vector<TensorType> types;
  for (const Tensor &t : inputs) types.push_back(t.type());
  return run_graph(single_node_graph(op, types, 1, std::move(a), {}, opset), inputs)[0];
}

/// The error message of running a node that must fail.
std::string run_error(const std::string &op, const std::vector<Tensor> &inputs, Attributes a = {}) {
  std::vector<TensorType> types;
  for (const Tensor &t : inputs) types.push_back(t.type());
  GraphExecutor executor(std::make_shared<const Graph>(single_node_graph(op, types, 1, std::move(a))));
  auto out = executor.run(inputs);
  REQUIRE_FALSE(out.ok());
  return out.error().message;
}

void check_close(const Tensor &got, const Shape &shape, const std::vector<double> &want, double tol = 1e-4) {
  REQUIRE(got.shape() == shape);
  REQUIRE(static_cast<size_t>(got.numel()) == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got.element_as_double(static_cast<int64_t>(i)) == Approx(want[i]).margin(tol));
  }
}

// ---- Naive references -------------------------------------------------------------------

/// numpy.matmul for float32 tensors of any rank >= 1.
std::pair<Shape, std::vector<double>> reference_matmul(const Tensor &a, const Tensor &b) {
  Shape as = a.rank() == 1 ? Shape{1, a.shape()[0]} : a.shape();
  Shape bs = b.rank() == 1 ? Shape{b.shape()[0], 1} : b.shape();
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const size_t batch_rank = std::max(as.size(), bs.size()) - 2;
  Shape batch(batch_rank, 1);
  for (size_t d = 0; d < batch_rank; ++d) {
    auto dim = [&](const Shape &s) {
      const int64_t own = static_cast<int64_t>(s.size()) - 2,
                    at = static_cast<int64_t>(d) - (static_cast<int64_t>(batch_rank) - own);
      return at < 0 ? int64_t{1} : s[at];
    };
    batch[d] = dim(as) == 1 ? dim(bs) : dim(as);  // numpy: a size-1 dim takes the other's size, 0 included
  }
  const int64_t batches = shape_numel(batch);
  std::vector<double> out(batches * m * n);
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Offsets of this batch element in a and b (size-1 dims broadcast).
    auto offset = [&](const Shape &s) {
      int64_t rem = bi, off = 0, stride = s[s.size() - 2] * s.back();
      for (size_t d = batch_rank; d-- > 0;) {
        const int64_t idx = rem % batch[d];
        rem /= batch[d];
        const int64_t own = static_cast<int64_t>(s.size()) - 2,
                      at = static_cast<int64_t>(d) - (static_cast<int64_t>(batch_rank) - own);
        if (at < 0) continue;
        if (s[at] != 1) off += idx * stride;
        stride *= s[at];
      }
      return off;
    };
    const float *pa = a.data_as<float>() + offset(as), *pb = b.data_as<float>() + offset(bs);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t kk = 0; kk < k; ++kk) sum += double(pa[i * k + kk]) * pb[kk * n + j];
        out[(bi * m + i) * n + j] = sum;
      }
  }
  Shape shape = batch;
  if (a.rank() != 1) shape.push_back(m);
  if (b.rank() != 1) shape.push_back(n);
  return {shape, out};
}

/// Conv with explicit pads over 1-3 spatial dims (missing dims act as size 1).
struct ConvParams {
  std::vector<int64_t> strides, dilations, pads;  // pads: begins then ends
  int64_t group = 1;
};

std::vector<double> reference_conv(const Tensor &x, const Tensor &w, const Tensor *bias, const ConvParams &p,
                                   const Shape &out_shape) {
  const size_t s = x.rank() - 2;
  auto dim3 = [&](const Shape &sh, size_t d) { return d < s ? sh[2 + d] : int64_t{1}; };
  auto vec3 = [&](const std::vector<int64_t> &v, size_t d, int64_t fallback) { return d < s ? v[d] : fallback; };
  const int64_t n_count = x.shape()[0], c_in = x.shape()[1], m_count = w.shape()[0], cg = w.shape()[1];
  const int64_t mg = m_count / p.group;
  std::vector<double> out(shape_numel(out_shape));
  int64_t in_sz[3], k_sz[3], o_sz[3], st[3], dl[3], pb[3];
  for (size_t d = 0; d < 3; ++d) {
    in_sz[d] = dim3(x.shape(), d), k_sz[d] = dim3(w.shape(), d), o_sz[d] = dim3(out_shape, d);
    st[d] = vec3(p.strides, d, 1), dl[d] = vec3(p.dilations, d, 1), pb[d] = vec3(p.pads, d, 0);
  }
  const float *px = x.data_as<float>(), *pw = w.data_as<float>();
  size_t idx = 0;
  for (int64_t n = 0; n < n_count; ++n)
    for (int64_t m = 0; m < m_count; ++m)
      for (int64_t o0 = 0; o0 < o_sz[0]; ++o0)
        for (int64_t o1 = 0; o1 < o_sz[1]; ++o1)
          for (int64_t o2 = 0; o2 < o_sz[2]; ++o2) {
            double sum = bias ? bias->data_as<float>()[m] : 0.0;
            const int64_t g = m / mg;
            for (int64_t ic = 0; ic < cg; ++ic)
              for (int64_t k0 = 0; k0 < k_sz[0]; ++k0)
                for (int64_t k1 = 0; k1 < k_sz[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k_sz[2]; ++k2) {
                    const int64_t i0 = o0 * st[0] + k0 * dl[0] - pb[0], i1 = o1 * st[1] + k1 * dl[1] - pb[1],
                                  i2 = o2 * st[2] + k2 * dl[2] - pb[2];
                    if (i0 < 0 || i0 >= in_sz[0] || i1 < 0 || i1 >= in_sz[1] || i2 < 0 || i2 >= in_sz[2]) continue;
                    const int64_t c = g * cg + ic;
                    const double xv = px[(((n * c_in + c) * in_sz[0] + i0) * in_sz[1] + i1) * in_sz[2] + i2];
                    const double wv = pw[(((m * cg + ic) * k_sz[0] + k0) * k_sz[1] + k1) * k_sz[2] + k2];
                    sum += xv * wv;
                  }
            out[idx++] = sum;
          }
  return out;
}

/// ConvTranspose by scattering every input element; pads crop the start of the full output.
std::vector<double> reference_conv_transpose(const Tensor &x, const Tensor &w, const Tensor *bias, const ConvParams &p,
                                             const Shape &out_shape) {
  const size_t s = x.rank() - 2;
  auto dim3 = [&](const Shape &sh, size_t d) { return d < s ? sh[2 + d] : int64_t{1}; };
  auto vec3 = [&](const std::vector<int64_t> &v, size_t d, int64_t fallback) { return d < s ? v[d] : fallback; };
  const int64_t n_count = x.shape()[0], c_in = x.shape()[1], mg = w.shape()[1], m_count = out_shape[1];
  const int64_t cg = c_in / p.group;
  int64_t in_sz[3], k_sz[3], o_sz[3], st[3], dl[3], pb[3];
  for (size_t d = 0; d < 3; ++d) {
    in_sz[d] = dim3(x.shape(), d), k_sz[d] = dim3(w.shape(), d), o_sz[d] = dim3(out_shape, d);
    st[d] = vec3(p.strides, d, 1), dl[d] = vec3(p.dilations, d, 1), pb[d] = vec3(p.pads, d, 0);
  }
  std::vector<double> out(shape_numel(out_shape), 0.0);
  const float *px = x.data_as<float>(), *pw = w.data_as<float>();
  for (int64_t n = 0; n < n_count; ++n)
    for (int64_t c = 0; c < c_in; ++c)
      for (int64_t i0 = 0; i0 < in_sz[0]; ++i0)
        for (int64_t i1 = 0; i1 < in_sz[1]; ++i1)
          for (int64_t i2 = 0; i2 < in_sz[2]; ++i2) {
            const double xv = px[(((n * c_in + c) * in_sz[0] + i0) * in_sz[1] + i1) * in_sz[2] + i2];
            const int64_t g = c / cg;
            for (int64_t ml = 0; ml < mg; ++ml)
              for (int64_t k0 = 0; k0 < k_sz[0]; ++k0)
                for (int64_t k1 = 0; k1 < k_sz[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k_sz[2]; ++k2) {
                    const int64_t o0 = i0 * st[0] + k0 * dl[0] - pb[0], o1 = i1 * st[1] + k1 * dl[1] - pb[1],
                                  o2 = i2 * st[2] + k2 * dl[2] - pb[2];
                    if (o0 < 0 || o0 >= o_sz[0] || o1 < 0 || o1 >= o_sz[1] || o2 < 0 || o2 >= o_sz[2]) continue;
                    const int64_t m = g * mg + ml;
                    const double wv = pw[(((c * mg + ml) * k_sz[0] + k0) * k_sz[1] + k1) * k_sz[2] + k2];
                    out[(((n * m_count + m) * o_sz[0] + o0) * o_sz[1] + o1) * o_sz[2] + o2] += xv * wv;
                  }
          }
  if (bias)
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t m = (static_cast<int64_t>(i) / (o_sz[0] * o_sz[1] * o_sz[2])) % m_count;
      out[i] += bias->data_as<float>()[m];
    }
  return out;
}

}  // namespace

// ---- MatMul -----------------------------------------------------------------------------

TEST_CASE("MatMul multiplies 2-D matrices", "[matmul]") {
  Tensor a = float_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = float_tensor({3, 2}, {7, 8, 9, 10, 11, 12});
  check_close(run_op("MatMul", {a, b}), {2, 2}, {58, 64, 139, 154});
}

TEST_CASE("MatMul promotes 1-D operands and drops their dimension", "[matmul]") {
  Tensor v = float_tensor({3}, {1, 2, 3});
  Tensor m = float_tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  check_close(run_op("MatMul", {v, m}), {2}, {22, 28});
  Tensor mt = float_tensor({2, 3}, {1, 3, 5, 2, 4, 6});
  check_close(run_op("MatMul", {mt, v}), {2}, {22, 28});
  check_close(run_op("MatMul", {v, v}), {}, {14});
  // A 1-D operand against a batched one.
  Tensor batched = float_tensor({2, 3, 1}, {1, 1, 1, 1, 2, 3});
  check_close(run_op("MatMul", {v, batched}), {2, 1}, {6, 14});
}

TEST_CASE("MatMul matches numpy over many shapes, batches and broadcasting", "[matmul]") {
  std::mt19937 rng(7);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1, 1}, {1, 1}},
      {{1, 5}, {5, 1}},
      {{3, 1}, {1, 4}},
      {{2, 7}, {7, 3}},
      {{5, 17}, {17, 33}},
      {{13, 9}, {9, 16}},
      {{16, 16}, {16, 16}},
      {{17, 31}, {31, 47}},
      {{64, 40}, {40, 100}},
      {{100, 64}, {64, 5}},
      {{9, 130}, {130, 200}},
      {{2, 3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {3, 4, 5}},
      {{4, 6}, {3, 6, 20}},
      {{5, 2, 3}, {1, 3, 2}},
      {{7}, {2, 7, 19}},
      {{3, 2, 18, 7}, {7}},
      {{1, 2, 33, 8}, {3, 1, 8, 17}},
      // Winograd's products: N a multiple of three vectors, not two (a 6 x 3 register tile
      // on AVX-512); short K, so tiles are claimed by the thread pool several at a time.
      {{16, 64, 64}, {16, 64, 144}},
      // Claims of several tiles that do not divide the tiles, and a row tail.
      {{200, 10, 80}, {200, 80, 48}},
      // A batch of A's times one 2-D B: one product over batch x M rows.
      {{1, 3, 3, 64}, {64, 48}},
      {{2, 5, 7}, {7, 20}},
      {{3, 1, 4, 16}, {16, 40}},
      {{2, 3, 6, 8}, {8, 17}},
      {{0, 3, 4}, {4, 5}},
      // Dot-product form: a column vector or a very narrow B with a long K.
      {{9, 40}, {40}},
      {{2, 50}, {50, 3}},
      {{2, 3, 1, 33}, {33, 2}},
      {{1, 1000}, {1000, 1}}};
  // With the register tiles of each vector width (compute/vector_isa.h), whatever this host has.
  for (const char *bits : {"128", "256", "512"}) {
    setenv("TESSEL_VECTOR_BITS", bits, 1);
    const int compiled_before = kernel_cache_stats().compiled;
    int non_empty = 0;  // an empty output needs no kernel
    for (const auto &[sa, sb] : cases) {
      INFO("TESSEL_VECTOR_BITS=" << bits << " A " << shape_to_string(sa) << " B " << shape_to_string(sb));
      Tensor a = random_tensor(sa, rng), b = random_tensor(sb, rng);
      auto [shape, want] = reference_matmul(a, b);
      check_close(run_op("MatMul", {a, b}), shape, want);
      non_empty += !want.empty();
    }
    // Each width compiles its own kernels (the kernel cache names the width).
    CHECK(kernel_cache_stats().compiled >= compiled_before + non_empty);
  }
  unsetenv("TESSEL_VECTOR_BITS");
}

TEST_CASE("MatMul on integers, doubles and float16", "[matmul]") {
  Tensor a(DType::Int32, {2, 2}), b(DType::Int32, {2, 2});
  for (int i = 0; i < 4; ++i) a.data_as<int32_t>()[i] = i + 1, b.data_as<int32_t>()[i] = 5 + i;
  Tensor y = run_op("MatMul", {a, b});
  CHECK(y.dtype() == DType::Int32);
  CHECK(y.to_int64_vector() == std::vector<int64_t>{19, 22, 43, 50});

  Tensor ad(DType::Float64, {3, 17}), bd(DType::Float64, {17, 9});
  for (int i = 0; i < ad.numel(); ++i) ad.data_as<double>()[i] = 0.25 * (i % 7) - 0.5;
  for (int i = 0; i < bd.numel(); ++i) bd.data_as<double>()[i] = 0.125 * (i % 5) + 1;
  Tensor yd = run_op("MatMul", {ad, bd});
  REQUIRE(yd.dtype() == DType::Float64);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 9; ++j) {
      double want = 0;
      for (int k = 0; k < 17; ++k) want += ad.data_as<double>()[i * 17 + k] * bd.data_as<double>()[k * 9 + j];
      CHECK(yd.data_as<double>()[i * 9 + j] == Approx(want).epsilon(1e-12));
    }

  Tensor ah(DType::Float16, {2, 2}), bh(DType::Float16, {2, 2});
  for (int i = 0; i < 4; ++i) ah.set_element_from_double(i, i + 1), bh.set_element_from_double(i, 0.5 * i);
  Tensor yh = run_op("MatMul", {ah, bh});
  CHECK(yh.dtype() == DType::Float16);
  CHECK(floats(yh) == std::vector<float>{2, 3.5, 4, 7.5});
}

TEST_CASE("MatMul with an empty inner dimension gives zeros", "[matmul]") {
  Tensor a(DType::Float32, {2, 0}), b(DType::Float32, {0, 3});
  check_close(run_op("MatMul", {a, b}), {2, 3}, std::vector<double>(6, 0.0));
}

TEST_CASE("MatMul rejects mismatched inner dimensions", "[matmul][error]") {
  std::string message = run_error("MatMul", {Tensor(DType::Float32, {2, 3}), Tensor(DType::Float32, {4, 2})});
  CHECK_THAT(message, Catch::Contains("inner dimensions do not match"));
  message = run_error("MatMul", {Tensor(DType::Float32, {2, 2, 3}), Tensor(DType::Float32, {3, 3, 2})});
  CHECK_THAT(message, Catch::Contains("cannot be broadcast"));
  message = run_error("MatMul", {Tensor(DType::Float32, {2, 3}), Tensor(DType::Float64, {3, 2})});
  CHECK_THAT(message, Catch::Contains("different types"));
}

// ---- Gemm -------------------------------------------------------------------------------

TEST_CASE("Gemm applies transA, transB, alpha, beta and a broadcast C", "[gemm]") {
  std::mt19937 rng(11);
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> sizes = {
      {1, 1, 1}, {3, 5, 4}, {17, 33, 9}, {40, 20, 70}, {2, 100, 3}, {3, 21, 37}, {5, 2, 40}, {1, 70, 130}};
  int variant = 0;
  for (const auto &[m, n, k] : sizes)
    for (int trans_a = 0; trans_a < 2; ++trans_a)
      for (int trans_b = 0; trans_b < 2; ++trans_b) {
        // Every C shape that broadcasts to (M, N), in turn.
        const std::vector<Shape> c_shapes = {{}, {1}, {n}, {m, 1}, {m, n}, {1, n}};
        const Shape c_shape = c_shapes[variant++ % c_shapes.size()];
        INFO("M " << m << " N " << n << " K " << k << " transA " << trans_a << " transB " << trans_b << " C "
                  << shape_to_string(c_shape));
        Tensor a = random_tensor(trans_a ? Shape{k, m} : Shape{m, k}, rng);
        Tensor b = random_tensor(trans_b ? Shape{n, k} : Shape{k, n}, rng);
        Tensor c = random_tensor(c_shape, rng);
        const float alpha = 0.5f, beta = -1.5f;
        std::vector<double> want(m * n);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t kk = 0; kk < k; ++kk) {
              const float av = trans_a ? a.data_as<float>()[kk * m + i] : a.data_as<float>()[i * k + kk];
              const float bv = trans_b ? b.data_as<float>()[j * k + kk] : b.data_as<float>()[kk * n + j];
              sum += double(av) * bv;
            }
            int64_t ci = 0;
            if (c_shape.size() == 1) ci = c_shape[0] == 1 ? 0 : j;
            if (c_shape.size() == 2) ci = (c_shape[0] == 1 ? 0 : i * c_shape[1]) + (c_shape[1] == 1 ? 0 : j);
            want[i * n + j] = alpha * sum + beta * c.data_as<float>()[ci];
          }
        Attributes at =
            attrs({{"transA", int64_t{trans_a}}, {"transB", int64_t{trans_b}}, {"alpha", alpha}, {"beta", beta}});
        check_close(run_op("Gemm", {a, b, c}, at), {m, n}, want);
      }
}

TEST_CASE("Gemm without C is alpha * A * B", "[gemm]") {
  Tensor a = float_tensor({2, 2}, {1, 2, 3, 4});
  Tensor b = float_tensor({2, 2}, {1, 0, 0, 1});
  check_close(run_op("Gemm", {a, b}, attrs({{"alpha", 2.0f}})), {2, 2}, {2, 4, 6, 8});
}

TEST_CASE("Gemm on int32 scales by a fractional alpha after the product", "[gemm]") {
  Tensor a(DType::Int32, {1, 2}), b(DType::Int32, {2, 1}), c(DType::Int32, {1});
  a.data_as<int32_t>()[0] = 3, a.data_as<int32_t>()[1] = 4;
  b.data_as<int32_t>()[0] = 5, b.data_as<int32_t>()[1] = 6;
  c.data_as<int32_t>()[0] = 10;
  // 0.5 * (15 + 24) + 2 * 10 = 19.5 + 20 -> 39 after truncation of 19.5.
  Tensor y = run_op("Gemm", {a, b, c}, attrs({{"alpha", 0.5f}, {"beta", 2.0f}}));
  CHECK(y.to_int64_vector() == std::vector<int64_t>{39});
}

TEST_CASE("Gemm rejects bad shapes", "[gemm][error]") {
  std::string message = run_error("Gemm", {Tensor(DType::Float32, {2, 3}), Tensor(DType::Float32, {2, 4})});
  CHECK_THAT(message, Catch::Contains("inner dimensions do not match"));
  message =
      run_error("Gemm", {Tensor(DType::Float32, {2, 3}), Tensor(DType::Float32, {3, 4}), Tensor(DType::Float32, {3})});
  CHECK_THAT(message, Catch::Contains("does not broadcast"));
  message = run_error("Gemm", {Tensor(DType::Float32, {2, 3, 1}), Tensor(DType::Float32, {3, 4})});
  CHECK_THAT(message, Catch::Contains("must be 2-D"));
}

// ---- Conv -------------------------------------------------------------------------------

TEST_CASE("Conv computes a padded 3x3 convolution with bias", "[conv]") {
  // x = 0..8 in a 3x3 image, all-ones kernel, pad 1: each output is the sum of its
  // 3x3 neighbourhood, plus the bias 10.
  Tensor x = float_tensor({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Tensor w = float_tensor({1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  Tensor b = float_tensor({1}, {10});
  check_close(run_op("Conv", {x, w, b}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}})), {1, 1, 3, 3},
              {18, 25, 22, 31, 46, 37, 30, 43, 34});
}

TEST_CASE("Conv matches a reference over strides, dilations, pads, groups and 1-3 spatial dims", "[conv]") {
  std::mt19937 rng(3);
  struct Case {
    Shape x, w;
    ConvParams p;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{1, 1, 5}, {1, 1, 3}, {{1}, {1}, {0, 0}}, false},
      {{2, 3, 11}, {5, 3, 3}, {{2}, {1}, {1, 2}}, true},
      {{1, 4, 20}, {6, 2, 4}, {{3}, {2}, {3, 0}, 2}, true},
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {{1, 1}, {1, 1}, {0, 0, 0, 0}}, true},
      {{1, 3, 7, 5}, {4, 3, 3, 2}, {{1, 1}, {1, 1}, {0, 0, 0, 0}}, true},
      {{2, 3, 9, 9}, {10, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1, 1, 1}}, true},
      {{1, 8, 17, 19}, {8, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 8}, true},  // depthwise
      {{1, 4, 12, 33}, {12, 2, 3, 5}, {{2, 3}, {2, 1}, {2, 0, 1, 3}, 2}, true},
      {{1, 16, 14, 14}, {20, 16, 1, 1}, {{2, 2}, {1, 1}, {0, 0, 0, 0}}, false},
      {{1, 6, 40, 37}, {9, 6, 3, 3}, {{1, 1}, {1, 1}, {1, 1, 1, 1}}, true},
      {{1, 3, 30, 30}, {5, 3, 7, 7}, {{2, 2}, {1, 1}, {3, 3, 3, 3}}, true},
      {{1, 5, 9, 10}, {7, 5, 3, 3}, {{1, 1}, {2, 2}, {2, 2, 2, 2}}, true},          // short rows, dilated
      {{2, 20, 7, 7}, {24, 20, 3, 3}, {{1, 1}, {1, 1}, {1, 1, 1, 1}}, true},        // ResNet layer-4 like
      {{1, 12, 14, 14}, {12, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 0, 1, 1}, 12}, false},  // depthwise, stride 2
      {{1, 6, 5, 40}, {3, 6, 1, 1}, {{1, 1}, {1, 1}, {0, 0, 0, 0}}, false},
      {{1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, {{1, 2, 1}, {1, 1, 2}, {0, 1, 1, 1, 0, 0}}, true},
      {{2, 4, 5, 6, 7}, {4, 2, 3, 3, 3}, {{1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 2}, false},
  };
  for (const Case &c : cases) {
    INFO("X " << shape_to_string(c.x) << " W " << shape_to_string(c.w) << " group " << c.p.group);
    Tensor x = random_tensor(c.x, rng), w = random_tensor(c.w, rng), b = random_tensor({c.w[0]}, rng);
    const size_t s = c.x.size() - 2;
    Shape out = {c.x[0], c.w[0]};
    for (size_t d = 0; d < s; ++d)
      out.push_back(
          (c.x[2 + d] + c.p.pads[d] + c.p.pads[s + d] - (c.w[2 + d] - 1) * c.p.dilations[d] - 1) / c.p.strides[d] + 1);
    Attributes a =
        attrs({{"strides", c.p.strides}, {"dilations", c.p.dilations}, {"pads", c.p.pads}, {"group", c.p.group}});
    std::vector<Tensor> inputs = {x, w};
    if (c.bias) inputs.push_back(b);
    check_close(run_op("Conv", inputs, a), out, reference_conv(x, w, c.bias ? &b : nullptr, c.p, out));
  }
}

TEST_CASE("Conv auto_pad SAME_UPPER, SAME_LOWER and VALID", "[conv]") {
  std::mt19937 rng(5);
  Tensor x = random_tensor({1, 2, 7, 8}, rng), w = random_tensor({3, 2, 4, 3}, rng);
  // SAME with stride 2: out = ceil(in / 2); total pad = (out - 1) * 2 + k - in.
  // H: out 4, total 4+... = (3*2 + 4 - 7) = 3 -> UPPER (1, 2), LOWER (2, 1).
  // W: out 4, total (3*2 + 3 - 8) = 1 -> UPPER (0, 1), LOWER (1, 0).
  ConvParams upper{{2, 2}, {1, 1}, {1, 0, 2, 1}}, lower{{2, 2}, {1, 1}, {2, 1, 1, 0}};
  Attributes base = attrs({{"strides", std::vector<int64_t>{2, 2}}});
  Attributes a_upper = base, a_lower = base, a_valid = base;
  a_upper.set("auto_pad", std::string("SAME_UPPER"));
  a_lower.set("auto_pad", std::string("SAME_LOWER"));
  a_valid.set("auto_pad", std::string("VALID"));
  check_close(run_op("Conv", {x, w}, a_upper), {1, 3, 4, 4}, reference_conv(x, w, nullptr, upper, {1, 3, 4, 4}));
  check_close(run_op("Conv", {x, w}, a_lower), {1, 3, 4, 4}, reference_conv(x, w, nullptr, lower, {1, 3, 4, 4}));
  ConvParams valid{{2, 2}, {1, 1}, {0, 0, 0, 0}};
  check_close(run_op("Conv", {x, w}, a_valid), {1, 3, 2, 3}, reference_conv(x, w, nullptr, valid, {1, 3, 2, 3}));
  // kernel_shape may be given; it must agree with W.
  Attributes with_kernel = base;
  with_kernel.set("kernel_shape", std::vector<int64_t>{4, 3});
  check_close(run_op("Conv", {x, w}, with_kernel), {1, 3, 2, 3}, reference_conv(x, w, nullptr, valid, {1, 3, 2, 3}));
}

TEST_CASE("Conv with no input channels gives the bias", "[conv]") {
  Tensor x(DType::Float32, {1, 0, 3, 3}), w(DType::Float32, {2, 0, 2, 2});
  Tensor b = float_tensor({2}, {1.5f, -2});
  check_close(run_op("Conv", {x, w, b}), {1, 2, 2, 2}, {1.5, 1.5, 1.5, 1.5, -2, -2, -2, -2});
}

TEST_CASE("Conv on float16 computes in float32", "[conv]") {
  Tensor x(DType::Float16, {1, 2, 3, 3}), w(DType::Float16, {1, 2, 2, 2});
  for (int i = 0; i < 18; ++i) x.set_element_from_double(i, 0.5 * i);
  for (int i = 0; i < 8; ++i) w.set_element_from_double(i, i % 2 ? 1.0 : -0.5);
  Tensor y = run_op("Conv", {x, w});
  REQUIRE(y.dtype() == DType::Float16);
  // Reference in float32 from the same (exactly representable) values.
  Tensor xf(DType::Float32, {1, 2, 3, 3}), wf(DType::Float32, {1, 2, 2, 2});
  for (int i = 0; i < 18; ++i) xf.data_as<float>()[i] = 0.5f * i;
  for (int i = 0; i < 8; ++i) wf.data_as<float>()[i] = i % 2 ? 1.0f : -0.5f;
  check_close(y, {1, 1, 2, 2}, reference_conv(xf, wf, nullptr, {{1, 1}, {1, 1}, {0, 0, 0, 0}}, {1, 1, 2, 2}), 1e-2);
}

TEST_CASE("Conv rejects mismatched channels, ranks and kernel shapes", "[conv][error]") {
  std::string message = run_error("Conv", {Tensor(DType::Float32, {1, 3, 5, 5}), Tensor(DType::Float32, {2, 4, 3, 3})});
  CHECK_THAT(message, Catch::Contains("channels"));
  message = run_error("Conv", {Tensor(DType::Float32, {1, 3, 5, 5}), Tensor(DType::Float32, {2, 3, 3})});
  CHECK_THAT(message, Catch::Contains("rank"));
  message = run_error("Conv", {Tensor(DType::Float32, {1, 3, 5, 5}), Tensor(DType::Float32, {2, 3, 3, 3})},
                      attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}}));
  CHECK_THAT(message, Catch::Contains("kernel_shape"));
  message = run_error("Conv", {Tensor(DType::Float32, {1, 3, 2, 2}), Tensor(DType::Float32, {2, 3, 3, 3})});
  CHECK_THAT(message, Catch::Contains("larger than the padded input"));
  message = run_error("Conv", {Tensor(DType::Float32, {1, 3, 5, 5}), Tensor(DType::Float32, {2, 3, 3, 3}),
                               Tensor(DType::Float32, {3})});
  CHECK_THAT(message, Catch::Contains("bias"));
}

// ---- ConvTranspose ----------------------------------------------------------------------

TEST_CASE("ConvTranspose scatters each input through the kernel", "[convtranspose]") {
  // 1-D: x = [1, 2], w = [1, 10, 100], stride 2: y = [1, 10, 102, 20, 200].
  Tensor x = float_tensor({1, 1, 2}, {1, 2});
  Tensor w = float_tensor({1, 1, 3}, {1, 10, 100});
  check_close(run_op("ConvTranspose", {x, w}, attrs({{"strides", std::vector<int64_t>{2}}})), {1, 1, 5},
              {1, 10, 102, 20, 200});
}

TEST_CASE("ConvTranspose matches a reference over strides, pads, output_padding and groups", "[convtranspose]") {
  std::mt19937 rng(9);
  struct Case {
    Shape x, w;
    ConvParams p;
    std::vector<int64_t> output_padding;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{1, 1, 4}, {1, 2, 3}, {{1}, {1}, {0, 0}}, {0}, false},
      {{2, 3, 5}, {3, 2, 4}, {{3}, {2}, {1, 2}}, {2}, true},
      {{1, 3, 7, 6}, {3, 4, 3, 3}, {{3, 2}, {1, 1}, {1, 1, 1, 1}}, {1, 1}, true},
      {{1, 4, 5, 9}, {4, 3, 2, 3}, {{2, 2}, {2, 1}, {0, 1, 1, 0}, 2}, {1, 0}, true},
      {{1, 16, 8, 20}, {16, 8, 4, 4}, {{2, 2}, {1, 1}, {1, 1, 1, 1}}, {0, 0}, true},
      {{1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, {{2, 1, 2}, {1, 2, 1}, {0, 0, 1, 1, 0, 0}}, {1, 0, 0}, false},
  };
  for (const Case &c : cases) {
    INFO("X " << shape_to_string(c.x) << " W " << shape_to_string(c.w));
    Tensor x = random_tensor(c.x, rng), w = random_tensor(c.w, rng), b = random_tensor({c.w[1] * c.p.group}, rng);
    const size_t s = c.x.size() - 2;
    Shape out = {c.x[0], c.w[1] * c.p.group};
    for (size_t d = 0; d < s; ++d)
      out.push_back(c.p.strides[d] * (c.x[2 + d] - 1) + c.output_padding[d] + (c.w[2 + d] - 1) * c.p.dilations[d] + 1 -
                    c.p.pads[d] - c.p.pads[s + d]);
    Attributes a = attrs({{"strides", c.p.strides},
                          {"dilations", c.p.dilations},
                          {"pads", c.p.pads},
                          {"group", c.p.group},
                          {"output_padding", c.output_padding}});
    std::vector<Tensor> inputs = {x, w};
    if (c.bias) inputs.push_back(b);
    check_close(run_op("ConvTranspose", inputs, a), out,
                reference_conv_transpose(x, w, c.bias ? &b : nullptr, c.p, out));
  }
}

TEST_CASE("ConvTranspose output_shape and auto_pad choose the padding", "[convtranspose]") {
  std::mt19937 rng(13);
  Tensor x = random_tensor({1, 2, 3, 4}, rng), w = random_tensor({2, 3, 3, 3}, rng);
  // Full output: H 2*2+3 = 7, W 2*3+3 = 9.
  // output_shape [8, 10] is larger than the full output: zeros at the end (pads 0, -1).
  Attributes shape_attrs =
      attrs({{"strides", std::vector<int64_t>{2, 2}}, {"output_shape", std::vector<int64_t>{8, 10}}});
  check_close(run_op("ConvTranspose", {x, w}, shape_attrs), {1, 3, 8, 10},
              reference_conv_transpose(x, w, nullptr, {{2, 2}, {1, 1}, {0, 0, -1, -1}}, {1, 3, 8, 10}));
  // output_shape [5, 8]: total pads 2 and 1; the odd one puts the extra at the start.
  shape_attrs.set("output_shape", std::vector<int64_t>{5, 8});
  check_close(run_op("ConvTranspose", {x, w}, shape_attrs), {1, 3, 5, 8},
              reference_conv_transpose(x, w, nullptr, {{2, 2}, {1, 1}, {1, 1, 1, 0}}, {1, 3, 5, 8}));
  // SAME_UPPER: out = in * stride = (6, 8); total pads 1 and 1, extra at the end.
  Attributes same = attrs({{"strides", std::vector<int64_t>{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}});
  check_close(run_op("ConvTranspose", {x, w}, same), {1, 3, 6, 8},
              reference_conv_transpose(x, w, nullptr, {{2, 2}, {1, 1}, {0, 0, 1, 1}}, {1, 3, 6, 8}));
  same.set("auto_pad", std::string("SAME_LOWER"));
  check_close(run_op("ConvTranspose", {x, w}, same), {1, 3, 6, 8},
              reference_conv_transpose(x, w, nullptr, {{2, 2}, {1, 1}, {1, 1, 0, 0}}, {1, 3, 6, 8}));
}

TEST_CASE("ConvTranspose rejects mismatched channels", "[convtranspose][error]") {
  std::string message =
      run_error("ConvTranspose", {Tensor(DType::Float32, {1, 3, 5, 5}), Tensor(DType::Float32, {2, 4, 3, 3})});
  CHECK_THAT(message, Catch::Contains("channels"));
  message = run_error("ConvTranspose", {Tensor(DType::Float32, {1, 3, 5, 5}), Tensor(DType::Float32, {3, 4, 3, 3})},
                      attrs({{"output_padding", std::vector<int64_t>{1}}}));
  CHECK_THAT(message, Catch::Contains("output_padding"));
}

// ---- Benchmark (hidden: run with "[.benchmark]") ----------------------------------------

namespace {

/// Throughput of one node: wall-clock GFLOP/s (best of several runs after the compiling
/// run), and GFLOP per CPU-second of the process, which stays meaningful when other
/// processes compete for the cores.
struct Throughput {
  double wall = 0, per_cpu_second = 0, first_run_seconds = 0;
};

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

Throughput measure(const std::string &op, const std::vector<Tensor> &inputs, Attributes a, double flops, int runs) {
  std::vector<TensorType> types;
  for (const Tensor &t : inputs) types.push_back(t.type());
  GraphExecutor executor(std::make_shared<const Graph>(single_node_graph(op, types, 1, std::move(a))));
  const auto compile_start = std::chrono::steady_clock::now();
  auto first = executor.run(inputs);
  if (!first.ok()) FAIL(first.error().message);
  const double first_run = std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  double best = 1e30, best_cpu = 1e30;
  for (int i = 0; i < runs; ++i) {
    const double cpu_start = cpu_seconds();
    auto start = std::chrono::steady_clock::now();
    auto out = executor.run(inputs);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    REQUIRE(out.ok());
    best = std::min(best, seconds);
    best_cpu = std::min(best_cpu, cpu_seconds() - cpu_start);
  }
  return {flops / best * 1e-9, flops / best_cpu * 1e-9, first_run};
}

void report(const char *what, const Throughput &t) {
  std::printf("%-46s %6.1f GFLOP/s wall, %6.1f GFLOP per CPU-second (first run incl. JIT %.2f s)\n", what, t.wall,
              t.per_cpu_second, t.first_run_seconds);
}

}  // namespace

TEST_CASE("Benchmark: MatMul 1024^3 and Conv 3x3 64->64 on 56x56", "[.benchmark]") {
  std::mt19937 rng(1);
  Tensor a = random_tensor({1024, 1024}, rng), b = random_tensor({1024, 1024}, rng);
  report("MatMul 1024x1024x1024", measure("MatMul", {a, b}, {}, 2.0 * 1024 * 1024 * 1024, 10));
  Tensor x = random_tensor({1, 64, 56, 56}, rng), w = random_tensor({64, 64, 3, 3}, rng),
         bias = random_tensor({64}, rng);
  report("Conv 1x64x56x56 -> 64, 3x3, pad 1",
         measure("Conv", {x, w, bias}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}), 2.0 * 64 * 56 * 56 * 64 * 9,
                 20));
}

namespace {

/// Benchmarks Conv on a 1xCxHxW input with an MxCxKxK kernel (no bias).
void bench_conv(std::mt19937 &rng, int64_t c, int64_t hw, int64_t m, int64_t k, int64_t stride, int64_t pad) {
  Tensor x = random_tensor({1, c, hw, hw}, rng), w = random_tensor({m, c, k, k}, rng);
  const int64_t out = (hw + 2 * pad - k) / stride + 1;
  char what[96];
  std::snprintf(what, sizeof(what), "Conv %ldx%ldx%ld -> %ld, %ldx%ld, stride %ld", long(c), long(hw), long(hw),
                long(m), long(k), long(k), long(stride));
  Attributes a = attrs({{"pads", std::vector<int64_t>(4, pad)}, {"strides", std::vector<int64_t>{stride, stride}}});
  const double flops = 2.0 * m * out * out * c * k * k;
  report(what, measure("Conv", {x, w}, a, flops, flops > 1e8 ? 5 : 20));
}

}  // namespace

TEST_CASE("Benchmark: every ResNet-18 conv, and transformer and classifier products", "[.benchmark]") {
  std::mt19937 rng(2);
  bench_conv(rng, 3, 224, 64, 7, 2, 3);
  bench_conv(rng, 64, 56, 64, 3, 1, 1);
  bench_conv(rng, 64, 56, 128, 3, 2, 1);
  bench_conv(rng, 64, 56, 128, 1, 2, 0);
  bench_conv(rng, 128, 28, 128, 3, 1, 1);
  bench_conv(rng, 128, 28, 256, 3, 2, 1);
  bench_conv(rng, 128, 28, 256, 1, 2, 0);
  bench_conv(rng, 256, 14, 256, 3, 1, 1);
  bench_conv(rng, 256, 14, 512, 3, 2, 1);
  bench_conv(rng, 256, 14, 512, 1, 2, 0);
  bench_conv(rng, 512, 7, 512, 3, 1, 1);

  Tensor v = random_tensor({1, 512}, rng), wt = random_tensor({512, 1000}, rng), wlin = random_tensor({1000, 512}, rng);
  report("MatMul 1x512 * 512x1000", measure("MatMul", {v, wt}, {}, 2.0 * 512 * 1000, 50));
  report("Gemm 1x512 * (1000x512)^T",
         measure("Gemm", {v, wlin}, attrs({{"transB", int64_t{1}}}), 2.0 * 512 * 1000, 50));
  Tensor q = random_tensor({8, 128, 64}, rng), k = random_tensor({8, 64, 128}, rng);
  report("MatMul 8x128x64 * 8x64x128", measure("MatMul", {q, k}, {}, 2.0 * 8 * 128 * 128 * 64, 20));
  Tensor h = random_tensor({128, 768}, rng), wff = random_tensor({768, 3072}, rng);
  report("MatMul 128x768 * 768x3072", measure("MatMul", {h, wff}, {}, 2.0 * 128 * 768 * 3072, 10));
  Tensor xt = random_tensor({1, 64, 28, 28}, rng), wtc = random_tensor({64, 32, 4, 4}, rng);
  report("ConvTranspose 1x64x28x28 -> 32, 4x4, stride 2",
         measure("ConvTranspose", {xt, wtc},
                 attrs({{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
                 2.0 * 64 * 28 * 28 * 32 * 16, 10));
}
