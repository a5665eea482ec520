#include <Halide.h>

#include "tests/support/schedule_selfcheck.h"

#include <cmath>
#include <iostream>
#include <random>
#include <sstream>

#include "schedule/apply_schedule.h"

namespace tessel {
namespace {

/// Sends std::cerr into a string while alive (print_loop_nest writes there).
class CaptureStderr {
 public:
  CaptureStderr() : previous_(std::cerr.rdbuf(captured_.rdbuf())) {}
  ~CaptureStderr() { std::cerr.rdbuf(previous_); }
  std::string text() const { return captured_.str(); }

 private:
  std::ostringstream captured_;
  std::streambuf *previous_;
};

Halide::Buffer<float> random_matrix(int columns, int rows, unsigned seed) {
  Halide::Buffer<float> b(columns, rows);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < columns; ++c) b(c, r) = value(rng);
  return b;
}

}  // namespace

ComputeDesc matmul_compute_desc(int64_t m, int64_t n, int64_t k) {
  const AxisDesc j{"j", n, false}, i{"i", m, false}, r{"k$x", k, true};
  FuncDesc acc;
  acc.name = "acc";
  acc.pure_axes = {j, i};
  acc.stages = {StageDesc{-1, {j, i}, {}}, StageDesc{0, {r, j, i}, {}}};
  acc.consumers = {"out"};
  acc.inlinable = false;
  acc.flops_per_point = 2;
  FuncDesc out;
  out.name = "out";
  out.pure_axes = {j, i};
  out.stages = {StageDesc{-1, {j, i}, {"acc"}}};
  out.is_output = true;
  return ComputeDesc{{acc, out}};
}

Result<std::string> lower_matmul_with_schedule(int64_t m, int64_t n, int64_t k, const Schedule &schedule) {
  if (m < 1 || n < 1 || k < 1 || m > 4096 || n > 4096 || k > 4096)
    return make_error("matmul self-check sizes must lie in 1..4096, got " + std::to_string(m) + "x" +
                      std::to_string(n) + "x" + std::to_string(k));
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  Halide::Buffer<float> a = random_matrix(K, M, 1), b = random_matrix(N, K, 2);
  try {
    Halide::Var j("j"), i("i");
    Halide::RDom r(Halide::Region{{0, K}}, "k");
    Halide::Func acc("acc"), out("out");
    acc(j, i) = 0.0f;
    acc(j, i) += a(r.x, i) * b(j, r.x);
    out(j, i) = acc(j, i);

    std::map<std::string, Halide::Func> funcs{{"acc", acc}, {"out", out}};
    Result<void> applied = apply_schedule(schedule, funcs);
    if (!applied) return applied.error();
    out.bound(j, 0, N).bound(i, 0, M);

    std::string loop_nest;
    {
      CaptureStderr capture;
      out.print_loop_nest();
      loop_nest = capture.text();
    }
    Halide::Buffer<float> result = out.realize({N, M});
    for (int row = 0; row < M; ++row)
      for (int col = 0; col < N; ++col) {
        double want = 0;
        for (int t = 0; t < K; ++t) want += static_cast<double>(a(t, row)) * b(col, t);
        if (std::abs(result(col, row) - want) > 1e-4 * K + 1e-4)
          return make_error("scheduled matmul differs from the reference at row " + std::to_string(row) +
                            ", column " + std::to_string(col) + ": got " + std::to_string(result(col, row)) +
                            ", want " + std::to_string(want));
      }
    return loop_nest;
  } catch (const Halide::Error &e) {
    return make_error(std::string("Halide: ") + e.what());
  }
}

}  // namespace tessel
