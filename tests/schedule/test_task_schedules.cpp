// Schedules replayed onto real task pipelines (plain conv/matmul computes, fused epilogues)
// must compute what the built-in default schedule computes.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "graph/passes/block_conv_weights.h"
#include "graph/passes/pass_manager.h"
#include "schedule/schedule_tree.h"
#include "search/cpu/cpu_target.h"
#include "search/cpu/parallel_resplit.h"
#include "search/cpu/sampler.h"
#include "search/cpu/source_placement.h"
#include "tests/support/task_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

std::shared_ptr<const Graph> matmul_graph(int64_t m, int64_t n, int64_t k) {
  GraphBuilder b("matmul");
  const int a = b.input("a", DType::Float32, {m, k});
  const int w = b.weight("w", DType::Float32, {k, n}, 7);
  return b.finish({b.node("MatMul", {a, w})});
}

/// Conv (3x3, pad 1) + bias + ReLU + residual Add: one fused task.
std::shared_ptr<const Graph> conv_block_graph(int64_t c, int64_t hw) {
  GraphBuilder b("conv_block");
  const int x = b.input("x", DType::Float32, {1, c, hw, hw});
  const int w = b.weight("w", DType::Float32, {c, c, 3, 3}, 3);
  const int bias = b.weight("b", DType::Float32, {c}, 4);
  Attributes attrs;
  attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
  const int conv = b.node("Conv", {x, w, bias}, attrs);
  const int relu = b.node("Relu", {conv});
  return b.finish({b.node("Add", {relu, x})});
}

std::vector<Tensor> run_with(const Task &task, const Schedule *schedule, const std::vector<Tensor> &inputs) {
  auto kernel = compile_task(task, schedule);
  INFO((kernel.ok() ? std::string() : kernel.error().message));
  REQUIRE(kernel.ok());
  auto out = run_task(kernel.value(), task, inputs);
  INFO((out.ok() ? std::string() : out.error().message));
  REQUIRE(out.ok());
  return out.value();
}

}  // namespace

TEST_CASE("a plain matmul task exposes its accumulator and the output", "[schedule][task]") {
  Task task = largest_task(matmul_graph(64, 48, 32));
  REQUIRE(task.compute.funcs.size() == 2);
  const FuncDesc &acc = task.compute.funcs[0];
  const FuncDesc &out = task.compute.funcs[1];
  CHECK_FALSE(acc.inlinable);
  CHECK(out.is_output);
  REQUIRE(acc.stages.size() == 2);
  CHECK(acc.stages[1].axes[0].reduction);
  CHECK(acc.stages[1].axes[0].extent == 32);
  REQUIRE(out.pure_axes.size() == 2);
  CHECK(out.pure_axes[0].extent == 48);  // innermost: N
  CHECK(out.pure_axes[0].name == acc.pure_axes[0].name);
  REQUIRE(acc.consumers == std::vector<std::string>{out.name});
  CHECK(validate_and_replay(task.compute, Schedule{}).ok());
}

TEST_CASE("a hand schedule on a fused conv block matches the default schedule", "[schedule][task]") {
  Task task = largest_task(conv_block_graph(16, 20));
  REQUIRE(task.group.nodes.size() == 3);
  // The zero-padded input (a source the schedule may place), the accumulator, the output.
  REQUIRE(task.compute.funcs.size() == 3);
  const FuncDesc &padded = task.compute.funcs[0];
  const FuncDesc &acc = task.compute.funcs[1];
  const FuncDesc &out = task.compute.funcs[2];
  CHECK(padded.placeable_source);
  CHECK(padded.consumers == std::vector<std::string>{acc.name});
  REQUIRE(padded.pure_axes.size() == 4);
  CHECK(padded.pure_axes[0].extent == 22);  // the 20 columns and a pad on either side
  // Axes innermost first: x, y, channel, batch; the update adds kx, ky, ic innermost.
  REQUIRE(out.pure_axes.size() == 4);
  CHECK(out.pure_axes[0].extent == 20);
  CHECK(out.pure_axes[2].extent == 16);
  REQUIRE(acc.stages[1].axes.size() == 7);
  CHECK(acc.stages[1].axes[2].extent == 16);  // input channels
  const std::string x = out.pure_axes[0].name, y = out.pure_axes[1].name, ch = out.pure_axes[2].name;
  const std::string text = "tessel-schedule v1\n"
                           "split " + out.name + " " + ch + " co ci 4 shift_inwards\n"
                           "split " + out.name + " " + x + " xo xi 8 shift_inwards\n"
                           "reorder " + out.name + " xi ci xo " + y + " co\n"
                           "parallel " + out.name + " co\n"
                           "vectorize " + out.name + " xi\n"
                           "compute_at " + acc.name + " " + out.name + " xo\n"
                           "vectorize " + acc.name + " " + x + "\n"
                           "reorder " + acc.name + ".u0 " + x + " " + ch + " " + acc.stages[1].axes[0].name + " " +
                           acc.stages[1].axes[1].name + " " + acc.stages[1].axes[2].name + "\n"
                           "vectorize " + acc.name + ".u0 " + x + "\n"
                           "unroll " + acc.name + ".u0 " + ch + "\n";
  auto schedule = parse_schedule(text);
  INFO(text << (schedule.ok() ? std::string() : schedule.error().message));
  REQUIRE(schedule.ok());
  auto tree = validate_and_replay(task.compute, schedule.value());
  INFO((tree.ok() ? tree->to_text() : tree.error().message));
  REQUIRE(tree.ok());
  const std::vector<Tensor> inputs = task_inputs(task, 11);
  const auto want = run_with(task, nullptr, inputs);
  const auto got = run_with(task, &schedule.value(), inputs);
  CHECK(max_relative_difference(got, want) < 1e-5);
  // The padded copy moved into each parallel task, then into each tile: same results.
  for (const std::string &loop : {"co", "xo"}) {
    INFO("padded copy at " << loop);
    auto placed = parse_schedule(text + "compute_at " + padded.name + " " + out.name + " " + loop + "\n");
    REQUIRE(placed.ok());
    REQUIRE(validate_and_replay(task.compute, placed.value()).ok());
    CHECK(max_relative_difference(run_with(task, &placed.value(), inputs), want) < 1e-5);
  }
}

TEST_CASE("the padded copy moves into the parallel loop of a tuned conv schedule", "[schedule][task]") {
  Task task = largest_task(conv_block_graph(16, 20));
  const std::vector<Tensor> inputs = task_inputs(task, 13);
  const auto want = run_with(task, nullptr, inputs);
  std::mt19937_64 rng(9);
  int moved = 0;
  for (const Schedule &s : sample_schedules(task.compute, avx512_target(2), 8, rng)) {
    const std::optional<Schedule> variant = with_sources_in_parallel_loop(task.compute, s);
    if (!variant) continue;
    INFO(to_text(*variant));
    ++moved;
    // One step more: the copy at the output's parallel loop; a second call finds it placed.
    REQUIRE(variant->steps.size() == s.steps.size() + 1);
    const auto *at = std::get_if<ComputeAtStep>(&variant->steps.back());
    REQUIRE(at);
    CHECK(at->func == task.compute.funcs[0].name);
    CHECK_FALSE(with_sources_in_parallel_loop(task.compute, *variant));
    CHECK(max_relative_difference(run_with(task, &*variant, inputs), want) < 1e-5);
  }
  CHECK(moved > 0);
}

TEST_CASE("a schedule's parallel loop moves to its other outer loops and computes the same", "[schedule][task]") {
  // A batched product like a Winograd transform's: 6 points, 16 x 24 by 24 x 49 tiles.
  GraphBuilder b("batched");
  const int a = b.input("a", DType::Float32, {6, 16, 24});
  const int w = b.weight("w", DType::Float32, {6, 24, 49}, 5);
  Task task = largest_task(b.finish({b.node("MatMul", {a, w})}));
  const std::vector<Tensor> inputs = task_inputs(task, 17);
  const auto want = run_with(task, nullptr, inputs);
  std::mt19937_64 rng(21);
  int variants = 0;
  for (const Schedule &s : sample_schedules(task.compute, avx512_target(2), 10, rng)) {
    for (const Schedule &moved : with_parallel_loop_moved(task.compute, s, 2)) {
      INFO(to_text(s) << "->\n" << to_text(moved));
      ++variants;
      // Exactly one parallel loop, on a loop that was not the old parallel one.
      int parallel_steps = 0;
      for (const ScheduleStep &step : moved.steps) parallel_steps += std::holds_alternative<ParallelStep>(step);
      CHECK(parallel_steps == 1);
      CHECK(moved != s);
      CHECK(max_relative_difference(run_with(task, &moved, inputs), want) < 1e-5);
    }
  }
  CHECK(variants > 0);
}

TEST_CASE("sampled schedules of a conv over a blocked weight match the default schedule", "[schedule][task]") {
  auto blocked = run_passes(*conv_block_graph(32, 10), {{"block_conv_weights", block_conv_weights}});
  INFO((blocked.ok() ? std::string() : blocked.error().message));
  REQUIRE(blocked.ok());
  Task task = largest_task(std::make_shared<const Graph>(std::move(blocked.value())));
  REQUIRE(task.compute.funcs.size() == 3);  // padded input, accumulator, output
  // The accumulator's axes: 16 channel lanes, x, y, 2 channel blocks, batch.
  const FuncDesc &acc = task.compute.funcs[1];
  REQUIRE(acc.pure_axes.size() == 5);
  CHECK(acc.pure_axes[0].extent == 16);
  CHECK(acc.pure_axes[1].extent == 10);
  CHECK(acc.pure_axes[3].extent == 2);
  const std::vector<Tensor> inputs = task_inputs(task, 12);
  const auto want = run_with(task, nullptr, inputs);
  std::mt19937_64 rng(5);
  std::vector<Schedule> schedules = sample_schedules(task.compute, avx512_target(2), 6, rng);
  schedules.push_back(default_cpu_schedule(task.compute, avx512_target(2)));
  for (const Schedule &s : schedules) {
    INFO(to_text(s));
    CHECK(max_relative_difference(run_with(task, &s, inputs), want) < 1e-5);
  }
}

TEST_CASE("a task compiles ahead of time into an object and a header", "[schedule][task][aot]") {
  Task task = largest_task(conv_block_graph(8, 12));
  const std::string dir = std::filesystem::temp_directory_path() / ("tessel_aot_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto out = compile_task_to_object(task, nullptr, Target{}, dir + "/conv_block", "conv_block");
  INFO((out.ok() ? std::string() : out.error().message));
  REQUIRE(out.ok());
  CHECK(std::filesystem::file_size(out->object_path) > 1000);
  std::ifstream header(out->header_path);
  const std::string text((std::istreambuf_iterator<char>(header)), std::istreambuf_iterator<char>());
  CHECK(text.find("int conv_block(") != std::string::npos);
  // A bad function name is an error value, and leaves no files behind.
  auto bad = compile_task_to_object(task, nullptr, Target{}, dir + "/bad", "not a name");
  CHECK_FALSE(bad.ok());
  CHECK_FALSE(std::filesystem::exists(dir + "/bad.o"));
  CHECK_FALSE(compile_task_to_object(task, nullptr, Target{}, dir + "/missing/dir/k", "k").ok());
  std::filesystem::remove_all(dir);
}
