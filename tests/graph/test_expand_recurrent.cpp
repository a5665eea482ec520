// LSTM, GRU and RNN expanded into their steps at import (graph/onnx/expand_recurrent.h),
// against a direct loop over the ONNX spec's equations written here, for the attributes
// the ONNX conformance data leaves out: sequence_lens that end entries early (forward,
// reverse and bidirectional), clip, input_forget, activations with alpha and beta, layout 1.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>

#include "graph/onnx/expand_recurrent.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

using Activation = std::function<float(float)>;

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

Tensor random_tensor(Shape shape, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

/// Sizes of the tests' recurrent nodes.
struct Sizes {
  int64_t seq = 4, batch = 3, input = 5, hidden = 6, directions = 2, gates = 4;
};

/// The spec's equations as a loop, layout 0: Y [seq, dirs, batch, hidden] and the last
/// h and c [dirs, batch, hidden]. `cell` maps (gate pre-activations incl. biases, c) to
/// the new (h, c) of one batch entry.
struct Reference {
  Tensor y, y_h, y_c;
};
using Cell = std::function<void(int64_t d, const std::vector<float> &pre, const float *h, std::vector<float> &h_out,
                                std::vector<float> &c)>;

Reference run_reference(const Sizes &n, const Tensor &x, const Tensor &w, const Tensor &r, const Tensor &b,
                        const std::vector<int64_t> &lengths, const std::vector<bool> &reverse, const Cell &cell,
                        bool recurrent_inside_cell = false) {
  Reference out{Tensor(DType::Float32, {n.seq, n.directions, n.batch, n.hidden}),
                Tensor(DType::Float32, {n.directions, n.batch, n.hidden}),
                Tensor(DType::Float32, {n.directions, n.batch, n.hidden})};
  const int64_t gh = n.gates * n.hidden;
  for (int64_t d = 0; d < n.directions; ++d)
    for (int64_t bi = 0; bi < n.batch; ++bi) {
      std::vector<float> h(n.hidden, 0), c(n.hidden, 0), next_h(n.hidden);
      for (int64_t k = 0; k < lengths[bi]; ++k) {
        const int64_t t = reverse[d] ? lengths[bi] - 1 - k : k;
        std::vector<float> pre(gh, 0);
        for (int64_t g = 0; g < gh; ++g) {
          float acc = b.data_as<float>()[d * 2 * gh + g];
          if (!recurrent_inside_cell) acc += b.data_as<float>()[d * 2 * gh + gh + g];
          for (int64_t i = 0; i < n.input; ++i)
            acc += w.data_as<float>()[(d * gh + g) * n.input + i] * x.data_as<float>()[(t * n.batch + bi) * n.input + i];
          if (!recurrent_inside_cell)
            for (int64_t j = 0; j < n.hidden; ++j) acc += r.data_as<float>()[(d * gh + g) * n.hidden + j] * h[j];
          pre[g] = acc;
        }
        cell(d, pre, h.data(), next_h, c);
        h = next_h;
        for (int64_t j = 0; j < n.hidden; ++j)
          out.y.data_as<float>()[((t * n.directions + d) * n.batch + bi) * n.hidden + j] = h[j];
      }
      for (int64_t j = 0; j < n.hidden; ++j) {
        out.y_h.data_as<float>()[(d * n.batch + bi) * n.hidden + j] = h[j];
        out.y_c.data_as<float>()[(d * n.batch + bi) * n.hidden + j] = c[j];
      }
    }
  return out;
}

float clipped(float v, float bound) { return bound > 0 ? std::min(bound, std::max(-bound, v)) : v; }

/// Runs `op` on the inputs through the expansion; returns its outputs.
std::vector<Tensor> run_expanded(const std::string &op, const std::vector<Tensor> &inputs, size_t outputs,
                                 Attributes attributes) {
  Graph g = single_node_graph(op, types_of(inputs), outputs, std::move(attributes), {}, 14);
  auto expanded = expand_recurrent_ops(g);
  INFO((expanded.ok() ? std::string() : expanded.error().message));
  REQUIRE(expanded.ok());
  for (const Node &node : expanded->nodes) CHECK(!is_recurrent_op(node.op_type));
  return run_graph(expanded.value(), inputs);
}

Tensor lengths_tensor(const std::vector<int64_t> &lengths) {
  Tensor t(DType::Int32, {static_cast<int64_t>(lengths.size())});
  for (size_t i = 0; i < lengths.size(); ++i) t.data_as<int32_t>()[i] = static_cast<int32_t>(lengths[i]);
  return t;
}

}  // namespace

TEST_CASE("expanded bidirectional LSTM with sequence_lens, clip and input_forget matches the spec's loop",
          "[recurrent]") {
  Sizes n;
  std::mt19937 rng(5);
  const Tensor x = random_tensor({n.seq, n.batch, n.input}, rng);
  const Tensor w = random_tensor({2, 4 * n.hidden, n.input}, rng), r = random_tensor({2, 4 * n.hidden, n.hidden}, rng);
  const Tensor b = random_tensor({2, 8 * n.hidden}, rng);
  const std::vector<int64_t> lengths = {4, 1, 3};
  const float clip = 0.7f;
  const bool input_forget = GENERATE(false, true);
  Cell lstm = [&](int64_t, const std::vector<float> &pre, const float *, std::vector<float> &h, std::vector<float> &c) {
    for (int64_t j = 0; j < n.hidden; ++j) {
      const float i = sigmoid(clipped(pre[j], clip)), o = sigmoid(clipped(pre[n.hidden + j], clip));
      const float f = input_forget ? 1 - i : sigmoid(clipped(pre[2 * n.hidden + j], clip));
      const float candidate = std::tanh(clipped(pre[3 * n.hidden + j], clip));
      c[j] = f * c[j] + i * candidate;
      h[j] = o * std::tanh(c[j]);
    }
  };
  const Reference want = run_reference(n, x, w, r, b, lengths, {false, true}, lstm);
  Attributes a;
  a.set("direction", std::string("bidirectional"));
  a.set("hidden_size", n.hidden);
  a.set("clip", clip);
  a.set("input_forget", int64_t{input_forget});
  const std::vector<Tensor> got = run_expanded("LSTM", {x, w, r, b, lengths_tensor(lengths)}, 3, a);
  CHECK(max_abs_diff(got[0], want.y) < 1e-5);
  CHECK(max_abs_diff(got[1], want.y_h) < 1e-5);
  CHECK(max_abs_diff(got[2], want.y_c) < 1e-5);
}

TEST_CASE("expanded reverse GRU with sequence_lens matches the spec's loop, with and without linear_before_reset",
          "[recurrent]") {
  Sizes n;
  n.directions = 1;
  n.gates = 3;
  std::mt19937 rng(6);
  const Tensor x = random_tensor({n.seq, n.batch, n.input}, rng);
  const Tensor w = random_tensor({1, 3 * n.hidden, n.input}, rng), r = random_tensor({1, 3 * n.hidden, n.hidden}, rng);
  const Tensor b = random_tensor({1, 6 * n.hidden}, rng);
  const std::vector<int64_t> lengths = {2, 4, 3};
  const bool linear_before_reset = GENERATE(false, true);
  const float *rw = r.data_as<float>(), *rb = b.data_as<float>() + 3 * n.hidden;
  // pre holds X W^T + Wb only: the recurrent part depends on the reset gate.
  Cell gru = [&](int64_t, const std::vector<float> &pre, const float *h_prev, std::vector<float> &h, std::vector<float> &) {
    auto recurrent = [&](int64_t g, int64_t j, const std::vector<float> &state) {
      float acc = 0;
      for (int64_t k = 0; k < n.hidden; ++k) acc += rw[(g * n.hidden + j) * n.hidden + k] * state[k];
      return acc;
    };
    const std::vector<float> prev(h_prev, h_prev + n.hidden);
    std::vector<float> z(n.hidden), reset(n.hidden), scaled(n.hidden);
    for (int64_t j = 0; j < n.hidden; ++j) {
      z[j] = sigmoid(pre[j] + recurrent(0, j, prev) + rb[j]);
      reset[j] = sigmoid(pre[n.hidden + j] + recurrent(1, j, prev) + rb[n.hidden + j]);
      scaled[j] = reset[j] * prev[j];
    }
    for (int64_t j = 0; j < n.hidden; ++j) {
      const float hidden_part = linear_before_reset ? reset[j] * (recurrent(2, j, prev) + rb[2 * n.hidden + j])
                                                    : recurrent(2, j, scaled) + rb[2 * n.hidden + j];
      const float candidate = std::tanh(pre[2 * n.hidden + j] + hidden_part);
      h[j] = (1 - z[j]) * candidate + z[j] * prev[j];
    }
  };
  const Reference want = run_reference(n, x, w, r, b, lengths, {true}, gru, /*recurrent_inside_cell=*/true);
  Attributes a;
  a.set("direction", std::string("reverse"));
  a.set("hidden_size", n.hidden);
  a.set("linear_before_reset", int64_t{linear_before_reset});
  const std::vector<Tensor> got = run_expanded("GRU", {x, w, r, b, lengths_tensor(lengths)}, 2, a);
  CHECK(max_abs_diff(got[0], want.y) < 1e-5);
  CHECK(max_abs_diff(got[1], want.y_h) < 1e-5);
}

TEST_CASE("expanded RNN takes activations with alpha and beta per direction, and layout 1", "[recurrent]") {
  Sizes n;
  n.gates = 1;
  std::mt19937 rng(7);
  const Tensor x = random_tensor({n.seq, n.batch, n.input}, rng);
  const Tensor w = random_tensor({2, n.hidden, n.input}, rng), r = random_tensor({2, n.hidden, n.hidden}, rng);
  const Tensor b = random_tensor({2, 2 * n.hidden}, rng);
  // Forward: LeakyRelu(alpha 0.2); reverse: Affine(alpha 0.5, beta 0.1). Alphas go in order.
  Cell rnn = [&](int64_t d, const std::vector<float> &pre, const float *, std::vector<float> &h, std::vector<float> &) {
    for (int64_t j = 0; j < n.hidden; ++j) h[j] = d == 0 ? (pre[j] >= 0 ? pre[j] : 0.2f * pre[j]) : 0.5f * pre[j] + 0.1f;
  };
  const Reference want = run_reference(n, x, w, r, b, {n.seq, n.seq, n.seq}, {false, true}, rnn);
  Attributes a;
  a.set("direction", std::string("bidirectional"));
  a.set("hidden_size", n.hidden);
  a.set("activations", std::vector<std::string>{"LeakyRelu", "Affine"});
  a.set("activation_alpha", std::vector<float>{0.2f, 0.5f});
  a.set("activation_beta", std::vector<float>{0.1f});
  a.set("layout", int64_t{1});
  const std::vector<Tensor> got = run_expanded("RNN", {x.permuted({1, 0, 2}).clone(), w, r, b}, 2, a);
  CHECK(max_abs_diff(got[0], want.y.permuted({2, 0, 1, 3}).clone()) < 1e-5);
  CHECK(max_abs_diff(got[1], want.y_h.permuted({1, 0, 2}).clone()) < 1e-5);
}

TEST_CASE("a recurrent node without a static sequence length is a clear error", "[recurrent]") {
  Graph g = single_node_graph("RNN", {TensorType{DType::Float32, {kUnknownDim, 2, 3}, true},
                                      TensorType{DType::Float32, {1, 4, 3}, true},
                                      TensorType{DType::Float32, {1, 4, 4}, true}},
                              2, {}, {}, 14);
  auto expanded = expand_recurrent_ops(g);
  REQUIRE(!expanded.ok());
  CHECK_THAT(expanded.error().message, Catch::Contains("RNN") && Catch::Contains("static shape"));
}
