// CUDA artifacts against a fake CUDA driver (tests/fake_cuda/fake_libcuda.c, "device memory"
// in host memory, kernels never run), so that the deploy runtime's device memory plumbing
// runs on machines without a GPU: the one device allocation, the weights uploaded at load,
// inputs uploaded, copy steps on the device, outputs downloaded, and the errors of a kernel
// launch, an allocation and a copy. Its own executable (tessel_fake_cuda_tests): once the
// fake is loaded into a process, every cuda artifact loaded there finds it, and the unit
// tests expect a clean refusal without a driver.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include "codegen/cuda_device.h"
#include "deploy/artifact_manifest.h"
#include "deploy/module.h"
#include "executor/model_inputs.h"
#include "tests/fake_cuda/fake_cuda.h"
#include "tests/support/artifact_test_util.h"
#include "tests/support/task_test_util.h"

#ifndef TESSEL_FAKE_CUDA_PATH
#error "TESSEL_FAKE_CUDA_PATH must name the fake libcuda.so.1 (tests/CMakeLists.txt)"
#endif

namespace fs = std::filesystem;
using namespace tessel;
using tessel::testing::compile_cuda_artifact;
using tessel::testing::GraphBuilder;
using tessel::testing::read_text;
using tessel::testing::ScratchDir;

namespace {

/// The fake driver, loaded into this process once; null (with `why`) where a real GPU is
/// here: a real driver must not be shadowed.
struct FakeDriver {
  void *handle = nullptr;
  std::string why;
  fake_cuda_get_stats_fn get_stats = nullptr;
  fake_cuda_set_memory_limit_fn set_memory_limit = nullptr;
  fake_cuda_fail_copy_fn fail_copy = nullptr;

  fake_cuda_stats stats() const {
    fake_cuda_stats s{};
    get_stats(&s);
    return s;
  }
};

const FakeDriver &fake_driver() {
  static const FakeDriver driver = [] {
    FakeDriver d;
    // Asked before the fake is loaded (the answer is kept for the process): a child process
    // that inherited the fake would report it as a GPU.
    auto device = query_cuda_device();
    if (device.ok()) {
      d.why = "a real CUDA GPU is here (" + device->describe() + "): the fake driver is not loaded";
      return d;
    }
    // Global, so that Halide's runtime finds cuInit & co. in the process, and the deploy
    // runtime's dlopen("libcuda.so.1") returns it (the soname matches).
    d.handle = ::dlopen(TESSEL_FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
    if (!d.handle) {
      const char *e = ::dlerror();
      d.why = std::string("cannot load the fake driver: ") + (e ? e : "dlopen failed");
      return d;
    }
    d.get_stats = reinterpret_cast<fake_cuda_get_stats_fn>(::dlsym(d.handle, "fake_cuda_get_stats"));
    d.set_memory_limit = reinterpret_cast<fake_cuda_set_memory_limit_fn>(::dlsym(d.handle, "fake_cuda_set_memory_limit"));
    d.fail_copy = reinterpret_cast<fake_cuda_fail_copy_fn>(::dlsym(d.handle, "fake_cuda_fail_copy"));
    if (!d.get_stats || !d.set_memory_limit || !d.fail_copy) {
      d.why = "the fake driver lacks its test hooks";
      d.handle = nullptr;
    }
    return d;
  }();
  return driver;
}

/// The fake driver, or skips the test (returns null) where it cannot be used.
const FakeDriver *use_fake_driver() {
  const FakeDriver &d = fake_driver();
  if (!d.handle) {
    WARN(d.why);
    return nullptr;
  }
  // The deploy runtime opens it by soname, as on a machine with a driver.
  void *by_soname = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(by_soname == d.handle);
  ::dlclose(by_soname);
  return &d;
}

/// Outputs that need no kernel: the input through Identity, a weight, the input through a
/// Reshape, a Reshape of the weight, and the input itself. (A view of the input that is not
/// an output itself is left out: the compiler does not fill it yet, see "views of a graph
/// input and of a weight that are not graph outputs" in test_artifact.cpp.)
std::shared_ptr<const Graph> copies_only_graph() {
  GraphBuilder b("copies_only");
  const int x = b.input("x", DType::Float32, {2, 3, 4});
  const int w = b.weight("w", DType::Float32, {5, 7}, 21);
  const int same = b.node("Identity", {x});
  const int shape = b.g.add_tensor({"shape", TensorType{DType::Int64, {2}, true}, Tensor::from_int64s({6, 4}, {2})});
  const int reshaped = b.node("Reshape", {x, shape});
  const int shape_w = b.g.add_tensor({"shape_w", TensorType{DType::Int64, {1}, true}, Tensor::from_int64s({35}, {1})});
  const int w_flat = b.node("Reshape", {w, shape_w});
  return b.finish({same, w, reshaped, w_flat, x});
}

bool same_bytes(const Tensor &a, const void *data, size_t bytes) {
  return a.bytes() == bytes && std::memcmp(a.data(), data, bytes) == 0;
}

/// Restores the fake's knobs when the test ends, also on a failed REQUIRE.
struct KnobsReset {
  const FakeDriver &d;
  ~KnobsReset() {
    d.set_memory_limit(0);
    d.fail_copy(0);
  }
};

}  // namespace

TEST_CASE("fake cuda: outputs made by copy steps only: weights uploaded once, inputs uploaded, copies on the "
          "device, outputs downloaded",
          "[artifact][cuda][fake_cuda]") {
  const FakeDriver *fake = use_fake_driver();
  if (!fake) return;
  auto graph = copies_only_graph();
  ScratchDir dir("fake_cuda_copies");
  const fs::path artifact = dir.path / "copies.tsl";
  const ArtifactCompileSummary summary = compile_cuda_artifact(*graph, "sm_86", artifact);
  CHECK(summary.kernel_steps == 0);
  // Five copy steps, one per output, and nothing else.
  const std::string plan = read_text(artifact / "plan.txt");
  CHECK(plan.find("\nkernel ") == std::string::npos);
  size_t copies = 0;
  for (size_t at = plan.find("\ncopy "); at != std::string::npos; at = plan.find("\ncopy ", at + 1)) ++copies;
  CHECK(copies == 5);
  const Tensor &w = *graph->tensors[graph->outputs[1]].constant;

  const fake_cuda_stats before = fake->stats();
  {
    Module module = Module::load(artifact.string());
    CHECK(module.kernel_count() == 0);
    REQUIRE(module.outputs().size() == 5);
    const fake_cuda_stats loaded = fake->stats();
    // One allocation; weights.bin went up once, whole (its 64-byte aligned tensors).
    CHECK(loaded.allocations - before.allocations == 1);
    CHECK(loaded.live_allocations - before.live_allocations == 1);
    CHECK(loaded.copies_host_to_device - before.copies_host_to_device == 1);
    CHECK(loaded.bytes_host_to_device - before.bytes_host_to_device == static_cast<size_t>(fs::file_size(artifact / "weights.bin")));
    CHECK(loaded.rejected_copies == before.rejected_copies);

    for (uint64_t seed : {31, 32}) {
      const fake_cuda_stats start = fake->stats();
      const Tensor x = random_tensor(TensorType{DType::Float32, {2, 3, 4}, true}, seed);
      const std::vector<Tensor> got = module.run({x});
      REQUIRE(got.size() == 5);
      CHECK(got[0].shape() == Shape{2, 3, 4});
      CHECK(same_bytes(got[0], x.data(), x.bytes()));
      CHECK(got[1].shape() == Shape{5, 7});
      CHECK(same_bytes(got[1], w.data(), w.bytes()));
      CHECK(got[2].shape() == Shape{6, 4});
      CHECK(same_bytes(got[2], x.data(), x.bytes()));
      CHECK(got[3].shape() == Shape{35});
      CHECK(same_bytes(got[3], w.data(), w.bytes()));
      CHECK(got[4].shape() == Shape{2, 3, 4});
      CHECK(same_bytes(got[4], x.data(), x.bytes()));
      const fake_cuda_stats end = fake->stats();
      // A run: the input up, five copies on the device, five outputs down; no allocation,
      // no weights again, no launch.
      CHECK(end.copies_host_to_device - start.copies_host_to_device == 1);
      CHECK(end.bytes_host_to_device - start.bytes_host_to_device == x.bytes());
      CHECK(end.copies_device_to_device - start.copies_device_to_device == 5);
      CHECK(end.bytes_device_to_device - start.bytes_device_to_device == 3 * x.bytes() + 2 * w.bytes());
      CHECK(end.copies_device_to_host - start.copies_device_to_host == 5);
      CHECK(end.bytes_device_to_host - start.bytes_device_to_host == 3 * x.bytes() + 2 * w.bytes());
      CHECK(end.allocations == start.allocations);
      CHECK(end.launches == start.launches);
      CHECK(end.rejected_copies == start.rejected_copies);
    }
  }
  // The Module gave its device memory back.
  const fake_cuda_stats after = fake->stats();
  CHECK(after.live_allocations == before.live_allocations);
  CHECK(after.live_bytes == before.live_bytes);
}

TEST_CASE("fake cuda: Modules of one artifact and of another, alive together, keep to their own device memory",
          "[artifact][cuda][fake_cuda]") {
  const FakeDriver *fake = use_fake_driver();
  if (!fake) return;
  auto graph = copies_only_graph();
  ScratchDir dir("fake_cuda_modules");
  const fs::path first = dir.path / "first.tsl", second = dir.path / "second.tsl";
  compile_cuda_artifact(*graph, "sm_86", first);
  compile_cuda_artifact(*graph, "sm_86", second);  // another kernels.so: another copy of Halide's runtime
  const fake_cuda_stats before = fake->stats();
  {
    std::vector<Module> modules;
    for (const fs::path &artifact : {first, first, second}) modules.push_back(Module::load(artifact.string()));
    CHECK(fake->stats().live_allocations - before.live_allocations == 3);
    auto check_runs = [&](size_t from) {
      for (size_t i = from; i < modules.size(); ++i) {
        const Tensor x = random_tensor(TensorType{DType::Float32, {2, 3, 4}, true}, 100 + i);
        CHECK(same_bytes(modules[i].run({x})[0], x.data(), x.bytes()));
      }
    };
    check_runs(0);
    // The first goes while the second still uses the same kernels.so.
    { Module gone = std::move(modules[0]); }
    check_runs(1);
  }
  const fake_cuda_stats after = fake->stats();
  CHECK(after.live_allocations == before.live_allocations);
  CHECK(after.live_bytes == before.live_bytes);
  CHECK(after.contexts_created > before.contexts_created);
  CHECK(after.contexts_created - after.contexts_destroyed == before.contexts_created - before.contexts_destroyed);
  CHECK(after.rejected_copies == before.rejected_copies);
}

TEST_CASE("fake cuda: a kernel launch fails with a ModuleError naming the kernel and the driver's error",
          "[artifact][cuda][fake_cuda]") {
  const FakeDriver *fake = use_fake_driver();
  if (!fake) return;
  GraphBuilder b("relu");
  const int x = b.input("x", DType::Float32, {1, 8});
  auto graph = b.finish({b.node("Relu", {x})});
  ScratchDir dir("fake_cuda_relu");
  const fs::path artifact = dir.path / "relu.tsl";
  CHECK(compile_cuda_artifact(*graph, "sm_86", artifact).kernel_steps == 1);

  const fake_cuda_stats before = fake->stats();
  {
    Module module = Module::load(artifact.string());
    REQUIRE(module.kernel_count() == 1);
    const Tensor input = random_tensor(TensorType{DType::Float32, {1, 8}, true}, 3);
    for (int attempt = 0; attempt < 2; ++attempt) {  // the Module stays usable after a failure
      try {
        module.run({input});
        FAIL("a kernel cannot run on the fake driver");
      } catch (const ModuleError &e) {
        INFO(e.what());
        CHECK_THAT(e.what(), Catch::Contains("kernel tessel_k0 failed") && Catch::Contains("cuLaunchKernel") &&
                                 Catch::Contains("CUDA_ERROR_NOT_SUPPORTED"));
      }
    }
    const fake_cuda_stats ran = fake->stats();
    CHECK(ran.launches - before.launches == 2);
    CHECK(ran.modules_loaded - before.modules_loaded == 1);  // the PTX was handed to the driver once
    // ... under the register cap the compile chose for its blocks (one warp: the most there is).
    auto manifest = deploy::parse_manifest(read_text(artifact / "manifest.json"));
    REQUIRE(manifest.ok());
    REQUIRE(manifest->gpu_max_registers.count("tessel_k0") == 1);
    CHECK(ran.last_jit_max_registers == manifest->gpu_max_registers.at("tessel_k0"));
    CHECK(ran.last_jit_max_registers > 64);
    CHECK(ran.copies_host_to_device - before.copies_host_to_device == 2);  // the input, per run
    CHECK(ran.rejected_copies == before.rejected_copies);
  }
  // Device memory, the PTX module and the context went back to the driver with the Module
  // (kernels.so's runtime lets go of them when the library is unloaded).
  const fake_cuda_stats after = fake->stats();
  CHECK(after.live_allocations == before.live_allocations);
  CHECK(after.live_bytes == before.live_bytes);
  CHECK(after.modules_unloaded - before.modules_unloaded == 1);
  CHECK(after.contexts_created - after.contexts_destroyed == before.contexts_created - before.contexts_destroyed);
}

TEST_CASE("fake cuda: a GPU out of memory refuses the load, naming the allocation", "[artifact][cuda][fake_cuda]") {
  const FakeDriver *fake = use_fake_driver();
  if (!fake) return;
  KnobsReset reset{*fake};
  auto graph = copies_only_graph();
  ScratchDir dir("fake_cuda_oom");
  const fs::path artifact = dir.path / "copies.tsl";
  compile_cuda_artifact(*graph, "sm_86", artifact);
  const fake_cuda_stats before = fake->stats();
  fake->set_memory_limit(before.live_bytes + 1024);  // less than the one allocation needs
  const std::string error = tessel::testing::load_error(artifact);
  INFO(error);
  CHECK_THAT(error, Catch::Contains("cannot allocate") && Catch::Contains("on the GPU") &&
                        Catch::Contains("CUDA_ERROR_OUT_OF_MEMORY"));
  CHECK(fake->stats().failed_allocations > before.failed_allocations);
  CHECK(fake->stats().live_allocations == before.live_allocations);
  // With the memory back, the same artifact loads and runs.
  fake->set_memory_limit(0);
  Module module = Module::load(artifact.string());
  const Tensor x = random_tensor(TensorType{DType::Float32, {2, 3, 4}, true}, 7);
  CHECK(same_bytes(module.run({x})[0], x.data(), x.bytes()));
}

TEST_CASE("fake cuda: a failed copy to, on or from the GPU is a ModuleError; the next run works",
          "[artifact][cuda][fake_cuda]") {
  const FakeDriver *fake = use_fake_driver();
  if (!fake) return;
  KnobsReset reset{*fake};
  auto graph = copies_only_graph();
  ScratchDir dir("fake_cuda_copy_failure");
  const fs::path artifact = dir.path / "copies.tsl";
  compile_cuda_artifact(*graph, "sm_86", artifact);
  // At load: the weights' upload fails, and the allocation made before it goes back.
  const fake_cuda_stats before = fake->stats();
  fake->fail_copy(1);
  const std::string error = tessel::testing::load_error(artifact);
  INFO(error);
  CHECK_THAT(error, Catch::Contains("uploading weights.bin to the GPU") && Catch::Contains("cuMemcpyHtoD") &&
                        Catch::Contains("CUDA_ERROR_UNKNOWN"));
  CHECK(fake->stats().live_allocations == before.live_allocations);

  Module module = Module::load(artifact.string());
  const Tensor x = random_tensor(TensorType{DType::Float32, {2, 3, 4}, true}, 8);
  // A run's copies: the input up (1), five copy steps (2-6), five outputs down (7-11).
  for (auto [nth, what] : {std::pair{1L, "copying input 'x' to the GPU: a copy from the host to the GPU failed: CUDA: "
                                         "cuMemcpyHtoD failed"},
                           std::pair{3L, "a copy step: a copy on the GPU failed: CUDA: cuMemcpyDtoD failed"},
                           std::pair{11L, "from the GPU: a copy from the GPU to the host failed: CUDA: cuMemcpyDtoH "
                                          "failed"}}) {
    fake->fail_copy(nth);
    try {
      module.run({x});
      FAIL("copy " << nth << " of the run failed");
    } catch (const ModuleError &e) {
      INFO(e.what());
      CHECK_THAT(e.what(), Catch::Contains(what) && Catch::Contains("CUDA_ERROR_UNKNOWN"));
    }
    const std::vector<Tensor> got = module.run({x});
    CHECK(same_bytes(got[2], x.data(), x.bytes()));
  }
  CHECK(fake->stats().injected_copy_failures - before.injected_copy_failures == 4);
}
