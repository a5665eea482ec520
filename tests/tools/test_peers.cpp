// The vendor-library peers of `tessel bench` (oneDNN for every op, OpenBLAS for matmul) against
// naive double-precision references written here, and the cached machine peak.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "peers/fma_peak.h"
#include "peers/machine_peak.h"
#include "peers/memory_bandwidth.h"
#include "peers/onednn_peer.h"  // kOneDnnMissing
#include "peers/onednn_task_peer.h"
#include "peers/openblas_peer.h"  // kOpenBlasMissing
#include "peers/openblas_task_peer.h"
#include "peers/peer_problem.h"
#include "peers/problems.h"  // max_relative_error

using namespace tessel::bench;

namespace {

#ifdef TESSEL_HAVE_ONEDNN
constexpr bool kOneDnnBuiltIn = true;
#else
constexpr bool kOneDnnBuiltIn = false;
#endif
#ifdef TESSEL_HAVE_OPENBLAS
constexpr bool kOpenBlasBuiltIn = true;
#else
constexpr bool kOpenBlasBuiltIn = false;
#endif

int64_t count_of(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

// A PeerProblem together with the buffers it points into (hence neither copied nor moved).
struct OwnedProblem {
  std::vector<std::vector<float>> inputs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<float> reference;
  PeerProblem problem;

  OwnedProblem() = default;
  OwnedProblem(const OwnedProblem &) = delete;
  OwnedProblem &operator=(const OwnedProblem &) = delete;

  // A random input in [-1, 1); returns its index.
  size_t add_input(std::vector<int64_t> shape) {
    std::mt19937 generator(uint32_t(1234 + 77 * inputs.size()));
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> values(size_t(count_of(shape)));
    for (float &v : values) v = uniform(generator);
    inputs.push_back(std::move(values));
    shapes.push_back(std::move(shape));
    return inputs.size() - 1;
  }

  // Points the problem at the buffers, once all of them and the reference are final.
  void bind(std::vector<int64_t> output_shape, double flops) {
    problem.inputs.clear();
    double bytes = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      problem.inputs.push_back(PeerBuffer{inputs[i].data(), shapes[i]});
      bytes += 4.0 * inputs[i].size();
    }
    problem.output_shape = std::move(output_shape);
    problem.reference = &reference;
    problem.flops = flops;
    problem.bytes = bytes + 4.0 * reference.size();
  }
};

using Problem = std::unique_ptr<OwnedProblem>;

// batch 0: plain 2-D A. B is [K, N] (shared by the batch) unless b_batched.
Problem matmul_problem(int64_t batch, int64_t m, int64_t n, int64_t k, bool b_batched, bool bias_relu) {
  auto owned = std::make_unique<OwnedProblem>();
  PeerProblem &p = owned->problem;
  p.op = PeerOp::Matmul;
  p.kernel = "test matmul";
  p.has_bias = p.relu = bias_relu;
  const std::vector<int64_t> batch_dims = batch > 0 ? std::vector<int64_t>{batch} : std::vector<int64_t>{};
  auto with_batch = [&](std::vector<int64_t> tail) {
    std::vector<int64_t> shape = batch_dims;
    shape.insert(shape.end(), tail.begin(), tail.end());
    return shape;
  };
  const size_t a = owned->add_input(with_batch({m, k}));
  const size_t b = owned->add_input(b_batched ? with_batch({k, n}) : std::vector<int64_t>{k, n});
  const size_t bias = bias_relu ? owned->add_input({n}) : 0;
  const int64_t entries = std::max<int64_t>(batch, 1);
  for (int64_t e = 0; e < entries; ++e)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const float *a_row = owned->inputs[a].data() + (e * m + i) * k;
        const float *b_mat = owned->inputs[b].data() + (b_batched ? e * k * n : 0);
        double sum = bias_relu ? owned->inputs[bias][size_t(j)] : 0.0;
        for (int64_t kk = 0; kk < k; ++kk) sum += double(a_row[kk]) * b_mat[kk * n + j];
        owned->reference.push_back(float(bias_relu ? std::max(sum, 0.0) : sum));
      }
  owned->bind(with_batch({m, n}), 2.0 * entries * m * n * k);
  return owned;
}

struct ConvShape {
  int64_t batch, channels, height, width, filters, kernel_h, kernel_w, groups;
  std::array<int64_t, 2> strides, dilations;
  std::array<int64_t, 4> pads;  // top, left, bottom, right
  bool bias_relu;
};

Problem conv_problem(const ConvShape &s) {
  auto owned = std::make_unique<OwnedProblem>();
  PeerProblem &p = owned->problem;
  p.op = PeerOp::Conv;
  p.kernel = "test conv";
  p.strides = s.strides;
  p.dilations = s.dilations;
  p.pads = s.pads;
  p.groups = s.groups;
  p.has_bias = p.relu = s.bias_relu;
  const int64_t group_channels = s.channels / s.groups, group_filters = s.filters / s.groups;
  const size_t x = owned->add_input({s.batch, s.channels, s.height, s.width});
  const size_t w = owned->add_input({s.filters, group_channels, s.kernel_h, s.kernel_w});
  const size_t bias = s.bias_relu ? owned->add_input({s.filters}) : 0;
  const int64_t out_h =
      (s.height + s.pads[0] + s.pads[2] - s.dilations[0] * (s.kernel_h - 1) - 1) / s.strides[0] + 1;
  const int64_t out_w =
      (s.width + s.pads[1] + s.pads[3] - s.dilations[1] * (s.kernel_w - 1) - 1) / s.strides[1] + 1;
  const std::vector<float> &in = owned->inputs[x], &weight = owned->inputs[w];
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t f = 0; f < s.filters; ++f)
      for (int64_t oh = 0; oh < out_h; ++oh)
        for (int64_t ow = 0; ow < out_w; ++ow) {
          double sum = s.bias_relu ? owned->inputs[bias][size_t(f)] : 0.0;
          const int64_t group = f / group_filters;
          for (int64_t gc = 0; gc < group_channels; ++gc)
            for (int64_t r = 0; r < s.kernel_h; ++r)
              for (int64_t q = 0; q < s.kernel_w; ++q) {
                const int64_t ih = oh * s.strides[0] - s.pads[0] + r * s.dilations[0];
                const int64_t iw = ow * s.strides[1] - s.pads[1] + q * s.dilations[1];
                if (ih < 0 || ih >= s.height || iw < 0 || iw >= s.width) continue;
                const int64_t c = group * group_channels + gc;
                sum += double(in[size_t(((n * s.channels + c) * s.height + ih) * s.width + iw)]) *
                       weight[size_t(((f * group_channels + gc) * s.kernel_h + r) * s.kernel_w + q)];
              }
          owned->reference.push_back(float(s.bias_relu ? std::max(sum, 0.0) : sum));
        }
  owned->bind({s.batch, s.filters, out_h, out_w},
              2.0 * s.batch * s.filters * out_h * out_w * group_channels * s.kernel_h * s.kernel_w);
  return owned;
}

// The same conv with X [N, H, W, C] and the output [N, OH, OW, K] (tessel's TesselConvNHWC).
Problem channels_last(Problem owned) {
  auto to_nhwc = [](const std::vector<float> &nchw, const std::vector<int64_t> &shape) {
    const int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
    std::vector<float> nhwc(nchw.size());
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t y = 0; y < h; ++y)
          for (int64_t x = 0; x < w; ++x)
            nhwc[size_t(((b * h + y) * w + x) * c + ch)] = nchw[size_t(((b * c + ch) * h + y) * w + x)];
    return nhwc;
  };
  const std::vector<int64_t> x = owned->shapes[0], y = owned->problem.output_shape;
  owned->inputs[0] = to_nhwc(owned->inputs[0], x);
  owned->shapes[0] = {x[0], x[2], x[3], x[1]};
  owned->reference = to_nhwc(owned->reference, y);
  owned->problem.channels_last = true;
  owned->bind({y[0], y[2], y[3], y[1]}, owned->problem.flops);
  return owned;
}

// Softmax, LayerNorm or Reduce over the last axis of a [rows, depth] input.
Problem last_axis_problem(PeerOp op, int64_t rows, int64_t depth, const std::string &reduce_kind = "sum") {
  auto owned = std::make_unique<OwnedProblem>();
  PeerProblem &p = owned->problem;
  p.op = op;
  p.kernel = "test last-axis op";
  p.reduce_kind = reduce_kind;
  const size_t x = owned->add_input({rows, depth});
  const size_t scale = op == PeerOp::LayerNorm ? owned->add_input({depth}) : 0;
  const size_t shift = op == PeerOp::LayerNorm ? owned->add_input({depth}) : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = owned->inputs[x].data() + r * depth;
    double sum = 0, max = row[0];
    for (int64_t d = 0; d < depth; ++d) {
      sum += row[d];
      max = std::max(max, double(row[d]));
    }
    const double mean = sum / double(depth);
    if (op == PeerOp::Reduce) {
      owned->reference.push_back(float(reduce_kind == "sum" ? sum : reduce_kind == "mean" ? mean : max));
    } else if (op == PeerOp::Softmax) {
      double total = 0;
      for (int64_t d = 0; d < depth; ++d) total += std::exp(row[d] - max);
      for (int64_t d = 0; d < depth; ++d) owned->reference.push_back(float(std::exp(row[d] - max) / total));
    } else {
      double variance = 0;
      for (int64_t d = 0; d < depth; ++d) variance += (row[d] - mean) * (row[d] - mean);
      variance /= double(depth);
      for (int64_t d = 0; d < depth; ++d)
        owned->reference.push_back(float((row[d] - mean) / std::sqrt(variance + p.epsilon) *
                                             owned->inputs[scale][size_t(d)] +
                                         owned->inputs[shift][size_t(d)]));
    }
  }
  owned->bind(op == PeerOp::Reduce ? std::vector<int64_t>{rows, 1} : std::vector<int64_t>{rows, depth},
              5.0 * rows * depth);
  return owned;
}

Problem elementwise_problem(const std::vector<std::string> &steps, std::vector<int64_t> shape) {
  auto owned = std::make_unique<OwnedProblem>();
  PeerProblem &p = owned->problem;
  p.op = PeerOp::Elementwise;
  p.kernel = "test elementwise";
  p.steps = steps;
  owned->add_input(shape);
  for (const std::string &step : steps)
    if (step == "add" || step == "sub" || step == "mul") owned->add_input(shape);
  for (size_t i = 0; i < owned->inputs[0].size(); ++i) {
    double value = owned->inputs[0][i];
    size_t operand = 1;
    for (const std::string &step : steps) {
      if (step == "add") value += owned->inputs[operand++][i];
      if (step == "sub") value -= owned->inputs[operand++][i];
      if (step == "mul") value *= owned->inputs[operand++][i];
      if (step == "relu") value = std::max(value, 0.0);
      if (step == "sigmoid") value = 1.0 / (1.0 + std::exp(-value));
      if (step == "tanh") value = std::tanh(value);
      if (step == "exp") value = std::exp(value);
      if (step == "abs") value = std::fabs(value);
    }
    owned->reference.push_back(float(value));
  }
  owned->bind(shape, double(steps.size()) * count_of(shape));
  return owned;
}

// Every row must either compute the reference (run twice: repeated timed runs must not
// accumulate) or say why it cannot; a library that is built in must not give up.
void check_rows(const PeerProblem &p, const std::vector<KernelRow> &rows, bool built_in) {
  for (const KernelRow &row : rows) {
    INFO(row.name << ": " << (row.unavailable.empty() ? row.note : row.unavailable));
    CHECK(row.kernel == p.kernel);
    if (!row.unavailable.empty()) {
      CHECK_FALSE(built_in);
      continue;
    }
    REQUIRE(row.run);
    REQUIRE(row.check_error);
    CHECK(row.is_peer);
    CHECK(row.flops == p.flops);
    CHECK_FALSE(row.note.empty());
    row.run();
    row.run();
    CHECK(row.check_error() <= 1e-4);
  }
}

void check_onednn(const PeerProblem &p, const std::vector<std::string> &expected_names) {
  const std::vector<KernelRow> rows = make_onednn_rows(p);
  if (!kOneDnnBuiltIn) {
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].name == "oneDNN");
    CHECK(rows[0].unavailable == kOneDnnMissing);
    return;
  }
  REQUIRE(rows.size() == expected_names.size());
  for (size_t i = 0; i < rows.size(); ++i) CHECK(rows[i].name == expected_names[i]);
  check_rows(p, rows, true);
}

void check_openblas_matmul(const PeerProblem &p, const std::string &expected_name) {
  const std::vector<KernelRow> rows = make_openblas_rows(p, 1);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].name == expected_name);
  if (!kOpenBlasBuiltIn) CHECK(rows[0].unavailable == kOpenBlasMissing);
  check_rows(p, rows, kOpenBlasBuiltIn);
}

// XDG_CACHE_HOME pointed at a fresh temporary directory for the test's lifetime.
struct TemporaryCacheHome {
  std::filesystem::path dir;
  std::string saved;
  bool had_saved = false;

  TemporaryCacheHome() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessel_peak_XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    dir = pattern;
    if (const char *old = std::getenv("XDG_CACHE_HOME")) {
      saved = old;
      had_saved = true;
    }
    setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  }
  ~TemporaryCacheHome() {
    if (had_saved)
      setenv("XDG_CACHE_HOME", saved.c_str(), 1);
    else
      unsetenv("XDG_CACHE_HOME");
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

// Milliseconds per measurement instead of a second: few repetitions, arrays that fit in L2.
PeakMeasurementSettings quick_settings() {
  PeakMeasurementSettings settings;
  settings.fma_repetitions = 2;
  settings.bandwidth_array_bytes = size_t(1) << 20;
  settings.bandwidth_repetitions = 2;
  return settings;
}

void overwrite(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace

TEST_CASE("peers: batched matmul, 2-D B broadcast, no epilogue", "[peers]") {
  const Problem owned = matmul_problem(2, 33, 17, 19, /*b_batched=*/false, /*bias_relu=*/false);
  check_onednn(owned->problem, {"oneDNN matmul"});
  check_openblas_matmul(owned->problem, "OpenBLAS cblas_sgemm");
}

TEST_CASE("peers: batched matmul, batched B, bias + ReLU", "[peers]") {
  const Problem owned = matmul_problem(2, 33, 17, 19, /*b_batched=*/true, /*bias_relu=*/true);
  check_onednn(owned->problem, {"oneDNN matmul"});
  check_openblas_matmul(owned->problem, "OpenBLAS sgemm + bias/ReLU loop");
}

TEST_CASE("peers: plain 2-D matmul with bias + ReLU", "[peers]") {
  const Problem owned = matmul_problem(0, 33, 17, 19, false, true);
  check_onednn(owned->problem, {"oneDNN matmul"});
  check_openblas_matmul(owned->problem, "OpenBLAS sgemm + bias/ReLU loop");
}

TEST_CASE("peers: conv, plain and blocked layouts", "[peers]") {
  const std::vector<std::string> names = {"oneDNN conv, plain NCHW", "oneDNN conv, preferred (blocked) layout"};
  SECTION("groups 1, stride 2, dilation (1, 2), asymmetric pads, bias + ReLU") {
    const Problem owned = conv_problem({2, 3, 11, 9, 4, 3, 2, 1, {2, 2}, {1, 2}, {1, 0, 2, 1}, true});
    check_onednn(owned->problem, names);
  }
  SECTION("depthwise, stride 2, asymmetric pads, bias + ReLU") {
    const Problem owned = conv_problem({1, 6, 10, 10, 6, 3, 3, 6, {2, 2}, {1, 1}, {0, 1, 1, 0}, true});
    check_onednn(owned->problem, names);
  }
  SECTION("2 groups, dilation 2, no bias") {
    const Problem owned = conv_problem({1, 4, 8, 7, 6, 3, 3, 2, {1, 1}, {2, 2}, {2, 2, 2, 2}, false});
    check_onednn(owned->problem, names);
  }
  SECTION("channels-last depthwise (NHWC in and out), bias + ReLU") {
    const Problem owned = channels_last(conv_problem({1, 16, 9, 10, 16, 3, 3, 16, {1, 1}, {1, 1}, {1, 1, 1, 1}, true}));
    check_onednn(owned->problem, {"oneDNN conv, plain NHWC", "oneDNN conv, preferred (blocked) layout"});
  }
  SECTION("channels-last dense conv, stride 2") {
    const Problem owned = channels_last(conv_problem({2, 8, 11, 9, 12, 3, 3, 1, {2, 2}, {1, 1}, {1, 0, 1, 1}, false}));
    check_onednn(owned->problem, {"oneDNN conv, plain NHWC", "oneDNN conv, preferred (blocked) layout"});
  }
  SECTION("OpenBLAS has no conv row") {
    const Problem owned = conv_problem({1, 4, 8, 7, 6, 3, 3, 2, {1, 1}, {1, 1}, {0, 0, 0, 0}, false});
    CHECK(make_openblas_rows(owned->problem, 1).empty());
  }
}

TEST_CASE("peers: softmax, layernorm and reductions over the last axis", "[peers]") {
  SECTION("softmax") {
    const Problem owned = last_axis_problem(PeerOp::Softmax, 7, 37);
    check_onednn(owned->problem, {"oneDNN softmax"});
    CHECK(make_openblas_rows(owned->problem, 1).empty());
  }
  SECTION("layernorm") {
    const Problem owned = last_axis_problem(PeerOp::LayerNorm, 7, 37);
    check_onednn(owned->problem, {"oneDNN layernorm"});
  }
  for (const std::string kind : {"sum", "mean", "max"}) {
    DYNAMIC_SECTION("reduce " << kind) {
      const Problem owned = last_axis_problem(PeerOp::Reduce, 7, 37, kind);
      check_onednn(owned->problem, {"oneDNN reduction " + kind});
      CHECK(make_openblas_rows(owned->problem, 1).empty());
    }
  }
}

TEST_CASE("peers: elementwise chains", "[peers]") {
  SECTION("binary first: add, relu, mul, sigmoid") {
    const Problem owned = elementwise_problem({"add", "relu", "mul", "sigmoid"}, {7, 37});
    check_onednn(owned->problem, {"oneDNN elementwise chain"});
    if (kOneDnnBuiltIn) {
      const std::string note = make_onednn_rows(owned->problem)[0].note;
      CHECK(note.find("binary primitive binary_add") == 0);
      CHECK(note.find("eltwise_logistic") != std::string::npos);
    }
    CHECK(make_openblas_rows(owned->problem, 1).empty());
  }
  SECTION("unary first: relu, tanh, sub, exp, abs on a 3-D shape") {
    const Problem owned = elementwise_problem({"relu", "tanh", "sub", "exp", "abs"}, {2, 5, 13});
    check_onednn(owned->problem, {"oneDNN elementwise chain"});
    if (kOneDnnBuiltIn) {
      // oneDNN 2.6 fuses post-ops into an eltwise primitive only in its slow reference code, so
      // the chain is split into jitted primitives instead.
      const std::string note = make_onednn_rows(owned->problem)[0].note;
      CHECK(note.find("eltwise primitive eltwise_relu") == 0);
      CHECK(note.find("then, in place") != std::string::npos);
      CHECK(note.find("impl ref") == std::string::npos);
    }
  }
  SECTION("a single unary step") {
    const Problem owned = elementwise_problem({"sigmoid"}, {7, 37});
    check_onednn(owned->problem, {"oneDNN elementwise chain"});
  }
}

TEST_CASE("peers: a problem oneDNN cannot express becomes an unavailable row, not an exception", "[peers]") {
  Problem owned = elementwise_problem({"add"}, {7, 37});
  owned->problem.steps = {"add", "gelu"};
  std::vector<KernelRow> rows = make_onednn_rows(owned->problem);
  REQUIRE(rows.size() == 1);
  CHECK_FALSE(rows[0].unavailable.empty());
  if (kOneDnnBuiltIn) CHECK(rows[0].unavailable.find("gelu") != std::string::npos);

  Problem reduce = last_axis_problem(PeerOp::Reduce, 7, 37, "sum");
  reduce->problem.reduce_kind = "prod";
  rows = make_onednn_rows(reduce->problem);
  REQUIRE(rows.size() == 1);
  CHECK_FALSE(rows[0].unavailable.empty());

  Problem matmul = matmul_problem(0, 4, 5, 6, false, false);
  matmul->problem.inputs.pop_back();  // B missing
  rows = make_onednn_rows(matmul->problem);
  REQUIRE(rows.size() == 1);
  CHECK_FALSE(rows[0].unavailable.empty());
  rows = make_openblas_rows(matmul->problem, 1);
  REQUIRE(rows.size() == 1);
  CHECK_FALSE(rows[0].unavailable.empty());
}

TEST_CASE("peers: FMA peak and memory bandwidth measurements", "[peers]") {
  CHECK(measure_fma_peak_gflops(1, 3) > 0);
  const double bandwidth = measure_memory_bandwidth_gbs(2, size_t(1) << 20, 2);
  CHECK(std::isfinite(bandwidth));
  CHECK(bandwidth > 0);
  const KernelRow row = make_fma_peak_row("test", 1);  // still a row for the kernel benchmark
  REQUIRE(row.unavailable.empty());
  CHECK(row.is_peak);
  row.run();
  CHECK(row.check_error() == 0);
}

TEST_CASE("peers: machine peak is measured once, then read from the cache", "[peers]") {
  TemporaryCacheHome home;
  const std::string path = machine_peak_cache_path();
  CHECK(path == (home.dir / "tessel" / "machine_peak.json").string());

  const MachinePeak first = machine_peak(1, false, quick_settings());
  CHECK_FALSE(first.from_cache);
  CHECK(first.fma_gflops > 0);
  CHECK(first.memory_gbs > 0);
  CHECK(first.threads == 1);
  CHECK(first.cpu == cpu_model_name());
  CHECK_FALSE(first.measured_at.empty());
  CHECK(std::filesystem::exists(path));

  const MachinePeak second = machine_peak(1, false, quick_settings());
  CHECK(second.from_cache);
  CHECK(second.fma_gflops == first.fma_gflops);
  CHECK(second.memory_gbs == first.memory_gbs);
  CHECK(second.measured_at == first.measured_at);
  CHECK(describe(second).find(second.cpu) != std::string::npos);
  CHECK(describe(second).find("cached") != std::string::npos);

  SECTION("each thread count has its own entry in the same file") {
    const MachinePeak two = machine_peak(2, false, quick_settings());
    CHECK_FALSE(two.from_cache);
    CHECK(two.threads == 2);
    CHECK(machine_peak(1, false, quick_settings()).from_cache);
    CHECK(machine_peak(2, false, quick_settings()).from_cache);
  }
  SECTION("remeasure replaces the entry") {
    const MachinePeak again = machine_peak(1, true, quick_settings());
    CHECK_FALSE(again.from_cache);
    const MachinePeak cached = machine_peak(1, false, quick_settings());
    CHECK(cached.from_cache);
    CHECK(cached.fma_gflops == again.fma_gflops);
    CHECK(cached.memory_gbs == again.memory_gbs);
  }
  SECTION("a corrupt cache is ignored and replaced") {
    for (const std::string garbage : {"{not json", "", "{\"format\": 3}", "[1, 2, 3]"}) {
      INFO("cache text: " << garbage);
      overwrite(path, garbage);
      CHECK_FALSE(machine_peak(1, false, quick_settings()).from_cache);
      CHECK(machine_peak(1, false, quick_settings()).from_cache);
    }
  }
  SECTION("no temporary files are left behind") {
    size_t files = 0;
    for (const auto &entry : std::filesystem::directory_iterator(home.dir / "tessel")) {
      INFO(entry.path().string());
      CHECK(entry.path().filename() == "machine_peak.json");
      ++files;
    }
    CHECK(files == 1);
  }
}

TEST_CASE("peers: an unwritable cache costs a warning, never an error", "[peers]") {
  TemporaryCacheHome home;
  // A file where the cache directory should be: create_directories must fail.
  overwrite((home.dir / "tessel").string(), "in the way");
  const MachinePeak peak = machine_peak(1, false, quick_settings());
  CHECK_FALSE(peak.from_cache);
  CHECK(peak.fma_gflops > 0);
  CHECK(peak.memory_gbs > 0);
}

TEST_CASE("peers: NaN where the reference has NaN agrees, NaN on one side does not", "[peers]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // A layer norm's Sqrt of a random, negative variance: NaN in both, the rest close.
  const std::vector<float> reference = {nan, 2.0f, -4.0f, inf};
  CHECK(max_relative_error(std::vector<float>{nan, 2.0f, -4.000004f, inf}, reference) < 1e-5);
  CHECK(std::isinf(max_relative_error(std::vector<float>{1.0f, 2.0f, -4.0f, inf}, reference)));
  CHECK(std::isinf(max_relative_error(std::vector<float>{nan, nan, -4.0f, inf}, reference)));
  CHECK(std::isinf(max_relative_error(std::vector<float>{nan, 2.0f, -4.0f, 1.0f}, reference)));
  CHECK(std::isinf(max_relative_error(std::vector<float>{nan, 2.0f, -4.0f, -inf}, reference)));
}
