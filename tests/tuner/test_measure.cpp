// Measurement in worker processes: good schedules are timed and checked, bad ones become
// error records, and a crashing or hanging worker costs one record.
#include <catch2/catch.hpp>

#include "graph/fusion/fuse.h"
#include "search/cpu/sampler.h"
#include "tuner/benchmark_problems.h"
#include "tests/support/jit_buffer_check.h"
#include "tuner/measure.h"

using namespace tessel;

namespace {

Task matmul_task(const std::string &spec) {
  auto graph = make_benchmark_graph("matmul", spec);
  REQUIRE(graph.ok());
  auto task = make_task(graph.value(), partition_graph(*graph.value()).front());
  REQUIRE(task.ok());
  return task.value();
}

MeasureOptions quick_options() {
  MeasureOptions options;
  options.timing.min_runs = 3;
  options.timing.min_seconds = 0.01;
  return options;
}

}  // namespace

TEST_CASE("workers time good schedules and report bad ones as errors", "[tuner][measure]") {
  Task task = matmul_task("96x80x64");
  Measurer measurer(task, Target{}, quick_options());
  auto baseline = measurer.prepare_reference();
  INFO((baseline.ok() ? std::string() : baseline.error().message));
  REQUIRE(baseline.ok());
  CHECK(baseline->median_seconds > 0);

  const Schedule good = default_cpu_schedule(task.compute, avx512_target());
  auto bad = parse_schedule("tessel-schedule v1\nsplit no_such_func x xo xi 4 auto\n");
  REQUIRE(bad.ok());
  const auto results = measurer.measure({good, bad.value()});
  REQUIRE(results.size() == 2);
  INFO(results[0].error);
  CHECK(results[0].status == RecordStatus::Ok);
  CHECK(results[0].seconds.size() >= 3);
  CHECK(results[0].median_seconds > 0);
  CHECK(results[0].compile_seconds > 0);
  CHECK(results[1].status == RecordStatus::CompileError);
  CHECK(results[1].error.find("no_such_func") != std::string::npos);
}

TEST_CASE("a crashing or hanging worker costs one record", "[tuner][measure]") {
  Task task = matmul_task("32x32x32");
  const Schedule good = default_cpu_schedule(task.compute, avx512_target());
  MeasureOptions crash = quick_options();
  crash.inject_fault = "crash";
  Measurer crashing(task, Target{}, crash);
  auto crashed = crashing.measure({good, good});
  REQUIRE(crashed.size() == 2);
  CHECK(crashed[0].status == RecordStatus::Crash);
  CHECK(crashed[0].error.find("Segmentation") != std::string::npos);
  CHECK(crashed[1].status == RecordStatus::Crash);

  MeasureOptions hang = quick_options();
  hang.inject_fault = "hang";
  hang.run_timeout_seconds = 1;
  Measurer hanging(task, Target{}, hang);
  auto hung = hanging.measure({good});
  REQUIRE(hung.size() == 1);
  CHECK(hung[0].status == RecordStatus::Timeout);

  // A fresh measurer in the same process still measures normally afterwards.
  Measurer fine(task, Target{}, quick_options());
  auto ok = fine.measure({good});
  INFO(ok[0].error);
  CHECK(ok[0].status == RecordStatus::Ok);
}

namespace {

/// A Builder that counts what it builds and hands the work to the local one.
struct CountingBuilder : Builder {
  LocalBuilder local{1};
  size_t built = 0;
  std::vector<CandidateWorker> build(const std::vector<BuildJob> &jobs) override {
    built += jobs.size();
    return local.build(jobs);
  }
};

/// A Runner that times nothing: every compiled candidate is killed and reported as a crash,
/// so a result can only have come through it.
struct RefusingRunner : Runner {
  size_t refused = 0;
  void run(std::vector<CandidateWorker> &workers, MeasurePhaseSeconds &) override {
    for (CandidateWorker &w : workers) {
      if (w.result) continue;
      w.process->kill();
      w.result = measure_failure(RecordStatus::Crash, "refused by the test runner");
      ++refused;
    }
  }
};

}  // namespace

TEST_CASE("the Builder and Runner are swappable parts of measuring", "[tuner][measure]") {
  Task task = matmul_task("32x32x32");
  const Schedule good = default_cpu_schedule(task.compute, avx512_target());
  auto bad = parse_schedule("tessel-schedule v1\nsplit no_such_func x xo xi 4 auto\n");
  REQUIRE(bad.ok());

  // The reference goes through the same parts: with the local runner it is measured, and
  // the candidates then go through the counting builder and the local runner.
  auto builder = std::make_shared<CountingBuilder>();
  MeasureOptions counted = quick_options();
  counted.builder = builder;
  Measurer measurer(task, Target{}, counted);
  const auto results = measurer.measure({good, bad.value()});
  REQUIRE(results.size() == 2);
  CHECK(builder->built == 3);  // the reference, then both candidates
  CHECK(results[0].status == RecordStatus::Ok);
  CHECK(results[1].status == RecordStatus::CompileError);  // failed in the builder: never run

  // A runner that refuses to time: the reference fails through it, so every candidate says so.
  auto runner = std::make_shared<RefusingRunner>();
  MeasureOptions refusing = quick_options();
  refusing.runner = runner;
  Measurer refused(task, Target{}, refusing);
  auto reference = refused.prepare_reference();
  REQUIRE_FALSE(reference.ok());
  CHECK(reference.error().message.find("refused by the test runner") != std::string::npos);
  CHECK(runner->refused == 1);
}

TEST_CASE("JIT kernels keep the bounds check their resolved buffer assertions leave", "[tuner][measure]") {
  // JitKernel removes the assertions about its buffers that bind() guarantees
  // (codegen/resolve_buffer_assertions.h); a kernel that reads its input out of bounds must
  // still fail with Halide's message, and a buffer of another shape must be refused.
  Result<std::vector<float>> copy = run_shifted_copy(10, 2, 12, 12);
  REQUIRE(copy.ok());
  for (int i = 0; i < 10; ++i) CHECK((*copy)[i] == static_cast<float>(i + 2));

  Result<std::vector<float>> past_end = run_shifted_copy(10, 3, 12, 12);
  REQUIRE_FALSE(past_end.ok());
  CHECK_THAT(past_end.error().message, Catch::Contains("is accessed at 12, which is beyond the max (11)"));

  Result<std::vector<float>> before_start = run_shifted_copy(10, -1, 12, 12);
  REQUIRE_FALSE(before_start.ok());
  CHECK_THAT(before_start.error().message, Catch::Contains("is accessed at -1, which is before the min (0)"));

  Result<std::vector<float>> wrong_shape = run_shifted_copy(10, 0, 12, 11);
  REQUIRE_FALSE(wrong_shape.ok());
  CHECK_THAT(wrong_shape.error().message, Catch::Contains("does not match the buffer the kernel was compiled for (12)"));
}

TEST_CASE("timing with cold weights keeps the task's results", "[tuner][measure]") {
  Task task = matmul_task("64x256x256");  // B, the benchmark graph's weight: 256 KiB
  CHECK(task_constant_bytes(task) == 256 * 256 * sizeof(float));
  auto kernel = compile_task(task, nullptr);
  REQUIRE(kernel.ok());
  const std::vector<Tensor> inputs = task_inputs(task, 3);
  auto before = run_task(kernel.value(), task, inputs);
  REQUIRE(before.ok());
  TimingOptions cold;
  cold.cold_constants = true;
  cold.min_runs = 5;
  cold.min_seconds = 0.001;
  auto timing = time_task(kernel.value(), task, inputs, cold);
  REQUIRE(timing.ok());
  CHECK(timing->seconds.size() >= 5);
  CHECK(timing->median > 0);
  auto after = run_task(kernel.value(), task, inputs);
  REQUIRE(after.ok());
  CHECK(max_relative_difference(after.value(), before.value()) == 0);
}
