#include <Halide.h>

#include "tests/support/schedule_selfcheck_conv.h"

#include <cmath>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <tuple>

#include "schedule/apply_schedule.h"

namespace tessel {
namespace {

/// Sends std::cerr into a string while alive (print_loop_nest writes there).
class StderrCapture {
 public:
  StderrCapture() : previous_(std::cerr.rdbuf(captured_.rdbuf())) {}
  ~StderrCapture() { std::cerr.rdbuf(previous_); }
  std::string text() const { return captured_.str(); }

 private:
  std::ostringstream captured_;
  std::streambuf *previous_;
};

void fill_random(Halide::Buffer<float> &b, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  b.for_each_value([&](float &v) { v = value(rng); });
}

struct ConvInputs {
  Halide::Buffer<float> input, weights, bias;
  std::vector<float> expected;  // out(x, y, c, n), x fastest
};

using ShapeKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

/// Random inputs and the naive result; computed once per shape (the naive loop is slow).
const ConvInputs &inputs_for(const ConvCheckShape &s) {
  static std::mutex mutex;
  static std::map<ShapeKey, ConvInputs> cache;
  std::lock_guard<std::mutex> lock(mutex);
  const ShapeKey key{s.batch, s.in_channels, s.out_channels, s.height, s.width, s.kernel, s.stride, s.pad, s.depthwise};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const int N = static_cast<int>(s.batch), C = static_cast<int>(s.in_channels),
            OC = static_cast<int>(s.output_channels()), H = static_cast<int>(s.height), W = static_cast<int>(s.width),
            K = static_cast<int>(s.kernel), S = static_cast<int>(s.stride), P = static_cast<int>(s.pad);
  const int OH = static_cast<int>(s.out_height()), OW = static_cast<int>(s.out_width());
  ConvInputs in;
  in.input = Halide::Buffer<float>(W, H, C, N);
  in.weights = s.depthwise ? Halide::Buffer<float>(K, K, C) : Halide::Buffer<float>(K, K, C, OC);
  in.bias = Halide::Buffer<float>(OC);
  fill_random(in.input, 1);
  fill_random(in.weights, 2);
  fill_random(in.bias, 3);
  in.expected.assign(static_cast<size_t>(OW) * OH * OC * N, 0.0f);
  for (int n = 0; n < N; ++n)
    for (int oc = 0; oc < OC; ++oc)
      for (int y = 0; y < OH; ++y)
        for (int x = 0; x < OW; ++x) {
          double sum = in.bias(oc);
          for (int ic = s.depthwise ? oc : 0; ic < (s.depthwise ? oc + 1 : C); ++ic)
            for (int ky = 0; ky < K; ++ky)
              for (int kx = 0; kx < K; ++kx) {
                const int ix = x * S + kx - P, iy = y * S + ky - P;
                if (ix < 0 || iy < 0 || ix >= W || iy >= H) continue;
                const float w = s.depthwise ? in.weights(kx, ky, oc) : in.weights(kx, ky, ic, oc);
                sum += static_cast<double>(in.input(ix, iy, ic, n)) * w;
              }
          in.expected[((static_cast<size_t>(n) * OC + oc) * OH + y) * OW + x] = static_cast<float>(std::max(sum, 0.0));
        }
  return cache.emplace(key, std::move(in)).first->second;
}

}  // namespace

ComputeDesc conv_check_desc(const ConvCheckShape &s) {
  const AxisDesc x{"x", s.out_width()}, y{"y", s.out_height()}, c{"c", s.output_channels()}, n{"n", s.batch};
  FuncDesc pad;
  pad.name = "pad";
  pad.pure_axes = {{"x", s.width + 2 * s.pad}, {"y", s.height + 2 * s.pad}, {"c", s.in_channels}, {"n", s.batch}};
  pad.stages = {StageDesc{-1, pad.pure_axes, {}}};
  pad.consumers = {"acc"};
  FuncDesc acc;
  acc.name = "acc";
  acc.pure_axes = {x, y, c, n};
  std::vector<AxisDesc> update = {{"r$x", s.kernel, true}, {"r$y", s.kernel, true}};
  if (!s.depthwise) update.push_back({"r$z", s.in_channels, true});
  update.insert(update.end(), {x, y, c, n});
  acc.stages = {StageDesc{-1, acc.pure_axes, {}}, StageDesc{0, update, {"pad"}}};
  acc.consumers = {"out"};
  acc.inlinable = false;
  acc.flops_per_point = 2;
  FuncDesc out;
  out.name = "out";
  out.pure_axes = acc.pure_axes;
  out.stages = {StageDesc{-1, out.pure_axes, {"acc"}}};
  out.is_output = true;
  return ComputeDesc{{pad, acc, out}};
}

Result<std::string> lower_conv_with_schedule(const ConvCheckShape &s, const Schedule &schedule) {
  if (s.batch < 1 || s.in_channels < 1 || s.output_channels() < 1 || s.kernel < 1 || s.stride < 1 || s.pad < 0 ||
      s.out_height() < 1 || s.out_width() < 1 || s.batch * s.in_channels * s.height * s.width > (int64_t{1} << 24))
    return make_error("conv self-check shape is out of range");
  const ConvInputs &in = inputs_for(s);
  const int W = static_cast<int>(s.width), H = static_cast<int>(s.height), P = static_cast<int>(s.pad),
            S = static_cast<int>(s.stride), K = static_cast<int>(s.kernel), C = static_cast<int>(s.in_channels);
  const int OW = static_cast<int>(s.out_width()), OH = static_cast<int>(s.out_height()),
            OC = static_cast<int>(s.output_channels()), N = static_cast<int>(s.batch);
  try {
    Halide::Var x("x"), y("y"), c("c"), n("n");
    Halide::Func pad("pad"), acc("acc"), out("out");
    Halide::Buffer<float> input = in.input, weights = in.weights, bias = in.bias;
    const Halide::Expr ix = x - P, iy = y - P;
    pad(x, y, c, n) = Halide::select(ix >= 0 && ix < W && iy >= 0 && iy < H,
                                     input(Halide::clamp(ix, 0, W - 1), Halide::clamp(iy, 0, H - 1), c, n), 0.0f);
    acc(x, y, c, n) = 0.0f;
    if (s.depthwise) {
      Halide::RDom r(Halide::Region{{0, K}, {0, K}}, "r");
      acc(x, y, c, n) += pad(x * S + r.x, y * S + r.y, c, n) * weights(r.x, r.y, c);
    } else {
      Halide::RDom r(Halide::Region{{0, K}, {0, K}, {0, C}}, "r");
      acc(x, y, c, n) += pad(x * S + r.x, y * S + r.y, r.z, n) * weights(r.x, r.y, r.z, c);
    }
    out(x, y, c, n) = Halide::max(acc(x, y, c, n) + bias(c), 0.0f);

    std::map<std::string, Halide::Func> funcs{{"pad", pad}, {"acc", acc}, {"out", out}};
    Result<void> applied = apply_schedule(schedule, funcs);
    if (!applied) return applied.error();
    out.bound(x, 0, OW).bound(y, 0, OH).bound(c, 0, OC).bound(n, 0, N);

    std::string loop_nest;
    {
      StderrCapture capture;
      out.print_loop_nest();
      loop_nest = capture.text();
    }
    Halide::Buffer<float> result = out.realize({OW, OH, OC, N});
    const double tolerance = 1e-4 * (s.depthwise ? K * K : K * K * C) + 1e-4;
    for (int b = 0; b < N; ++b)
      for (int oc = 0; oc < OC; ++oc)
        for (int row = 0; row < OH; ++row)
          for (int col = 0; col < OW; ++col) {
            const float want = in.expected[((static_cast<size_t>(b) * OC + oc) * OH + row) * OW + col];
            const float got = result(col, row, oc, b);
            if (std::abs(got - want) > tolerance)
              return make_error("scheduled conv differs from the reference at x " + std::to_string(col) + ", y " +
                                std::to_string(row) + ", c " + std::to_string(oc) + ", n " + std::to_string(b) +
                                ": got " + std::to_string(got) + ", want " + std::to_string(want));
          }
    return loop_nest;
  } catch (const Halide::Error &e) {
    return make_error(std::string("Halide: ") + e.what());
  }
}

}  // namespace tessel
