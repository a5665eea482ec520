// Property tests of the schedule space: schedules sampled from the CPU sketches must apply,
// compile and compute what the built-in default schedule computes, on the real task
// pipelines (plain conv/matmul with fused epilogues, and tasks whose members keep built-in
// internal schedules). TESSEL_PROPERTY_SAMPLES sets the samples per task (default 8; the
// issue's full run uses 200).
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "codegen/target.h"
#include "graph/passes/block_conv_weights.h"
#include "graph/passes/block_nhwc_conv_weights.h"
#include "graph/passes/channels_last_conv.h"
#include "graph/passes/panel_matmul_weights.h"
#include "graph/passes/pass_manager.h"
#include "search/cpu/mutation.h"
#include "search/cpu/sampler.h"
#include "tests/support/task_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

int samples_per_task() {
  const char *env = std::getenv("TESSEL_PROPERTY_SAMPLES");
  return env ? std::max(1, std::atoi(env)) : 8;
}

Attributes ints_attrs(std::initializer_list<std::pair<const char *, std::vector<int64_t>>> values) {
  Attributes a;
  for (const auto &[name, v] : values) a.set(name, v);
  return a;
}

std::shared_ptr<const Graph> matmul(int64_t m, int64_t n, int64_t k) {
  GraphBuilder b("matmul");
  const int a = b.input("a", DType::Float32, {m, k});
  return b.finish({b.node("MatMul", {a, b.weight("w", DType::Float32, {k, n}, 7)})});
}

/// A MatMul whose constant B panel_matmul_weights stored as panels of 16 columns.
std::shared_ptr<const Graph> paneled_matmul(int64_t m, int64_t n, int64_t k) {
  auto converted = run_passes(*matmul(m, n, k), {{"panel_matmul_weights", panel_matmul_weights}});
  REQUIRE(converted.ok());
  int paneled = 0;
  for (const Node &node : converted.value().nodes) paneled += matmul_panel_width(node) > 1;
  REQUIRE(paneled == 1);
  return std::make_shared<const Graph>(std::move(converted.value()));
}

std::shared_ptr<const Graph> conv(int64_t c_in, int64_t c_out, int64_t hw, int64_t kernel, int64_t stride,
                                  int64_t group) {
  GraphBuilder b("conv");
  const int x = b.input("x", DType::Float32, {1, c_in, hw, hw});
  const int w = b.weight("w", DType::Float32, {c_out, c_in / group, kernel, kernel}, 3);
  const int64_t pad = kernel / 2;
  Attributes attrs = ints_attrs({{"pads", {pad, pad, pad, pad}}, {"strides", {stride, stride}}});
  attrs.set("group", group);
  return b.finish({b.node("Conv", {x, w, b.weight("b", DType::Float32, {c_out}, 4)}, attrs)});
}

/// A depthwise 3x3 conv + ReLU after channels_last_conv: a TesselConvNHWC task (the
/// largest group, between the Transposes in and out).
std::shared_ptr<const Graph> channels_last_depthwise(int64_t c, int64_t hw, int64_t stride) {
  GraphBuilder b("depthwise");
  const int x = b.input("x", DType::Float32, {1, c, hw, hw});
  Attributes attrs = ints_attrs({{"pads", {1, 1, 1, 1}}, {"strides", {stride, stride}}});
  attrs.set("group", c);
  const int conv = b.node("Conv", {x, b.weight("w", DType::Float32, {c, 1, 3, 3}, 3), b.weight("b", DType::Float32, {c}, 4)},
                          attrs);
  auto graph = b.finish({b.node("Relu", {conv})});
  auto converted = run_passes(*graph, {{"channels_last_conv", channels_last_conv}});
  REQUIRE(converted.ok());
  int nhwc = 0;
  for (const Node &node : converted.value().nodes) nhwc += node.op_type == kConvNhwcOp;
  REQUIRE(nhwc == 1);
  return std::make_shared<const Graph>(std::move(converted.value()));
}

/// A depthwise 3x3 conv then a 1x1 conv c -> m after channels_last_conv and
/// block_nhwc_conv_weights: the pointwise conv (the largest task) reads a weight blocked by
/// 16 output channels.
std::shared_ptr<const Graph> channels_last_blocked_pointwise(int64_t c, int64_t m, int64_t hw) {
  GraphBuilder b("pointwise");
  const int x = b.input("x", DType::Float32, {1, c, hw, hw});
  Attributes attrs = ints_attrs({{"pads", {1, 1, 1, 1}}});
  attrs.set("group", c);
  const int depthwise = b.node("Conv", {x, b.weight("wd", DType::Float32, {c, 1, 3, 3}, 3)}, attrs);
  const int pointwise = b.node(
      "Conv", {b.node("Relu", {depthwise}), b.weight("w", DType::Float32, {m, c, 1, 1}, 5), b.weight("b", DType::Float32, {m}, 4)},
      Attributes{});
  auto graph = b.finish({b.node("Relu", {pointwise})});
  auto converted = run_passes(*graph, {{"channels_last_conv", channels_last_conv},
                                       {"block_nhwc_conv_weights", block_nhwc_conv_weights}});
  REQUIRE(converted.ok());
  int blocked = 0;
  for (const Node &node : converted.value().nodes) blocked += node.op_type == kConvNhwcOp && conv_weight_block(node) > 1;
  REQUIRE(blocked == 1);
  return std::make_shared<const Graph>(std::move(converted.value()));
}

/// ResNet's basic-block tail: conv 3x3 + bias + ReLU + residual Add, one fused task.
std::shared_ptr<const Graph> conv_bias_relu_residual(int64_t c, int64_t hw) {
  GraphBuilder b("block");
  const int x = b.input("x", DType::Float32, {1, c, hw, hw});
  const int w = b.weight("w", DType::Float32, {c, c, 3, 3}, 3);
  const int conv = b.node("Conv", {x, w, b.weight("b", DType::Float32, {c}, 4)}, ints_attrs({{"pads", {1, 1, 1, 1}}}));
  return b.finish({b.node("Add", {b.node("Relu", {conv}), x})});
}

std::shared_ptr<const Graph> softmax(int64_t rows, int64_t cols) {
  GraphBuilder b("softmax");
  return b.finish({b.node("Softmax", {b.input("x", DType::Float32, {rows, cols})})});
}

std::shared_ptr<const Graph> layer_norm(int64_t rows, int64_t cols) {
  GraphBuilder b("layer_norm");
  const int x = b.input("x", DType::Float32, {rows, cols});
  Attributes attrs;
  attrs.set("axis", int64_t{-1});
  return b.finish({b.node("LayerNormalization",
                          {x, b.weight("g", DType::Float32, {cols}, 5), b.weight("b", DType::Float32, {cols}, 6)}, attrs)});
}

std::shared_ptr<const Graph> reduce_sum(int64_t rows, int64_t cols) {
  GraphBuilder b("reduce");
  const int x = b.input("x", DType::Float32, {rows, cols});
  TensorType axes_type{DType::Int64, {1}, true};
  const int axes = b.g.add_tensor({"axes", axes_type, Tensor::from_int64s({1}, {1})});
  return b.finish({b.node("ReduceSum", {x, axes})});
}

std::shared_ptr<const Graph> transpose(int64_t rows, int64_t cols) {
  GraphBuilder b("transpose");
  return b.finish({b.node("Transpose", {b.input("x", DType::Float32, {rows, cols})}, ints_attrs({{"perm", {1, 0}}}))});
}

/// Samples schedules for the task and checks each against the default schedule's output.
void check_sampled_schedules(const std::string &label, std::shared_ptr<const Graph> graph) {
  Task task = largest_task(std::move(graph));
  const CpuTargetDesc cpu = cpu_target_desc(Target{});
  std::mt19937_64 rng(2026);
  SamplerStats stats;
  const int count = samples_per_task();
  const std::vector<Schedule> schedules = sample_schedules(task.compute, cpu, count, rng, &stats);
  REQUIRE(static_cast<int>(schedules.size()) == count);

  const std::vector<Tensor> inputs = task_inputs(task, 99);
  auto reference_kernel = compile_task(task, nullptr);
  REQUIRE(reference_kernel.ok());
  auto reference = run_task(reference_kernel.value(), task, inputs);
  REQUIRE(reference.ok());

  int failed_to_build = 0, wrong = 0;
  std::string first_problem;
  for (const Schedule &schedule : schedules) {
    auto kernel = compile_task(task, &schedule);
    if (!kernel.ok()) {
      ++failed_to_build;
      if (first_problem.empty()) first_problem = to_text(schedule) + "\n" + kernel.error().message;
      continue;
    }
    auto got = run_task(kernel.value(), task, inputs);
    const double diff = got.ok() ? max_relative_difference(got.value(), reference.value()) : 1e30;
    if (!(diff < 1e-4)) {
      ++wrong;
      if (first_problem.empty())
        first_problem = to_text(schedule) + "\n" + (got.ok() ? "max relative difference " + std::to_string(diff) : got.error().message);
    }
  }
  std::printf("%-28s %3d schedules: %d did not build, %d wrong; sampler first-try validity %.1f%%, %lld fallbacks\n",
              label.c_str(), count, failed_to_build, wrong, 100.0 * stats.first_try_rate(),
              static_cast<long long>(stats.fallbacks));
  INFO(label << ": " << first_problem);
  CHECK(wrong == 0);
  CHECK(failed_to_build * 100 <= count);  // at least 99% apply and compile
}

}  // namespace

TEST_CASE("sampled schedules of matmul tasks compute the default's output", "[schedule][property]") {
  check_sampled_schedules("matmul 512x512x512", matmul(512, 512, 512));
  check_sampled_schedules("matmul 197x83x61", matmul(197, 83, 61));
  check_sampled_schedules("matmul 96x192x80, B paneled", paneled_matmul(96, 192, 80));
}

TEST_CASE("sampled schedules of conv tasks compute the default's output", "[schedule][property]") {
  check_sampled_schedules("conv 3x3 64->64 56x56", conv(64, 64, 56, 3, 1, 1));
  check_sampled_schedules("conv 1x1 64->128 28x28", conv(64, 128, 28, 1, 1, 1));
  check_sampled_schedules("conv 3x3 s2 64->128 56x56", conv(64, 128, 56, 3, 2, 1));
  // Channels-last depthwise convs (TesselConvNHWC): stride 1 reads a padded copy the
  // schedule may place, stride 2 reads through the padding; 24 channels leave a partial
  // vector.
  check_sampled_schedules("depthwise 3x3 32ch 28x28", conv(32, 32, 28, 3, 1, 32));
  check_sampled_schedules("NHWC depthwise 32ch 28x28", channels_last_depthwise(32, 28, 1));
  check_sampled_schedules("NHWC depthwise s2 24ch 28x28", channels_last_depthwise(24, 28, 2));
  check_sampled_schedules("NHWC blocked 1x1 48->64 7x7", channels_last_blocked_pointwise(48, 64, 7));
  check_sampled_schedules("conv+bias+relu+residual", conv_bias_relu_residual(32, 28));
}

TEST_CASE("sampled schedules of other tasks compute the default's output", "[schedule][property]") {
  check_sampled_schedules("softmax 64x1000", softmax(64, 1000));
  check_sampled_schedules("layer norm 128x256", layer_norm(128, 256));
  check_sampled_schedules("reduce sum 64x4096 axis 1", reduce_sum(64, 4096));
  check_sampled_schedules("transpose 256x384", transpose(256, 384));
}

TEST_CASE("mutations of sampled schedules stay valid and compute the same", "[schedule][property]") {
  Task task = largest_task(conv_bias_relu_residual(16, 14));
  const CpuTargetDesc cpu = cpu_target_desc(Target{});
  std::mt19937_64 rng(7);
  const std::vector<Tensor> inputs = task_inputs(task, 5);
  auto reference = run_task(compile_task(task, nullptr).value(), task, inputs).value();
  Schedule current = sample_schedules(task.compute, cpu, 1, rng).front();
  for (int i = 0; i < 4; ++i) {
    auto next = mutate_schedule(task.compute, current, cpu, rng);
    INFO((next.ok() ? std::string() : next.error().message));
    REQUIRE(next.ok());
    CHECK(next.value() != current);
    auto kernel = compile_task(task, &next.value());
    INFO(to_text(next.value()) << (kernel.ok() ? std::string() : kernel.error().message));
    REQUIRE(kernel.ok());
    CHECK(max_relative_difference(run_task(kernel.value(), task, inputs).value(), reference) < 1e-4);
    current = next.value();
  }
}
