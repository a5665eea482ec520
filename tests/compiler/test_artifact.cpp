// Artifacts end to end: `compile_artifact` writes one, the deploy runtime (no JIT) loads and
// runs it, and its outputs equal the JIT executor's; damaged or mismatched artifacts are
// refused with clear errors; a tuning log compiles to the same artifact as its database.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

#include "base/scratch_allocator.h"
#include "codegen/cuda_device.h"
#include "compiler/artifact_compiler.h"
#include "compiler/deployed_schedule_lookup.h"
#include "deploy/artifact_manifest.h"
#include "deploy/execution_plan.h"
#include "deploy/module.h"
#include "executor/graph_executor.h"
#include "executor/model_inputs.h"
#include "graph/fusion/fuse.h"
#include "search/cpu/sampler.h"
#include "task/task.h"
#include "tests/support/artifact_test_util.h"
#include "tests/support/op_test_util.h"
#include "tests/support/task_test_util.h"
#include "tuning_db/open_best_record_source.h"
#include "tuning_db/tuning_database.h"

namespace fs = std::filesystem;
using namespace tessel;
using tessel::testing::compile_cuda_artifact;
using tessel::testing::GraphBuilder;
using tessel::testing::load_error;
using tessel::testing::read_text;
using tessel::testing::ScratchDir;
using tessel::testing::write_text;
using tessel::testing::max_abs_diff;

namespace {

/// conv + bias + relu -> flatten (a view) -> matmul + add; two outputs: the logits and a
/// reshaped copy of the flattened features (a view that is a graph output).
std::shared_ptr<const Graph> small_cnn() {
  GraphBuilder b("small_cnn");
  const int x = b.input("x", DType::Float32, {1, 3, 8, 8});
  const int w = b.weight("w", DType::Float32, {4, 3, 3, 3}, 11);
  const int bias = b.weight("bias", DType::Float32, {4}, 12);
  Attributes conv;
  conv.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  const int c = b.node("Conv", {x, w, bias}, conv);
  const int r = b.node("Relu", {c});
  Attributes flat;
  flat.set("axis", int64_t{1});
  const int f = b.node("Flatten", {r}, flat);
  const int fc = b.weight("fc", DType::Float32, {256, 10}, 13);
  const int fc_bias = b.weight("fc_bias", DType::Float32, {10}, 14);
  const int m = b.node("MatMul", {f, fc});
  const int logits = b.node("Add", {m, fc_bias});
  const int shape = b.g.add_tensor({"shape", TensorType{DType::Int64, {2}, true}, Tensor::from_int64s({16, 16}, {2})});
  const int features = b.node("Reshape", {f, shape});
  return b.finish({logits, features});
}

std::string replace_once(std::string text, const std::string &from, const std::string &to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("artifact: compile, load without the JIT, run, equal to the executor", "[artifact]") {
  auto graph = small_cnn();
  ScratchDir dir("roundtrip");
  const fs::path artifact = dir.path / "small.tsl";
  ArtifactCompileOptions options;
  auto summary = compile_artifact(*graph, options, artifact.string());
  INFO((summary.ok() ? "" : summary.error().message));
  REQUIRE(summary.ok());
  CHECK(summary->kernel_steps >= 2);
  CHECK(summary->default_tasks == summary->kernel_steps);
  for (const char *file : {"manifest.json", "plan.txt", "weights.bin", "kernels.so"}) CHECK(fs::exists(artifact / file));
  // Nothing of the build is left beside it.
  for (const auto &entry : fs::directory_iterator(dir.path)) CHECK(entry.path() == artifact);

  Module module = Module::load(artifact.string());
  REQUIRE(module.inputs().size() == 1);
  REQUIRE(module.outputs().size() == 2);
  CHECK(module.inputs()[0].name == "x");
  const Tensor x = random_tensor(TensorType{DType::Float32, {1, 3, 8, 8}, true}, 5);
  const std::vector<Tensor> got = module.run({x});
  GraphExecutor executor(graph);
  auto expected = executor.run({x});
  REQUIRE(expected.ok());
  REQUIRE(got.size() == 2);
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].shape() == expected.value()[i].shape());
    CHECK(max_abs_diff(got[i], expected.value()[i]) < 1e-5);
  }
  // Reusable across calls, by name too.
  auto named = module.run_named({{"x", x}});
  CHECK(max_abs_diff(named.at(graph->tensors[graph->outputs[0]].name), expected.value()[0]) < 1e-5);

  // Wrong input shape: a clear error naming the input.
  const Tensor wrong = random_tensor(TensorType{DType::Float32, {1, 3, 8, 9}, true}, 5);
  try {
    module.run({wrong});
    FAIL("a wrong shape must be refused");
  } catch (const ModuleError &e) {
    CHECK_THAT(e.what(), Catch::Contains("x"));
  }
}

TEST_CASE("artifact: version, target and CPU mismatches, truncation and corruption are refused", "[artifact]") {
  auto graph = small_cnn();
  ScratchDir dir("damage");
  const fs::path good = dir.path / "good.tsl";
  REQUIRE(compile_artifact(*graph, {}, good.string()).ok());
  const std::string manifest = read_text(good / "manifest.json");
  auto damaged = [&](const std::string &name) {
    const fs::path copy = dir.path / name;
    fs::copy(good, copy, fs::copy_options::recursive);
    return copy;
  };

  SECTION("another tessel version") {
    const fs::path a = damaged("version.tsl");
    write_text(a / "manifest.json", replace_once(manifest, "\"tessel_version\": \"", "\"tessel_version\": \"9.9.9-"));
    const std::string error = load_error(a);
    CHECK_THAT(error, Catch::Contains("9.9.9-"));
  }
  SECTION("another format version") {
    const fs::path a = damaged("format.tsl");
    write_text(a / "manifest.json", replace_once(manifest, "\"format_version\": 1", "\"format_version\": 7"));
    CHECK_THAT(load_error(a), Catch::Contains("7"));
  }
  SECTION("a CUDA target") {
    const fs::path a = damaged("cuda.tsl");
    write_text(a / "manifest.json", replace_once(manifest, "\"target\": \"llvm\"", "\"target\": \"cuda\""));
    CHECK_THAT(load_error(a), Catch::Contains("cuda") || Catch::Contains("CUDA"));
  }
  SECTION("a CPU feature this machine lacks") {
    const fs::path a = damaged("cpu.tsl");
    write_text(a / "manifest.json",
               replace_once(manifest, "\"required_cpu_features\": [", "\"required_cpu_features\": [\"avx5124fmaps\", "));
    CHECK_THAT(load_error(a), Catch::Contains("avx5124fmaps"));
  }
  SECTION("truncated weights") {
    const fs::path a = damaged("truncated.tsl");
    fs::resize_file(a / "weights.bin", fs::file_size(a / "weights.bin") / 2);
    CHECK_THAT(load_error(a), Catch::Contains("weights.bin"));
  }
  SECTION("a flipped byte in the kernels") {
    const fs::path a = damaged("corrupt.tsl");
    std::string bytes = read_text(a / "kernels.so");
    bytes[bytes.size() / 2] ^= 0x5a;
    write_text(a / "kernels.so", bytes);
    CHECK_THAT(load_error(a), Catch::Contains("kernels.so"));
  }
  SECTION("a truncated manifest") {
    const fs::path a = damaged("manifest.tsl");
    write_text(a / "manifest.json", manifest.substr(0, manifest.size() / 2));
    CHECK_THAT(load_error(a), Catch::Contains("manifest.json"));
  }
}

TEST_CASE("artifact: a failed compile leaves nothing behind, an existing artifact survives", "[artifact]") {
  // Einsum has no host implementation, and after NonZero its shape is known only at run time.
  GraphBuilder b("with_einsum");
  const int x = b.input("x", DType::Float32, {4, 4});
  const int zero = b.g.add_tensor({"zero", TensorType{DType::Float32, {}, true}, Tensor::scalar(DType::Float32, 0)});
  const int where = b.node("NonZero", {b.node("Greater", {x, zero})});
  Attributes to_float;
  to_float.set("to", int64_t{1});
  Attributes equation;
  equation.set("equation", std::string("ij->ji"));
  const int flipped = b.g.add_tensor({"flipped", {}, std::nullopt});
  b.g.add_node(Node{"Einsum", "my_einsum", "", equation}, {b.node("Cast", {where}, to_float)}, {flipped});
  auto graph = b.finish({flipped});
  ScratchDir dir("failed");
  const fs::path artifact = dir.path / "model.tsl";
  REQUIRE(compile_artifact(*small_cnn(), {}, artifact.string()).ok());
  const std::string before = read_text(artifact / "manifest.json");
  auto failed = compile_artifact(*graph, {}, artifact.string());
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(failed.error().message, Catch::Contains("my_einsum") && Catch::Contains("Einsum"));
  CHECK(read_text(artifact / "manifest.json") == before);
  for (const auto &entry : fs::directory_iterator(dir.path)) CHECK(entry.path() == artifact);
}

TEST_CASE("artifact: compiling with a tuning log equals compiling with its database", "[artifact]") {
  auto graph = small_cnn();
  ScratchDir dir("log");
  const Target target;
  // A record for the conv task: the sketch default schedule, as if the tuner measured it.
  const std::vector<FusedGroup> groups = partition_graph(*graph);
  const std::vector<Workload> tasks = distinct_workloads(*graph, groups);
  const Workload *conv = nullptr;
  for (const Workload &t : tasks)
    for (int n : t.group.nodes) conv = graph->nodes[n].op_type == "Conv" ? &t : conv;
  REQUIRE(conv != nullptr);
  auto instance = make_task(graph, conv->group);
  REQUIRE(instance.ok());
  const Schedule schedule = default_cpu_schedule(instance->compute, cpu_target_desc(target));
  const fs::path db_path = dir.path / "tuning.db";
  {
    auto db = TuningDatabase::open(db_path.string());
    REQUIRE(db.ok());
    REQUIRE(db->add_workload(conv->workload_key, conv->workload_text).ok());
    TuningRecord r;
    r.workload_key = conv->workload_key;
    r.target = target.to_string();
    r.machine = "test";
    r.schedule_text = to_text(schedule);
    r.schedule_hash = schedule_hash(schedule);
    r.median_seconds = 1e-5;
    r.timings_seconds = {1e-5};
    REQUIRE(db->add_record(r).ok());
    std::ofstream log(dir.path / "tuning.jsonl");
    REQUIRE(db->export_jsonl(log).ok());
  }
  auto compile_from = [&](const fs::path &records, const fs::path &out) {
    auto opened = open_best_record_source(records.string());
    REQUIRE(opened.ok());
    std::shared_ptr<BestRecordSource> source = std::move(opened.value());
    ArtifactCompileOptions options;
    options.schedules = deployed_schedule_lookup(source, target.to_string());
    auto summary = compile_artifact(*graph, options, out.string());
    INFO((summary.ok() ? "" : summary.error().message));
    REQUIRE(summary.ok());
    CHECK(summary->tuned_tasks == 1);
  };
  compile_from(db_path, dir.path / "from_db.tsl");
  compile_from(dir.path / "tuning.jsonl", dir.path / "from_log.tsl");
  // kernels.so is not compared byte for byte here: within one process Halide numbers repeated
  // Func names ($2, $3), which land in the library's strings; two `tessel compile` processes
  // write identical libraries.
  for (const char *file : {"plan.txt", "weights.bin"})
    CHECK(read_text(dir.path / "from_db.tsl" / file) == read_text(dir.path / "from_log.tsl" / file));
  auto tasks_of = [&](const char *artifact) {
    auto manifest = deploy::parse_manifest(read_text(dir.path / artifact / "manifest.json"));
    REQUIRE(manifest.ok());
    return manifest->tasks;
  };
  CHECK(tasks_of("from_db.tsl") == tasks_of("from_log.tsl"));
  CHECK_THAT(read_text(dir.path / "from_db.tsl" / "manifest.json"), Catch::Contains(schedule_hash(schedule)));

  // The tuned artifact still computes the model.
  Module module = Module::load((dir.path / "from_log.tsl").string());
  const Tensor x = random_tensor(TensorType{DType::Float32, {1, 3, 8, 8}, true}, 9);
  GraphExecutor executor(graph);
  auto expected = executor.run({x});
  REQUIRE(expected.ok());
  CHECK(max_abs_diff(module.run({x})[0], expected.value()[0]) < 1e-5);
}

// A view (Flatten, Reshape, Identity ...) of a graph input or a weight, or of such a view,
// that is no graph output gets an arena slot of its own from plan_memory (only views of
// arena tensors alias): the plan must make it a view of its source, or the kernels reading
// it see bytes nothing wrote (found by the fake CUDA driver's tests).
TEST_CASE("artifact: views of a graph input and of a weight that are not graph outputs read their source's bytes",
          "[artifact]") {
  GraphBuilder b("input_views");
  const int x = b.input("x", DType::Float32, {2, 3, 4});
  const int w = b.weight("w", DType::Float32, {6, 4}, 41);
  Attributes flat;
  flat.set("axis", int64_t{1});
  const int flattened = b.node("Flatten", {x}, flat);  // {2, 12}, read by kernels only
  const int shape = b.g.add_tensor({"shape", TensorType{DType::Int64, {2}, true}, Tensor::from_int64s({2, 12}, {2})});
  const int w_view = b.node("Reshape", {w, shape});  // {2, 12}
  const int relu = b.node("Relu", {flattened});
  const int sum = b.node("Add", {flattened, w_view});
  const int shape2 = b.g.add_tensor({"shape2", TensorType{DType::Int64, {2}, true}, Tensor::from_int64s({6, 4}, {2})});
  const int chain = b.node("Reshape", {flattened, shape2});  // a view of that view, copied out
  const int shape3 = b.g.add_tensor({"shape3", TensorType{DType::Int64, {2}, true}, Tensor::from_int64s({4, 6}, {2})});
  const int chain_read = b.node("Relu", {b.node("Reshape", {flattened, shape3})});  // a view of a view, read by a kernel
  auto graph = b.finish({relu, sum, chain, chain_read});
  ScratchDir dir("input_views");
  const fs::path artifact = dir.path / "views.tsl";
  auto summary = compile_artifact(*graph, {}, artifact.string());
  INFO((summary.ok() ? "" : summary.error().message));
  REQUIRE(summary.ok());
  INFO(read_text(artifact / "plan.txt"));
  Module module = Module::load(artifact.string());
  const Tensor input = random_tensor(TensorType{DType::Float32, {2, 3, 4}, true}, 42);
  GraphExecutor executor(graph);
  auto expected = executor.run({input});
  REQUIRE(expected.ok());
  const std::vector<Tensor> got = module.run({input});
  REQUIRE(got.size() == 4);
  for (size_t i = 0; i < got.size(); ++i) CHECK(max_abs_diff(got[i], expected.value()[i]) == 0);
}

// A Fire module (SqueezeNet): two expand convs of one squeeze conv, concatenated. The
// expand kernels write straight into their slices of the Concat's output; a second Concat
// that also reads one of them (and the first Concat's output) copies as before.
TEST_CASE("artifact: a Concat done in place equals the executor; one that cannot be stays a copy", "[artifact]") {
  GraphBuilder b("fire");
  const int x = b.input("x", DType::Float32, {1, 8, 6, 6});
  Attributes same;
  same.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  const int squeeze = b.node("Relu", {b.node("Conv", {x, b.weight("ws", DType::Float32, {4, 8, 1, 1}, 51)})});
  const int e1 = b.node("Relu", {b.node("Conv", {squeeze, b.weight("w1", DType::Float32, {8, 4, 1, 1}, 52)})});
  const int e3 = b.node("Relu", {b.node("Conv", {squeeze, b.weight("w3", DType::Float32, {8, 4, 3, 3}, 53)}, same)});
  Attributes channels;
  channels.set("axis", int64_t{1});
  const int fire = b.node("Concat", {e1, e3}, channels);
  const int next = b.node("Conv", {fire, b.weight("wn", DType::Float32, {4, 16, 1, 1}, 54)});
  const int again = b.node("Concat", {fire, e1}, channels);  // e1 is the first Concat's already
  auto graph = b.finish({next, again});
  ScratchDir dir("concat_in_place");
  const fs::path artifact = dir.path / "fire.tsl";
  auto summary = compile_artifact(*graph, {}, artifact.string());
  INFO((summary.ok() ? "" : summary.error().message));
  REQUIRE(summary.ok());
  CHECK(summary->concats_in_place == 1);
  const std::string plan = read_text(artifact / "plan.txt");
  INFO(plan);
  CHECK(plan.find("\njoin ") != std::string::npos);
  Module module = Module::load(artifact.string());
  const Tensor input = random_tensor(TensorType{DType::Float32, {1, 8, 6, 6}, true}, 55);
  GraphExecutor executor(graph);
  auto expected = executor.run({input});
  REQUIRE(expected.ok());
  for (int run = 0; run < 2; ++run) {
    const std::vector<Tensor> got = module.run({input});
    REQUIRE(got.size() == 2);
    for (size_t i = 0; i < got.size(); ++i) CHECK(max_abs_diff(got[i], expected.value()[i]) < 1e-5);
  }
}

TEST_CASE("artifact: a tuned elementwise kernel writing over its input computes no point twice", "[artifact]") {
  // RegNet-Y's squeeze-excitation scale: Mul([1, C, 1, 1], [1, C, 6, 6]) written over its dying
  // [1, C, 6, 6] input. A tuned "vectorize mul i3 4" shifted the 6-wide rows' last vector
  // inwards, and the points computed twice read inputs their first computation had already
  // scaled: the model's output was off by 48% although the kernel alone measured right.
  GraphBuilder b("squeeze_excite");
  const int x = b.input("x", DType::Float32, {1, 8, 6, 6});
  const int features = b.node("Relu", {x});
  const int pooled = b.node("GlobalAveragePool", {features});
  const int scaled = b.node("Mul", {pooled, features});
  // Read by a conv, not a graph output, so that the plan puts it over `features`.
  auto graph = b.finish({b.node("Conv", {scaled, b.weight("w", DType::Float32, {4, 8, 1, 1}, 57)})});
  std::string mul_key;
  for (const Workload &w : distinct_workloads(*graph, partition_graph(*graph)))
    if (w.workload_text.rfind("Mul(", 0) == 0) mul_key = w.workload_key;
  REQUIRE_FALSE(mul_key.empty());
  ArtifactCompileOptions options;
  options.schedules = [&](const std::string &key) -> Result<std::optional<DeployedSchedule>> {
    if (key != mul_key) return std::optional<DeployedSchedule>();
    return std::optional<DeployedSchedule>(DeployedSchedule{"tessel-schedule v1\nvectorize mul i3 4\n", "shifted", 1e-6});
  };
  ScratchDir dir("in_place_tail");
  const fs::path artifact = dir.path / "se.tsl";
  auto summary = compile_artifact(*graph, options, artifact.string());
  INFO((summary.ok() ? "" : summary.error().message));
  REQUIRE(summary.ok());
  CHECK(summary->tuned_tasks == 1);
  CHECK(artifact_memory_plan(*graph, partition_graph(*graph)).in_place == 1);
  Module module = Module::load(artifact.string());
  const Tensor input = random_tensor(TensorType{DType::Float32, {1, 8, 6, 6}, true}, 56);
  GraphExecutor executor(graph);
  auto expected = executor.run({input});
  REQUIRE(expected.ok());
  CHECK(max_abs_diff(module.run({input})[0], expected.value()[0]) < 1e-5);
}

TEST_CASE("artifact: kernel calls chosen to run on one thread by measurement give the same bytes", "[artifact]") {
  auto graph = small_cnn();
  ScratchDir dir("kernel_threads");
  const fs::path artifact = dir.path / "threads.tsl";
  ArtifactCompileOptions options;
  options.choose_kernel_threads = true;
  options.threads = 2;
  auto summary = compile_artifact(*graph, options, artifact.string());
  INFO((summary.ok() ? "" : summary.error().message));
  REQUIRE(summary.ok());
  INFO(summary->kernel_threads);
  CHECK_THAT(summary->kernel_threads, Catch::Contains("kernel calls run on one thread (measured in the model"));
  CHECK(summary->warnings.empty());
  const std::string plan = read_text(artifact / "plan.txt");
  size_t serial_lines = 0;
  for (size_t at = plan.find("\nserial-kernel "); at != std::string::npos; at = plan.find("\nserial-kernel ", at + 1))
    ++serial_lines;
  CHECK(static_cast<int>(serial_lines) == summary->serial_kernel_steps);

  ModuleOptions profiled;
  profiled.profile = true;
  profiled.threads = 2;
  Module module = Module::load(artifact.string(), profiled);
  const Tensor x = random_tensor(TensorType{DType::Float32, {1, 3, 8, 8}, true}, 5);
  const std::vector<Tensor> chosen = module.run({x});
  int marked = 0;
  for (const KernelTimes &k : module.kernel_times()) marked += k.serial;
  CHECK(marked == summary->serial_kernel_steps);
  // Every call on one thread, then every call on the pool: the same bytes either way.
  for (bool serial : {true, false}) {
    for (int k = 0; k < module.kernel_count(); ++k) module.set_kernel_serial(k, serial);
    const std::vector<Tensor> got = module.run({x});
    REQUIRE(got.size() == chosen.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(max_abs_diff(got[i], chosen[i]) == 0);
  }
  CHECK_THROWS_AS(module.set_kernel_serial(module.kernel_count(), true), ModuleError);
}

TEST_CASE("artifact: a cuda artifact compiles without a GPU: PTX and Halide's CUDA runtime in kernels.so",
          "[artifact][cuda]") {
  auto graph = small_cnn();
  ScratchDir dir("cuda");
  for (const char *arch : {"sm_80", "sm_90"}) {
    const fs::path artifact = dir.path / (std::string(arch) + ".tsl");
    compile_cuda_artifact(*graph, arch, artifact);
    auto manifest = deploy::parse_manifest(read_text(artifact / "manifest.json"));
    REQUIRE(manifest.ok());
    CHECK(manifest->target == std::string("cuda -arch=") + arch);
    // Halide 14 writes PTX for 8.6 at most: a Hopper GPU's driver compiles that PTX.
    CHECK_THAT(manifest->halide_target,
               Catch::Contains(std::string(arch) == "sm_80" ? "cuda_capability_80" : "cuda_capability_86"));
    const std::string library = read_text(artifact / "kernels.so");
    CHECK_THAT(library, Catch::Contains(".entry") && Catch::Contains(".target sm_8"));
    CHECK_THAT(library, Catch::Contains("halide_cuda_wrap_device_ptr"));
    // Every kernel names the register cap its PTX is compiled under: as many as its largest
    // block leaves room for in the register file.
    auto plan = deploy::parse_plan(read_text(artifact / "plan.txt"));
    REQUIRE(plan.ok());
    for (const deploy::PlanStep &step : plan->steps) {
      const auto *kernel = std::get_if<deploy::KernelStep>(&step);
      if (!kernel) continue;
      const deploy::KernelStep &k = *kernel;
      INFO(k.symbol);
      REQUIRE(manifest->gpu_max_registers.count(k.symbol) == 1);
      CHECK(manifest->gpu_max_registers.at(k.symbol) >= 64);
      CHECK(manifest->gpu_max_registers.at(k.symbol) <= 255);
    }
  }
}

TEST_CASE("artifact: a cuda artifact runs on the GPU and equals the executor (skips without one)", "[artifact][cuda]") {
  auto graph = small_cnn();
  ScratchDir dir("cuda_run");
  const fs::path artifact = dir.path / "small.tsl";
  auto device = query_cuda_device();
  compile_cuda_artifact(*graph, device.ok() ? "sm_" + std::to_string(device->capability()) : "sm_86", artifact);
  if (!device.ok()) {
    // Loading needs the driver and a device; without them the refusal says so.
    const std::string error = load_error(artifact);
    CHECK_THAT(error, Catch::Contains("GPU") || Catch::Contains("CUDA"));
    WARN("no CUDA GPU (" << device.error().message << "): the cuda artifact was compiled and refused cleanly, not run");
    return;
  }
  ModuleOptions options;
  options.profile = true;
  Module module = Module::load(artifact.string(), options);
  GraphExecutor executor(graph);
  for (uint64_t seed : {5, 6}) {  // the second run reuses the weights and arena on the device
    const Tensor x = random_tensor(TensorType{DType::Float32, {1, 3, 8, 8}, true}, seed);
    auto expected = executor.run({x});
    REQUIRE(expected.ok());
    const std::vector<Tensor> got = module.run({x});
    REQUIRE(got.size() == 2);
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].shape() == expected.value()[i].shape());
      CHECK(max_abs_diff(got[i], expected.value()[i]) < 1e-4);
    }
  }
  for (const KernelTimes &k : module.kernel_times()) CHECK(k.ms.size() == 2);
}

namespace {

/// A body graph for If: its one output is `op`(captured, one), reading `captured` from the
/// enclosing graph by name.
std::shared_ptr<const Graph> if_branch(const std::string &op, const std::string &captured) {
  Graph body;
  body.name = op + "_branch";
  const int outer = body.add_tensor({captured, {}, std::nullopt});
  const int one = body.add_tensor({op + "_one", TensorType{DType::Float32, {}, true}, Tensor::scalar(DType::Float32, 1)});
  // Bodies declare their outputs' types, as ONNX requires.
  const int out = body.add_tensor({op + "_result", TensorType{DType::Float32, {kUnknownDim}, true}, std::nullopt});
  body.add_node(Node{op, op + "_in_branch", "", {}}, {outer, one}, {out});
  body.outputs = {out};
  return std::make_shared<const Graph>(std::move(body));
}

}  // namespace

TEST_CASE("artifact: run-time shapes (NonZero, GatherND, If) run as host steps, equal to the executor", "[artifact]") {
  // positive = x[x > 0] as NonZero -> Transpose -> GatherND; then If(sum(x) > 0) adds or
  // subtracts one; TopK with a constant k; a kernel (Relu) on x stays a kernel.
  GraphBuilder b("host_steps");
  const int x = b.input("x", DType::Float32, {3, 5});
  const int zero = b.g.add_tensor({"zero", TensorType{DType::Float32, {}, true}, Tensor::scalar(DType::Float32, 0)});
  const int where = b.node("NonZero", {b.node("Greater", {x, zero})});
  Attributes swap;
  swap.set("perm", std::vector<int64_t>{1, 0});
  const int positive = b.node("GatherND", {x, b.node("Transpose", {where}, swap)});
  const int doubled = b.node("Mul", {positive, b.g.add_tensor({"two", TensorType{DType::Float32, {}, true},
                                                               Tensor::scalar(DType::Float32, 2)})});
  b.g.tensors[doubled].name = "doubled";
  Attributes keep;
  keep.set("keepdims", int64_t{0});
  const int condition = b.node("Greater", {b.node("ReduceSum", {x}, keep), zero});
  Attributes branches;
  branches.set("then_branch", if_branch("Add", "doubled"));
  branches.set("else_branch", if_branch("Sub", "doubled"));
  const int shifted = b.g.add_tensor({"shifted", {}, std::nullopt});
  b.g.add_node(Node{"If", "my_if", "", branches}, {condition}, {shifted});
  const int k = b.g.add_tensor({"k", TensorType{DType::Int64, {1}, true}, Tensor::from_int64s({3}, {1})});
  const int top_values = b.g.add_tensor({"top_values", {}, std::nullopt});
  const int top_indices = b.g.add_tensor({"top_indices", {}, std::nullopt});
  b.g.add_node(Node{"TopK", "my_topk", "", {}}, {x, k}, {top_values, top_indices});
  const int relu = b.node("Relu", {x});
  auto graph = b.finish({shifted, top_values, top_indices, relu});
  INFO("If output: " << graph->tensors[shifted].type.to_string());
  REQUIRE_FALSE(graph->tensors[doubled].type.fully_known());

  ScratchDir dir("host_steps");
  const fs::path artifact = dir.path / "host.tsl";
  auto summary = compile_artifact(*graph, {}, artifact.string());
  INFO((summary.ok() ? "" : summary.error().message));
  REQUIRE(summary.ok());
  CHECK(summary->host_steps >= 6);
  CHECK(summary->kernel_steps >= 1);
  CHECK(fs::exists(artifact / "host.json"));
  INFO(read_text(artifact / "plan.txt"));
  Module module = Module::load(artifact.string());
  CHECK(module.host_step_count() == summary->host_steps);
  REQUIRE(module.outputs().size() == 4);
  CHECK(module.outputs()[0].shape == Shape{kUnknownDim});
  GraphExecutor executor(graph);
  // Both branches, and a run with no positive element at all (an empty tensor on the way).
  for (uint64_t seed : {7, 8, 9}) {
    Tensor input = random_tensor(TensorType{DType::Float32, {3, 5}, true}, seed);
    if (seed == 9)
      for (int64_t i = 0; i < input.numel(); ++i) input.data_as<float>()[i] = -1.0f - static_cast<float>(i);
    auto expected = executor.run({input});
    REQUIRE(expected.ok());
    const std::vector<Tensor> got = module.run({input});
    REQUIRE(got.size() == 4);
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("seed " << seed << ", output " << i);
      CHECK(got[i].shape() == expected.value()[i].shape());
      CHECK(got[i].dtype() == expected.value()[i].dtype());
      if (got[i].shape() == expected.value()[i].shape()) CHECK(max_abs_diff(got[i], expected.value()[i]) == 0);
    }
  }
  // A run-time shaped output cannot be written into a caller's buffer of fixed size.
  std::vector<float> in(15, 1.0f), out0(15), out1(3), out3(15);
  std::vector<int64_t> out2(3);
  try {
    module.run_raw({in.data()}, {out0.data(), out1.data(), out2.data(), out3.data()});
    FAIL("run_raw must refuse a run-time shaped output");
  } catch (const ModuleError &e) {
    CHECK_THAT(e.what(), Catch::Contains("use run()"));
  }

  // host.json is covered by the manifest's hash, and a malformed one is an error, not a crash.
  const std::string host = read_text(artifact / "host.json");
  write_text(artifact / "host.json", replace_once(host, "\"nodes\"", "\"nodez\""));
  CHECK_THAT(load_error(artifact), Catch::Contains("host.json"));
  ModuleOptions unchecked;
  unchecked.verify_hashes = false;
  try {
    Module::load(artifact.string(), unchecked);
    FAIL("a malformed host.json must be refused");
  } catch (const ModuleError &e) {
    CHECK_THAT(e.what(), Catch::Contains("host.json"));
  }
}

TEST_CASE("artifact: a Loop runs as a host step: carried values, scan outputs, captured values", "[artifact]") {
  // for i in range(trips): v = v * 2 + x; scan out v. trips is a constant, x is captured.
  auto body = std::make_shared<Graph>();
  body->name = "loop_body";
  const int iteration = body->add_tensor({"i", TensorType{DType::Int64, {}, true}, std::nullopt});
  const int condition = body->add_tensor({"cond_in", TensorType{DType::Bool, {}, true}, std::nullopt});
  const int carried = body->add_tensor({"v_in", TensorType{DType::Float32, {2, 3}, true}, std::nullopt});
  body->inputs = {iteration, condition, carried};
  const int captured = body->add_tensor({"x", {}, std::nullopt});
  const int two = body->add_tensor({"two", TensorType{DType::Float32, {}, true}, Tensor::scalar(DType::Float32, 2)});
  const int twice = body->add_tensor({"twice", TensorType{DType::Float32, {2, 3}, true}, std::nullopt});
  const int next = body->add_tensor({"v_out", TensorType{DType::Float32, {2, 3}, true}, std::nullopt});
  const int cond_out = body->add_tensor({"cond_out", TensorType{DType::Bool, {}, true}, std::nullopt});
  const int scanned = body->add_tensor({"scanned", TensorType{DType::Float32, {2, 3}, true}, std::nullopt});
  body->add_node(Node{"Mul", "double", "", {}}, {carried, two}, {twice});
  body->add_node(Node{"Add", "add_x", "", {}}, {twice, captured}, {next});
  body->add_node(Node{"Identity", "keep_going", "", {}}, {condition}, {cond_out});
  body->add_node(Node{"Identity", "scan_out", "", {}}, {next}, {scanned});
  body->outputs = {cond_out, next, scanned};

  GraphBuilder b("with_loop");
  const int x = b.input("x", DType::Float32, {2, 3});
  const int trips = b.g.add_tensor({"trips", TensorType{DType::Int64, {}, true}, Tensor::scalar(DType::Int64, 4)});
  const int keep = b.g.add_tensor({"keep", TensorType{DType::Bool, {}, true}, Tensor::scalar(DType::Bool, 1)});
  const int start = b.node("Relu", {x});
  Attributes loop_body;
  loop_body.set("body", std::shared_ptr<const Graph>(body));
  const int final_value = b.g.add_tensor({"final", {}, std::nullopt});
  const int all_values = b.g.add_tensor({"all", {}, std::nullopt});
  b.g.add_node(Node{"Loop", "my_loop", "", loop_body}, {trips, keep, start}, {final_value, all_values});
  auto graph = b.finish({final_value, all_values});

  ScratchDir dir("loop");
  const fs::path artifact = dir.path / "loop.tsl";
  auto summary = compile_artifact(*graph, {}, artifact.string());
  INFO((summary.ok() ? "" : summary.error().message));
  REQUIRE(summary.ok());
  CHECK(summary->host_steps == 1);
  Module module = Module::load(artifact.string());
  const Tensor input = random_tensor(TensorType{DType::Float32, {2, 3}, true}, 51);
  GraphExecutor executor(graph);
  auto expected = executor.run({input});
  REQUIRE(expected.ok());
  const std::vector<Tensor> got = module.run({input});
  REQUIRE(got.size() == 2);
  CHECK(got[1].shape() == Shape{4, 2, 3});
  for (size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i].shape() == expected.value()[i].shape());
    CHECK(max_abs_diff(got[i], expected.value()[i]) == 0);
  }
}

TEST_CASE("artifact: a host Gemm with a constant transposed B reads it laid out upright, same result", "[artifact]") {
  // rows = x[sum(x, 1) > 0] (a run-time row count), then a fully connected layer on them.
  GraphBuilder b("host_gemm");
  const int x = b.input("x", DType::Float32, {6, 40});
  const int zero = b.g.add_tensor({"zero", TensorType{DType::Float32, {}, true}, Tensor::scalar(DType::Float32, 0)});
  Attributes keep;
  keep.set("keepdims", int64_t{0});
  const int axes = b.g.add_tensor({"axes", TensorType{DType::Int64, {1}, true}, Tensor::from_int64s({1}, {1})});
  const int positive = b.node("Greater", {b.node("ReduceSum", {x, axes}, keep), zero});
  const int picked = b.node("NonZero", {positive});
  const int flat = b.node("Squeeze", {picked, b.g.add_tensor({"zero_axis", TensorType{DType::Int64, {1}, true},
                                                              Tensor::from_int64s({0}, {1})})});
  const int rows = b.node("Gather", {x, flat});
  const int w = b.weight("fc_weight", DType::Float32, {24, 40}, 61);
  const int bias = b.weight("fc_bias", DType::Float32, {24}, 62);
  Attributes fc;
  fc.set("transB", int64_t{1});
  fc.set("alpha", 0.5f);
  const int out = b.node("Gemm", {rows, w, bias}, fc);
  auto graph = b.finish({out});
  REQUIRE_FALSE(graph->tensors[rows].type.fully_known());

  ScratchDir dir("host_gemm");
  const fs::path artifact = dir.path / "gemm.tsl";
  auto summary = compile_artifact(*graph, {}, artifact.string());
  INFO((summary.ok() ? "" : summary.error().message));
  REQUIRE(summary.ok());
  const std::string plan = read_text(artifact / "plan.txt");
  CHECK_THAT(plan, Catch::Contains("fc_weight.upright float32 2 40 24 weight"));
  // The transposed original is read by nothing, so it is not in weights.bin.
  CHECK_THAT(plan, !Catch::Contains("fc_weight float32"));
  CHECK_THAT(read_text(artifact / "host.json"), Catch::Contains("\"transB\":{\"int\":0}"));
  Module module = Module::load(artifact.string());
  GraphExecutor executor(graph);
  for (uint64_t seed : {63, 64}) {
    const Tensor input = random_tensor(TensorType{DType::Float32, {6, 40}, true}, seed);
    auto expected = executor.run({input});
    REQUIRE(expected.ok());
    const std::vector<Tensor> got = module.run({input});
    REQUIRE(got[0].shape() == expected.value()[0].shape());
    CHECK(max_abs_diff(got[0], expected.value()[0]) < 1e-5);
  }
}

TEST_CASE("artifact: kernels' large intermediates come from the scratch cache, the same blocks every run",
          "[artifact]") {
  // A padded 3x3 conv over 64x64 maps: its padded input and register-tiled output are
  // intermediates of a few hundred KB, which glibc would unmap on every free.
  GraphBuilder b("padded_conv");
  const int x = b.input("x", DType::Float32, {1, 16, 64, 64});
  const int w = b.weight("w", DType::Float32, {16, 16, 3, 3}, 21);
  Attributes conv;
  conv.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  auto graph = b.finish({b.node("Conv", {x, w}, conv)});
  ScratchDir dir("scratch");
  const fs::path artifact = dir.path / "conv.tsl";
  REQUIRE(compile_artifact(*graph, ArtifactCompileOptions{}, artifact.string()).ok());
  Module module = Module::load(artifact.string());
  const Tensor input = random_tensor(TensorType{DType::Float32, {1, 16, 64, 64}, true}, 8);
  scratch_release_cached();
  const std::vector<Tensor> first = module.run({input});
  const size_t cached = scratch_cached_bytes();
  CHECK(cached >= 16 * 66 * 66 * sizeof(float));  // at least the padded input came back
  const std::vector<Tensor> second = module.run({input});
  CHECK(scratch_cached_bytes() == cached);  // every block reused, none added
  CHECK(max_abs_diff(first[0], second[0]) == 0);
  GraphExecutor executor(graph);
  auto expected = executor.run({input});
  REQUIRE(expected.ok());
  CHECK(max_abs_diff(first[0], expected.value()[0]) < 1e-4);
}
