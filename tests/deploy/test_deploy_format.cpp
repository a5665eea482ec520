// The deploy runtime's formats (ARTIFACT.md) and Module's load checks. End-to-end runs of
// compiled models live with the compiler's tests; here a tiny hand-written C "kernels.so"
// stands in for Halide's, to check how Module builds buffers and runs steps.
#include <catch2/catch.hpp>

#include <limits>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/spin_pool.h"
#include "deploy/artifact_manifest.h"
#include "deploy/cpu_features.h"
#include "deploy/execution_plan.h"
#include "deploy/host_program.h"
#include "deploy/huge_page_buffer.h"
#include "deploy/module.h"
#include "deploy/serial_kernel_choice.h"
#include "tuner/in_graph_selection.h"

using namespace tessel;
using namespace tessel::deploy;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tessel_deploy_XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_file(const fs::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  REQUIRE(out.good());
}

std::string read_file(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string load_error(const std::string &path, const ModuleOptions &options = {}) {
  try {
    Module::load(path, options);
  } catch (const ModuleError &e) {
    return e.what();
  }
  return "(loaded without an error)";
}

ArtifactFile file_entry(const std::string &name, const std::string &bytes) {
  return {name, static_cast<int64_t>(bytes.size()), fnv1a64_hex(bytes.data(), bytes.size())};
}

// Writes an artifact directory from its parts; the manifest's file entries describe them.
void write_artifact(const fs::path &dir, ArtifactManifest m, const std::string &plan, const std::string &weights,
                    const std::string &kernels) {
  fs::create_directories(dir);
  m.plan = file_entry("plan.txt", plan);
  m.weights = file_entry("weights.bin", weights);
  m.kernels = file_entry("kernels.so", kernels);
  write_file(dir / "plan.txt", plan);
  write_file(dir / "weights.bin", weights);
  write_file(dir / "kernels.so", kernels);
  write_file(dir / "manifest.json", to_json(m));
}

ArtifactManifest sample_manifest() {
  ArtifactManifest m;
  m.tessel_version = deploy_runtime_version();
  m.target = "llvm";
  m.halide_target = "x86-64-linux-sse41";
  m.required_cpu_features = {"sse2"};
  m.model_path = "models/tiny \"model\".onnx";
  m.model_fnv1a64 = "0123456789abcdef";
  m.created_utc = "2026-11-21T12:00:00Z";
  m.arena_bytes = 64;
  m.inputs = {{"x", DType::Float32, {2, 3}}};
  m.outputs = {{"y", DType::Float32, {2, 3}}};
  ArtifactTask tuned;
  tuned.kernel = "k0";
  tuned.ops = "Conv+Relu";
  tuned.workload_key = "conv|1x3x224x224|\\n";
  tuned.flops = 115605504;
  tuned.tuned = true;
  tuned.schedule_hash = "b8389dad77cddd83";
  tuned.record_median_seconds = 0.00061;
  ArtifactTask plain;
  plain.kernel = "k1";
  plain.ops = "Add";
  plain.flops = (int64_t{1} << 60) + 1;  // beyond a double's exact integers
  m.tasks = {tuned, plain};
  m.plan = {"plan.txt", 100, "0000000000000001"};
  m.weights = {"weights.bin", 0, "cbf29ce484222325"};
  m.kernels = {"kernels.so", 5, "ffffffffffffffff"};
  return m;
}

// The plan of the fake artifact below: y = x + 2w, flat = x + w (a view, copied out),
// info = the Halide buffer description the kernel saw for x.
const char *kFakePlan =
    "tessel-plan 1\n"
    "tensor 0 x float32 2 2 3 input 0\n"
    "tensor 1 w float32 2 2 3 weight 0\n"
    "tensor 2 t float32 2 2 3 arena 0\n"
    "tensor 3 y float32 2 2 3 output 0\n"
    "tensor 5 t%20flat float32 1 6 view 2\n"
    "tensor 4 flat float32 1 6 output 1\n"
    "tensor 6 info int32 1 8 output 2\n"
    "input 0 0\n"
    "output 0 3\n"
    "output 1 4\n"
    "output 2 6\n"
    "kernel add 3 0 1 2\n"
    "kernel add 3 2 1 3\n"
    "copy 5 4\n"
    "kernel describe 2 0 6\n";

// Stands in for a Halide kernels.so: the same entry points and buffer struct layout.
const char *kFakeKernels = R"(
#include <stdint.h>
struct dim { int32_t min, extent, stride; uint32_t flags; };
struct type { uint8_t code, bits; uint16_t lanes; };
struct buf { uint64_t device; void *iface; uint8_t *host; uint64_t flags; struct type type;
             int32_t dimensions; struct dim *dim; void *padding; };
typedef void (*handler_t)(void *, const char *);
static handler_t handler;
typedef int (*par_for_t)(void *, int (*)(void *, int, uint8_t *), int, int, uint8_t *);
static par_for_t par_for;
handler_t halide_set_error_handler(handler_t h) { handler_t old = handler; handler = h; return old; }
par_for_t halide_set_custom_do_par_for(par_for_t f) { par_for_t old = par_for; par_for = f; return old; }
static int mark(void *uc, int i, uint8_t *closure) { closure[i] = 1; return 0; }
int fake_parallel_marks(int n, uint8_t *marks) { return par_for(0, mark, 0, n, marks); }
static int64_t count(const struct buf *b) {
  int64_t n = 1;
  for (int i = 0; i < b->dimensions; ++i) n *= b->dim[i].extent;
  return n;
}
int add_argv(void **args) {
  struct buf *a = args[0], *b = args[1], *o = args[2];
  if (a->type.code != 2 || a->type.bits != 32 || a->type.lanes != 1) { handler(0, "add: not float32\n"); return -1; }
  for (int64_t i = 0; i < count(o); ++i) ((float *)o->host)[i] = ((float *)a->host)[i] + ((float *)b->host)[i];
  return 0;
}
int describe_argv(void **args) {
  struct buf *a = args[0], *o = args[1];
  int32_t *out = (int32_t *)o->host;
  out[0] = a->dimensions;
  out[1] = a->dim[0].extent; out[2] = a->dim[0].stride; out[3] = a->dim[0].min;
  out[4] = a->dim[1].extent; out[5] = a->dim[1].stride;
  out[6] = a->type.code * 100 + a->type.bits;
  out[7] = (int32_t)(a->flags | a->device);
  return 0;
}
int fail_argv(void **args) {
  handler(0, "Input buffer x is accessed at 7, which is beyond the max (5) in dimension 0\n");
  return -3;
}
/* Stand-ins for other schedules of add, for in-graph selection. */
int add_again_argv(void **args) { return add_argv(args); }
int add_wrong_argv(void **args) {
  int r = add_argv(args);
  ((float *)((struct buf *)args[2])->host)[0] += 1.0f;
  return r;
}
int add_crash_argv(void **args) { *(volatile int *)(uintptr_t)8 = 1; return 0; }
int add_hang_argv(void **args) { for (volatile int spin = 1; spin;) {} return 0; }
/* What Halide writes next to each kernel: its arguments' kinds (1 input, 2 output buffer). */
struct argument { const char *name; int32_t kind, dimensions; struct type type; const void *scalars[4];
                  const int64_t *estimates; };
struct metadata { int32_t version, num_arguments; const struct argument *arguments; const char *target, *name; };
static const struct argument two_in_one_out[] = {{"a", 1, 2}, {"b", 1, 2}, {"out", 2, 2}};
static const struct argument one_in_one_out[] = {{"a", 1, 2}, {"out", 2, 1}};
#define DESCRIBED(kernel, arguments, count) \
  const struct metadata *kernel##_metadata(void) { \
    static const struct metadata m = {1, count, arguments, "host", #kernel}; \
    return &m; \
  }
DESCRIBED(add, two_in_one_out, 3)
DESCRIBED(add_again, two_in_one_out, 3)
DESCRIBED(add_wrong, two_in_one_out, 3)
DESCRIBED(add_crash, two_in_one_out, 3)
DESCRIBED(add_hang, two_in_one_out, 3)
DESCRIBED(describe, one_in_one_out, 2)
DESCRIBED(fail, one_in_one_out, 2)
)";

// Compiles kFakeKernels with the system C compiler; empty when there is none.
std::string build_fake_kernels(const fs::path &dir) {
  const fs::path source = dir / "fake_kernels.c", library = dir / "fake_kernels.so";
  write_file(source, kFakeKernels);
  const std::string command = "cc -shared -fPIC -O1 -o '" + library.string() + "' '" + source.string() + "' 2>/dev/null";
  if (std::system(command.c_str()) != 0) return "";
  return read_file(library);
}

ArtifactManifest fake_manifest();
std::string fake_weights();

/// The fake artifact (kFakePlan over kFakeKernels) written into `dir`/fake.tsl; empty when
/// there is no C compiler.
fs::path write_fake_artifact(const fs::path &dir) {
  const std::string kernels = build_fake_kernels(dir);
  if (kernels.empty()) return {};
  const fs::path artifact = dir / "fake.tsl";
  write_artifact(artifact, fake_manifest(), kFakePlan, fake_weights(), kernels);
  return artifact;
}

ArtifactManifest fake_manifest() {
  ArtifactManifest m = sample_manifest();
  m.tasks.clear();
  m.arena_bytes = 64;
  m.outputs = {{"y", DType::Float32, {2, 3}}, {"flat", DType::Float32, {6}}, {"info", DType::Int32, {8}}};
  return m;
}

std::string fake_weights() {
  std::string w(64, '\0');
  const float values[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(w.data(), values, sizeof values);
  return w;
}

}  // namespace

// ---- manifest ---------------------------------------------------------------------------

TEST_CASE("manifest: to_json then parse_manifest gives the same manifest", "[deploy]") {
  const ArtifactManifest m = sample_manifest();
  const std::string json = to_json(m);
  auto back = parse_manifest(json);
  REQUIRE(back.ok());
  CHECK(back.value() == m);
  CHECK(back.value().tasks[1].flops == (int64_t{1} << 60) + 1);
  CHECK(back.value().tasks[0].record_median_seconds == 0.00061);
  CHECK(to_json(back.value()) == json);
  // A human reads it too: one field per line.
  CHECK_THAT(json, Catch::Contains("\n  \"format\": \"tessel-artifact\",\n  \"format_version\": 1,\n"));
  // Fields this runtime does not know are ignored.
  std::string extra = json;
  extra.insert(1, "\n  \"future_field\": {\"x\": [1, 2]},");
  auto with_extra = parse_manifest(extra);
  REQUIRE(with_extra.ok());
  CHECK(with_extra.value() == m);
  // A cuda artifact's register caps, per kernel symbol.
  ArtifactManifest gpu = m;
  gpu.gpu_max_registers = {{"tessel_k0", 255}, {"tessel_k1", 64}};
  auto gpu_back = parse_manifest(to_json(gpu));
  REQUIRE(gpu_back.ok());
  CHECK(gpu_back.value() == gpu);
  CHECK_FALSE(gpu_back.value() == m);
  CHECK(json.find("gpu_max_registers") == std::string::npos);  // only when there are some
}

TEST_CASE("manifest: wrong format, future format_version, bad fields", "[deploy]") {
  std::string json = to_json(sample_manifest());
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string s = json;
    const size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  auto wrong_format = parse_manifest(replace("\"tessel-artifact\"", "\"onnx-model\""));
  REQUIRE_FALSE(wrong_format.ok());
  CHECK_THAT(wrong_format.error().message, Catch::Contains("not a tessel artifact") && Catch::Contains("onnx-model"));

  auto not_json = parse_manifest("\x7f" "ELF binary");
  REQUIRE_FALSE(not_json.ok());
  CHECK_THAT(not_json.error().message, Catch::Contains("not a tessel artifact") && Catch::Contains("column 1"));

  // A future version is named before any field it may have changed is looked at.
  auto future = parse_manifest(R"({"format": "tessel-artifact", "format_version": 2, "something": "else"})");
  REQUIRE_FALSE(future.ok());
  CHECK_THAT(future.error().message, Catch::Contains("format version 2") && Catch::Contains("reads version 1"));

  auto bad_bytes = parse_manifest(replace("\"bytes\": 100", "\"bytes\": -1"));
  REQUIRE_FALSE(bad_bytes.ok());
  CHECK_THAT(bad_bytes.error().message, Catch::Contains("files.plan.bytes"));
  auto bad_dtype = parse_manifest(replace("\"dtype\": \"float32\"", "\"dtype\": \"complex64\""));
  REQUIRE_FALSE(bad_dtype.ok());
  CHECK_THAT(bad_dtype.error().message, Catch::Contains("inputs[0].dtype") && Catch::Contains("complex64"));
  auto bad_hash = parse_manifest(replace("\"ffffffffffffffff\"", "\"FFFF\""));
  REQUIRE_FALSE(bad_hash.ok());
  CHECK_THAT(bad_hash.error().message, Catch::Contains("files.kernels.fnv1a64"));
  auto bad_schedule = parse_manifest(replace("\"schedule\": \"tuned\"", "\"schedule\": \"magic\""));
  REQUIRE_FALSE(bad_schedule.ok());
  CHECK_THAT(bad_schedule.error().message, Catch::Contains("tasks[0].schedule"));
  for (const char *bad : {R"("gpu_max_registers": [64],)", R"("gpu_max_registers": {"k": 4096},)",
                          R"("gpu_max_registers": {"k": "many"},)"}) {
    std::string with = json;
    with.insert(1, bad);
    auto parsed = parse_manifest(with);
    INFO(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK_THAT(parsed.error().message, Catch::Contains("gpu_max_registers"));
  }
}

TEST_CASE("fnv1a64 of the reference strings", "[deploy]") {
  CHECK(fnv1a64_hex("", 0) == "cbf29ce484222325");
  CHECK(fnv1a64_hex("a", 1) == "af63dc4c8601ec8c");
  CHECK(fnv1a64_hex("foobar", 6) == "85944171f73967e8");
}

// ---- plan -------------------------------------------------------------------------------

TEST_CASE("plan: to_text then parse_plan gives the same plan", "[deploy]") {
  ExecutionPlan plan;
  plan.tensors = {
      {7, "input image", DType::Float32, {1, 3, 4, 4}, Location::Input, 0},
      {2, "scale%", DType::Float16, {}, Location::Input, 1},
      {9, "conv.weight", DType::Float32, {8, 3, 3, 3}, Location::Weight, 128},
      {3, "", DType::Int64, {0}, Location::Arena, 0},
      {4, "日本/ü:x", DType::Bool, {2, 2}, Location::Arena, 64},
      {5, "flat", DType::Bool, {4}, Location::View, 4},
      {6, "flat2", DType::Bool, {1, 4}, Location::View, 5},
      {11, "out", DType::Bool, {4}, Location::Output, 0},
      {12, "w copy", DType::Float32, {8, 3, 3, 3}, Location::Output, 1},
  };
  plan.inputs = {7, 2};
  plan.outputs = {11, 12};
  plan.steps = {KernelStep{"k0", {7, 2, 9, 4}}, CopyStep{6, 11}, CopyStep{9, 12}, KernelStep{"k_1", {3}, true},
                JoinStep{4, {5}}};
  const std::string text = to_text(plan);
  CHECK(text.rfind("tessel-plan 1\ntensor 7 input%20image float32 4 1 3 4 4 input 0\n", 0) == 0);
  CHECK(text.find("\nserial-kernel k_1 1 3\n") != std::string::npos);
  auto back = parse_plan(text);
  INFO(text);
  REQUIRE(back.ok());
  CHECK(back.value() == plan);
  CHECK(to_text(back.value()) == text);
}

TEST_CASE("plan: host steps and run-time shapes round-trip and are checked", "[deploy]") {
  ExecutionPlan plan;
  plan.tensors = {
      {1, "x", DType::Float32, {3, 5}, Location::Input, 0},
      {2, "where", DType::Int64, {2, -1}, Location::Dynamic, 0},
      {3, "anything", DType::Float32, {}, Location::Dynamic, 0, false},
      {4, "picked", DType::Float32, {-1}, Location::Output, 0},
      {5, "top", DType::Float32, {3, 2}, Location::Output, 1},
  };
  plan.inputs = {1};
  plan.outputs = {4, 5};
  plan.steps = {HostStep{0, {1}, {2}}, HostStep{1, {1, -1, 2}, {3, -1}}, HostStep{2, {3}, {4}},
                HostStep{3, {1}, {5}}};
  const std::string text = to_text(plan);
  CHECK(text.find("tensor 2 where int64 2 2 ? dynamic 0\n") != std::string::npos);
  CHECK(text.find("tensor 3 anything float32 ? dynamic 0\n") != std::string::npos);
  CHECK(text.find("host 1 3 1 - 2 2 3 -\n") != std::string::npos);
  auto back = parse_plan(text);
  INFO(text);
  REQUIRE(back.ok());
  CHECK(back.value() == plan);
  CHECK(check_data_flow(back.value(), {}).ok());

  const std::string head = "tessel-plan 1\ntensor 1 x float32 1 4 input 0\ntensor 2 d float32 1 ? dynamic 0\n"
                           "tensor 3 y float32 1 4 output 0\ninput 0 1\noutput 0 3\n";
  auto fails = [&](const std::string &steps, const std::string &why) {
    auto parsed = parse_plan(head + steps);
    if (parsed.ok()) {
      auto flow = check_data_flow(parsed.value(), std::vector<int>(8, 1));
      REQUIRE_FALSE(flow.ok());
      CHECK_THAT(flow.error().message, Catch::Contains(why));
      return;
    }
    CHECK_THAT(parsed.error().message, Catch::Contains(why));
  };
  fails("kernel k 2 2 3\n", "only at run time");           // a kernel cannot take a run-time value
  fails("copy 2 3\n", "only at run time");                 // nor a copy
  fails("host 0 1 2 1 3\n", "no earlier step wrote");      // read before any step made it
  fails("host 0 1 1 1 9\n", "undeclared tensor id 9");
  fails("host 0 2 1\n", "fewer tensors");
  fails("host 0 1 1 1 3 7\n", "extra tokens");
  CHECK_THAT(parse_plan("tessel-plan 1\ntensor 1 x float32 1 ? arena 0\n").error().message,
             Catch::Contains("must be located at dynamic or output"));
}

TEST_CASE("host.json: every attribute kind and nested bodies round-trip exactly; damage is an error", "[deploy]") {
  auto body = std::make_shared<Graph>();
  body->name = "then";
  body->opset = 13;
  const int outer = body->add_tensor({"outer value", {}, std::nullopt});
  const int one = body->add_tensor({"one", TensorType{DType::Float32, {}, true}, Tensor::scalar(DType::Float32, 1)});
  const int sum = body->add_tensor({"sum", TensorType{DType::Float32, {kUnknownDim}, true}, std::nullopt});
  body->add_node(Node{"Add", "add in body", "", {}}, {outer, one}, {sum});
  body->outputs = {sum};
  Node node{"If", "my if", "", {}};
  node.attributes.set("then_branch", std::shared_ptr<const Graph>(body));
  node.attributes.set("else_branch", std::shared_ptr<const Graph>(body));
  node.attributes.set("an_int", int64_t{-9007199254740993});
  node.attributes.set("nan", std::numeric_limits<float>::quiet_NaN());
  node.attributes.set("bytes", std::string("\xff\x00 not utf-8", 14));
  node.attributes.set("ints", std::vector<int64_t>{1, -2, INT64_MAX});
  node.attributes.set("floats", std::vector<float>{1.5f, -0.0f, std::numeric_limits<float>::infinity()});
  node.attributes.set("strings", std::vector<std::string>{"a", ""});
  node.attributes.set("tensor", Tensor::from_int64s({1, 2, 3}, {3}));
  node.attributes.set("tensors", std::vector<Tensor>{Tensor::scalar(DType::Float16, 0.5), Tensor(DType::Float32, {0, 2})});
  HostProgram program;
  program.opset = 13;
  program.nodes.push_back({node, {"outer value"}});
  const std::string text = to_json(program);
  auto back = parse_host_program(text);
  REQUIRE(back.ok());
  REQUIRE(back->nodes.size() == 1);
  const Node &read = back->nodes[0].node;
  CHECK(read.op_type == "If");
  CHECK(read.name == "my if");
  CHECK(back->nodes[0].captures == std::vector<std::string>{"outer value"});
  // canonical_text spells every value exactly (floats as hex, tensors byte by byte); bodies
  // it names by address, so they are compared apart.
  auto without_bodies = [](const Attributes &all) {
    Attributes kept;
    for (const auto &[name, value] : all.all())
      if (!std::holds_alternative<std::shared_ptr<const Graph>>(value)) kept.set(name, value);
    return kept.canonical_text();
  };
  CHECK(read.attributes.all().size() == node.attributes.all().size());
  CHECK(without_bodies(read.attributes) == without_bodies(node.attributes));
  CHECK(std::isnan(read.attributes.get_float("nan", 0)));
  const auto then_branch = read.attributes.get_graph("then_branch");
  REQUIRE(then_branch->nodes.size() == 1);
  CHECK(then_branch->nodes[0].name == "add in body");
  CHECK(then_branch->tensors[sum].type.shape == Shape{kUnknownDim});
  CHECK(then_branch->tensors[one].constant.has_value());
  CHECK(then_branch->outputs == std::vector<int>{sum});
  CHECK(to_json(back.value()) == text);

  auto refused = [&](const std::string &from, const std::string &to) {
    std::string damaged = text;
    const size_t at = damaged.find(from);
    REQUIRE(at != std::string::npos);
    damaged.replace(at, from.size(), to);
    auto parsed = parse_host_program(damaged);
    REQUIRE_FALSE(parsed.ok());
    CHECK_THAT(parsed.error().message, Catch::Contains("host.json"));
  };
  refused("\"outputs\":[2]", "\"outputs\":[7]");            // a tensor id outside the body
  refused("\"inputs\":[0,1]", "\"inputs\":[0,-5]");
  refused("\"float32\"", "\"float33\"");
  refused("\"hex\":\"0100", "\"hex\":\"01x0");
  refused("tessel-host-program", "tessel-host-progran");
  refused("{\"int\":", "{\"integer\":");
  CHECK_FALSE(parse_host_program(text.substr(0, text.size() / 2)).ok());
}

TEST_CASE("plan: each check fails naming the line", "[deploy]") {
  const std::string head =
      "tessel-plan 1\n"
      "tensor 0 x float32 1 4 input 0\n"
      "tensor 1 y float32 1 4 output 0\n";
  const std::string io = "input 0 0\noutput 0 1\n";
  auto expect = [](const std::string &text, int line, const std::string &what) {
    auto p = parse_plan(text);
    INFO(text);
    REQUIRE_FALSE(p.ok());
    CHECK_THAT(p.error().message, Catch::StartsWith("line " + std::to_string(line) + ":") && Catch::Contains(what));
  };
  REQUIRE(parse_plan(head + io + "kernel k 2 0 1\n").ok());

  expect(head + io + "kernel k 2 0 5\n", 6, "undeclared tensor id 5");
  expect(head + "tensor 1 z float32 1 4 arena 0\n" + io, 4, "duplicate tensor id 1");
  expect(head + "tensor 2 a float32 1 4 view 3\ntensor 3 b float32 1 4 view 2\n" + io, 4, "view cycle");
  expect(head + "tensor 2 a float32 1 4 view 2\n" + io, 4, "view cycle");
  expect(head + "tensor 2 a float32 1 5 view 0\n" + io, 4, "view size mismatch");
  expect(head + "tensor 2 a int32 1 4 view 0\n" + io, 4, "view size mismatch");
  expect(head + "tensor 2 a float32 1 4 view 9\n" + io, 4, "undeclared tensor id 9");
  expect(head + "tensor 2 z float32 1 4 output 1\n" + io, 4, "missing output position");
  expect(head + "input 0 0\n", 3, "missing output position");
  expect(head + "tensor 2 z complex64 1 4 arena 0\n" + io, 4, "bad dtype 'complex64'");
  // Truncated: mid-line (no final newline), a line cut short, an argument list cut short.
  expect(head + io + "kernel k 2 0 1", 6, "truncated");
  expect(head + io + "kernel k 2 0\n", 6, "truncated");
  expect("tessel-plan 1\ntensor 0 x float32 2 4\n", 2, "truncated");
  expect("", 1, "empty plan");
  expect("tessel-plan 2\n", 1, "expected 'tessel-plan 1'");
  expect(head + io + "copy 0 1\ncopy 1 0\n", 7, "caller's input");
  expect(head + io + "copy 0 1\n" + "tensor 2 z float32 1 4 arena 0\n", 7, "out of order");
  expect(head + "output 0 1\ninput 0 0\n", 5, "out of order");
  expect(head + "input 0 1\noutput 0 1\n", 4, "located at output 0");
  expect(head + io + "kernel k  2 0 1\n", 6, "exactly one space");
  expect(head + io + "kernel 3k 2 0 1\n", 6, "C identifier");
  expect(head + io + "jump 4\n", 6, "unknown line kind");
  expect(head + "tensor 2 z float32 1 -4 arena 0\n" + io, 4, "non-negative");
  expect(head + "tensor 2 z float32 1 5 arena 0\n" + io + "copy 2 1\n", 7, "different sizes");
  expect(head + "tensor 2 z%4 float32 1 4 arena 0\n" + io, 4, "bad escape");
  const std::string halves = "tensor 2 a float32 1 2 arena 0\ntensor 3 b float32 1 2 arena 8\n" +
                             std::string("tensor 4 w float32 1 4 arena 0\n");
  REQUIRE(parse_plan(head + halves + io + "join 4 2 2 3\n").ok());
  expect(head + halves + io + "join 4 1 2\n", 9, "do not add up");
  expect(head + halves + io + "join 4 0\n", 9, "no parts");
  expect(head + halves + io + "join 4 2 2\n", 9, "truncated");
  expect(head + halves + io + "join 4 2 2 9\n", 9, "undeclared tensor id 9");
  expect(head + "tensor 2 a int32 1 2 arena 0\ntensor 3 b float32 1 2 arena 8\ntensor 4 w float32 1 4 arena 0\n" + io +
             "join 4 2 2 3\n",
         9, "not float32");
}

namespace {

/// check_data_flow of a plan's text (which must parse), kernels writing `outputs` each.
Result<void> data_flow(const std::string &plan_text, const std::vector<int> &outputs) {
  auto plan = parse_plan(plan_text);
  REQUIRE(plan.ok());
  return check_data_flow(plan.value(), outputs);
}

void check_refused_flow(const std::string &plan_text, const std::vector<int> &outputs, const std::string &what) {
  auto r = data_flow(plan_text, outputs);
  INFO(plan_text);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains(what));
}

}  // namespace

TEST_CASE("plan: data flow: what a step reads was written, what the model returns too", "[deploy]") {
  // x (input) -> a (arena 0) -> b (arena 16) -> y (output); c has a's bytes (an alias, as
  // the compiler gives a Flatten), d overlaps them.
  const std::string head =
      "tessel-plan 1\n"
      "tensor 0 x float32 1 4 input 0\n"
      "tensor 1 y float32 1 4 output 0\n"
      "tensor 2 a float32 1 4 arena 0\n"
      "tensor 3 b float32 1 4 arena 16\n"
      "tensor 4 c float32 1 4 arena 0\n"
      "tensor 5 av float32 2 2 2 view 2\n"
      "tensor 6 d float32 1 4 arena 8\n"
      "input 0 0\noutput 0 1\n";
  auto flow = [&](const std::string &steps, std::vector<int> outputs) { return data_flow(head + steps, outputs); };
  auto refused = [&](const std::string &steps, std::vector<int> outputs, const std::string &what) {
    check_refused_flow(head + steps, outputs, what);
  };
  CHECK(flow("kernel f 2 0 2\nkernel g 2 5 3\nkernel h 2 3 1\n", {1, 1, 1}).ok());  // a read through its view
  refused("kernel g 2 2 3\nkernel h 2 3 1\n", {1, 1}, "step 1 (kernel g) reads tensor 2 (a), which no earlier step wrote");
  CHECK(flow("kernel f 2 0 4\nkernel g 2 2 3\nkernel h 2 3 1\n", {1, 1, 1}).ok());  // a is c's alias
  refused("kernel f 2 0 2\nkernel f 2 0 6\nkernel g 2 2 3\nkernel h 2 3 1\n", {1, 1, 1, 1},
          "step 3 (kernel g) reads tensor 2 (a)");  // d overwrote half of a's bytes
  refused("kernel f 2 0 2\n", {1}, "output tensor 1 (y) is never written");
  refused("kernel f 2 0 2\nkernel g 2 2 0\n", {1, 1}, "writes tensor 0 (x), whose bytes are a caller's input");
  refused("kernel f 2 0 2\n", {0}, "kernel f writes 0 of its 2 arguments");
  refused("kernel f 2 0 2\nkernel g 2 2 1\n", {1}, "more kernel steps than kernels described");
}

TEST_CASE("plan: data flow: a join holds its value once its parts were written where they lie", "[deploy]") {
  // w (arena 0, 4 floats) is the Concat of p (arena 0) and q (arena 8), computed in place.
  const std::string head =
      "tessel-plan 1\n"
      "tensor 0 x float32 1 2 input 0\n"
      "tensor 1 y float32 1 4 output 0\n"
      "tensor 2 p float32 1 2 arena 0\n"
      "tensor 3 q float32 1 2 arena 8\n"
      "tensor 4 w float32 1 4 arena 0\n"
      "tensor 5 r float32 1 2 arena 16\n"
      "input 0 0\noutput 0 1\n";
  auto flow = [&](const std::string &steps, std::vector<int> outputs) { return data_flow(head + steps, outputs); };
  auto refused = [&](const std::string &steps, std::vector<int> outputs, const std::string &what) {
    check_refused_flow(head + steps, outputs, what);
  };
  // The parts stay readable after the join (another node may read them too).
  CHECK(flow("kernel f 2 0 2\nkernel f 2 0 3\njoin 4 2 2 3\nkernel g 2 4 1\nkernel h 2 2 5\n", {1, 1, 1, 1}).ok());
  refused("kernel f 2 0 2\nkernel g 2 4 1\n", {1, 1}, "reads tensor 4 (w)");  // no join: w was not all written
  refused("kernel f 2 0 2\njoin 4 2 2 3\nkernel g 2 4 1\n", {1, 1}, "step 2 (join) reads tensor 3 (q)");
  refused("kernel f 2 0 2\nkernel f 2 0 3\njoin 4 2 3 2\nkernel g 2 4 1\n", {1, 1, 1},
          "tensor 3 (q) does not lie where its part of tensor 4 (w) does");
  refused("kernel f 2 0 2\nkernel f 2 0 5\njoin 4 2 2 5\nkernel g 2 4 1\n", {1, 1, 1},
          "tensor 5 (r) does not lie where");
  // A write into a part's bytes after the join overwrites the whole.
  refused("kernel f 2 0 2\nkernel f 2 0 3\njoin 4 2 2 3\nkernel f 2 0 3\nkernel g 2 4 1\n", {1, 1, 1, 1},
          "step 5 (kernel g) reads tensor 4 (w)");
}

TEST_CASE("plan: names round-trip through percent-encoding", "[deploy]") {
  for (std::string name : {std::string("plain_name-1.2/a:b"), std::string("with space"), std::string("100%"),
                           std::string("%41"), std::string("naïve 日本語 😀"), std::string(""), std::string("%"),
                           std::string("tab\tnew\nline"), std::string(1, '\0') + "nul", std::string("\xff\x80")}) {
    const std::string encoded = encode_plan_name(name);
    CHECK_FALSE(encoded.empty());
    CHECK(encoded.find_first_of(" \n\t") == std::string::npos);
    auto back = decode_plan_name(encoded);
    REQUIRE(back.ok());
    CHECK(back.value() == name);
  }
  CHECK(encode_plan_name("a b%") == "a%20b%25");
  CHECK(encode_plan_name("é") == "%C3%A9");
  CHECK_FALSE(decode_plan_name("a%2").ok());
  CHECK_FALSE(decode_plan_name("a%zz").ok());
  CHECK_FALSE(decode_plan_name("raw space").ok());
}

// ---- CPU features ---------------------------------------------------------------------

TEST_CASE("cpu features: unknown names are refused, sse2 is present", "[deploy]") {
  CHECK(check_cpu_features({}).ok());
  CHECK(check_cpu_features({"sse2"}).ok());
  CHECK(cpu_supports("sse2") == std::optional<bool>(true));
  CHECK_FALSE(cpu_supports("no_such_feature").has_value());
  auto unknown = check_cpu_features({"sse2", "no_such_feature"});
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.error().message, Catch::Contains("no_such_feature"));
  // Every missing feature is named, not just the first.
  std::vector<std::string> missing;
  for (const std::string &f : known_cpu_features())
    if (cpu_supports(f) == std::optional<bool>(false)) missing.push_back(f);
  if (missing.size() >= 2) {
    auto r = check_cpu_features({missing[0], "sse2", missing[1]});
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains(missing[0]) && Catch::Contains(missing[1]));
  }
}

// ---- Module::load -----------------------------------------------------------------------

TEST_CASE("Module::load: missing directory, garbage manifest, short plan", "[deploy]") {
  TempDir tmp;
  CHECK_THAT(load_error((tmp.path / "nope.tsl").string()), Catch::Contains("nope.tsl") && Catch::Contains("no such artifact directory"));

  const fs::path empty = tmp.path / "empty.tsl";
  fs::create_directories(empty);
  CHECK_THAT(load_error(empty.string()), Catch::Contains("manifest.json") && Catch::Contains("missing"));

  const fs::path garbage = tmp.path / "garbage.tsl";
  fs::create_directories(garbage);
  write_file(garbage / "manifest.json", "this is not json");
  CHECK_THAT(load_error(garbage.string()), Catch::Contains("manifest.json") && Catch::Contains("not a tessel artifact"));

  // The manifest says the plan has more bytes than the file holds.
  const fs::path short_plan = tmp.path / "short.tsl";
  write_artifact(short_plan, fake_manifest(), kFakePlan, fake_weights(), "not really a library");
  const std::string plan = kFakePlan;
  write_file(short_plan / "plan.txt", plan.substr(0, plan.size() - 20));
  CHECK_THAT(load_error(short_plan.string()),
             Catch::Contains("truncated or modified: plan.txt has " + std::to_string(plan.size() - 20) +
                             " bytes, the manifest says " + std::to_string(plan.size())));
}

TEST_CASE("Module::load: versions, target, CPU, files and plan bounds", "[deploy]") {
  TempDir tmp;
  const std::string kernels = "not really a library";
  auto artifact = [&](const std::string &name, const ArtifactManifest &m, const std::string &plan = kFakePlan) {
    write_artifact(tmp.path / name, m, plan, fake_weights(), kernels);
    return (tmp.path / name).string();
  };

  ArtifactManifest m = fake_manifest();
  m.tessel_version = "0.0.1-old";
  CHECK_THAT(load_error(artifact("old.tsl", m)),
             Catch::Contains("tessel 0.0.1-old") && Catch::Contains(std::string("tessel ") + deploy_runtime_version()));

  m = fake_manifest();
  m.arch = "aarch64";
  CHECK_THAT(load_error(artifact("arm.tsl", m)), Catch::Contains("aarch64"));

  m = fake_manifest();
  m.required_cpu_features = {"sse2", "no_such_feature"};
  CHECK_THAT(load_error(artifact("cpu.tsl", m)), Catch::Contains("no_such_feature"));

  m = fake_manifest();
  m.target = "cuda -arch=sm_90";  // with kernels compiled for the host alone
  CHECK_THAT(load_error(artifact("cuda.tsl", m)), Catch::Contains("kernels compiled for x86-64-linux-sse41"));
  m.halide_target = "x86-64-linux-cuda-cuda_capability_86";
  m.target = "llvm";
  CHECK_THAT(load_error(artifact("llvm_cuda.tsl", m)), Catch::Contains("target \"llvm\" but kernels compiled for"));

  m = fake_manifest();
  m.tessel_version = "x";
  m.format_version = 7;
  CHECK_THAT(load_error(artifact("future.tsl", m)), Catch::Contains("format version 7"));

  // A file the manifest lists is missing; another was changed in place (same size).
  const std::string missing = artifact("missing.tsl", fake_manifest());
  fs::remove(fs::path(missing) / "weights.bin");
  CHECK_THAT(load_error(missing), Catch::Contains("weights.bin") && Catch::Contains("missing"));
  const std::string modified = artifact("modified.tsl", fake_manifest());
  std::string weights = fake_weights();
  weights[0] ^= 1;
  write_file(fs::path(modified) / "weights.bin", weights);
  CHECK_THAT(load_error(modified), Catch::Contains("modified: weights.bin has FNV-1a 64"));
  // Without hash checks it gets as far as opening the (fake) library.
  ModuleOptions no_hashes;
  no_hashes.verify_hashes = false;
  CHECK_THAT(load_error(modified, no_hashes), Catch::Contains("cannot load the kernels"));

  // Plan tensors must lie inside the arena and weights.bin, at aligned offsets.
  std::string plan = kFakePlan;
  auto edit = [&](const std::string &from, const std::string &to) {
    std::string s = plan;
    return s.replace(s.find(from), from.size(), to);
  };
  CHECK_THAT(load_error(artifact("arena.tsl", fake_manifest(), edit("t float32 2 2 3 arena 0", "t float32 2 2 3 arena 64"))),
             Catch::Contains("runs past the end of the arena"));
  CHECK_THAT(load_error(artifact("weight.tsl", fake_manifest(), edit("w float32 2 2 3 weight 0", "w float32 2 2 3 weight 64"))),
             Catch::Contains("runs past the end of weights.bin"));
  CHECK_THAT(load_error(artifact("align.tsl", fake_manifest(), edit("t float32 2 2 3 arena 0", "t float32 2 2 3 arena 8"))),
             Catch::Contains("not 64-byte aligned"));
  CHECK_THAT(load_error(artifact("badplan.tsl", fake_manifest(), edit("kernel describe 2 0 6", "kernel describe 2 0 60"))),
             Catch::Contains("plan.txt line 16: undeclared tensor id 60"));
  // The plan's inputs must be the manifest's.
  m = fake_manifest();
  m.inputs[0].shape = {3, 2};
  CHECK_THAT(load_error(artifact("io.tsl", m)), Catch::Contains("input 0 (x)") && Catch::Contains("float32[3,2]"));
  CHECK_THAT(load_error(artifact("threads.tsl", fake_manifest()), ModuleOptions{-1, true}), Catch::Contains("threads"));
}

TEST_CASE("huge-page buffers: 2 MiB aligned, zeroed, movable", "[deploy]") {
  deploy::HugePageBuffer buffer;
  REQUIRE(buffer.allocate(3 << 20));
  CHECK(buffer.size() == size_t{3} << 20);
  CHECK(reinterpret_cast<uintptr_t>(buffer.data()) % (2 << 20) == 0);
  CHECK(std::all_of(buffer.data(), buffer.data() + buffer.size(), [](uint8_t b) { return b == 0; }));
  buffer.data()[buffer.size() - 1] = 7;
  deploy::HugePageBuffer moved = std::move(buffer);
  CHECK(buffer.data() == nullptr);
  CHECK(moved.data()[moved.size() - 1] == 7);
  deploy::HugePageBuffer tiny;
  REQUIRE(tiny.allocate(0));  // an empty arena still gets a valid pointer
  CHECK(tiny.data() != nullptr);
}

TEST_CASE("huge-page buffers: readable bytes on either side (Halide reads a vector past an edge)", "[deploy]") {
  // Without the guard, a buffer whose mapping starts 2 MiB aligned has nothing mapped
  // right before it; a stride-2 load Halide starts one element early then faults.
  for (size_t bytes : {size_t{64}, size_t{2} << 20, size_t{5} << 20}) {
    deploy::HugePageBuffer buffer;
    REQUIRE(buffer.allocate(bytes));
    const volatile uint8_t *before = buffer.data() - 256;
    const volatile uint8_t *after = buffer.data() + buffer.size() + 255;
    CHECK(*before == 0);
    CHECK(*after == 0);
  }
}

TEST_CASE("Module runs a hand-written kernels.so: buffers, views, copies, errors", "[deploy]") {
  TempDir tmp;
  const fs::path dir = write_fake_artifact(tmp.path);
  if (dir.empty()) {
    WARN("no C compiler (cc): skipping the Module run test");
    return;
  }
  const std::string kernels = read_file(dir / "kernels.so");
  ModuleOptions options;
  options.threads = 3;
  Module module = Module::load(dir.string(), options);
  CHECK(module.kernel_count() == 3);
  CHECK(module.arena_bytes() == 64);
  CHECK(module.inputs().size() == 1);
  CHECK(module.outputs()[2].name == "info");
  CHECK_THAT(module.manifest_json(), Catch::Contains("tessel-artifact"));
  {
    // The library's parallel loops run on the runtime's pool, with options.threads threads.
    CHECK(spin_pool_threads() == 3);
    void *h = ::dlopen(fs::canonical(dir / "kernels.so").c_str(), RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(h != nullptr);
    auto parallel_marks = reinterpret_cast<int (*)(int, uint8_t *)>(::dlsym(h, "fake_parallel_marks"));
    REQUIRE(parallel_marks != nullptr);
    std::vector<uint8_t> marks(100, 0);
    CHECK(parallel_marks(100, marks.data()) == 0);
    CHECK(std::count(marks.begin(), marks.end(), 1) == 100);
    ::dlclose(h);
  }

  Tensor x(DType::Float32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = 10.0f * i;
  for (int round = 0; round < 2; ++round) {  // a second run reuses the buffers
    std::vector<Tensor> out = module.run({x});
    REQUIRE(out.size() == 3);
    CHECK(out[0].shape() == Shape{2, 3});
    for (int i = 0; i < 6; ++i) {
      CHECK(out[0].data_as<float>()[i] == 10.0f * i + 2.0f * (i + 1));
      CHECK(out[1].data_as<float>()[i] == 10.0f * i + (i + 1));
    }
    // x as Halide saw it: 2 dims, dim 0 the last ONNX axis (extent 3, stride 1, min 0),
    // dim 1 extent 2 stride 3; float32 (code 2, 32 bits); no flags, no device.
    const int32_t *info = out[2].data_as<int32_t>();
    CHECK(std::vector<int32_t>(info, info + 8) == std::vector<int32_t>{2, 3, 1, 0, 2, 3, 232, 0});
  }

  auto named = module.run_named({{"x", x}});
  CHECK(named.size() == 3);
  CHECK(named.at("y").data_as<float>()[5] == 62.0f);
  try {
    module.run_named({{"x", x}, {"extra", x}});
    FAIL("an unknown input name was accepted");
  } catch (const ModuleError &e) {
    CHECK_THAT(e.what(), Catch::Contains("unknown input 'extra'"));
  }
  try {
    module.run_named({});
    FAIL("a missing input was accepted");
  } catch (const ModuleError &e) {
    CHECK_THAT(e.what(), Catch::Contains("missing input 'x'"));
  }
  try {
    module.run({Tensor(DType::Float32, {3, 2})});
    FAIL("a wrong shape was accepted");
  } catch (const ModuleError &e) {
    CHECK_THAT(e.what(), Catch::Contains("input 'x'") && Catch::Contains("expected float32[2,3], got float32[3,2]"));
  }
  CHECK_THROWS_AS(module.run({}), ModuleError);
  CHECK_THROWS_AS(module.run({Tensor(DType::Int64, {2, 3})}), ModuleError);

  // run_raw writes into the caller's buffers.
  std::vector<float> y(6), flat(6);
  std::vector<int32_t> info(8);
  module.run_raw({x.data()}, {y.data(), flat.data(), info.data()});
  CHECK(y[1] == 14.0f);
  CHECK(flat[5] == 56.0f);
  CHECK_THROWS_AS(module.run_raw({nullptr}, {y.data(), flat.data(), info.data()}), ModuleError);

  // run() on one Module from several threads: serialized, every result right.
  {
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int r = 0; r < 50; ++r)
          if (module.run({x})[0].data_as<float>()[5] != 62.0f) ++wrong;
      });
    for (std::thread &t : threads) t.join();
    CHECK(wrong == 0);
  }
  // A second Module from the same artifact shares the library and outlives the first.
  {
    Module other = Module::load(dir.string());
    CHECK(other.run({x})[1].data_as<float>()[5] == 56.0f);
  }
  // Weights read from the file mapping instead of their copy in huge pages: the same results.
  {
    ModuleOptions mapped;
    mapped.weights_in_huge_pages = false;
    Module other = Module::load(dir.string(), mapped);
    CHECK(other.run({x})[0].data_as<float>()[5] == 62.0f);
  }

  // Movable: the moved-to Module runs, the moved-from one says so.
  Module moved = std::move(module);
  CHECK(moved.run({x})[0].data_as<float>()[0] == 2.0f);
  CHECK_THROWS_AS(module.kernel_count(), ModuleError);

  // A kernel that fails: Halide's message in the error.
  std::string plan = kFakePlan;
  plan += "kernel fail 2 0 3\n";
  const fs::path failing = tmp.path / "failing.tsl";
  write_artifact(failing, fake_manifest(), plan, fake_weights(), kernels);
  Module bad = Module::load(failing.string());
  try {
    bad.run({x});
    FAIL("the failing kernel did not fail");
  } catch (const ModuleError &e) {
    CHECK(std::string(e.what()) == "kernel fail failed: Input buffer x is accessed at 7, which is beyond the max (5) in dimension 0");
  }

  // A symbol kernels.so lacks.
  const fs::path nosym = tmp.path / "nosym.tsl";
  write_artifact(nosym, fake_manifest(), std::string(kFakePlan) + "kernel nosuch 1 0\n", fake_weights(), kernels);
  CHECK_THAT(load_error(nosym.string()), Catch::Contains("no nosuch_argv"));

  // A kernel listed with other arguments than it takes (its Halide metadata says).
  const fs::path short_call = tmp.path / "short.tsl";
  write_artifact(short_call, fake_manifest(), std::string(kFakePlan) + "kernel add 2 0 1\n", fake_weights(), kernels);
  CHECK_THAT(load_error(short_call.string()), Catch::Contains("kernel add takes 3 arguments, plan.txt passes 2"));
}

TEST_CASE("Module refuses a kernels.so replaced while the old one is loaded", "[deploy]") {
  TempDir tmp;
  const std::string kernels = build_fake_kernels(tmp.path);
  if (kernels.empty()) {
    WARN("no C compiler (cc): skipping");
    return;
  }
  const fs::path dir = tmp.path / "model.tsl";
  write_artifact(dir, fake_manifest(), kFakePlan, fake_weights(), kernels);
  Tensor x(DType::Float32, {2, 3});
  {
    Module first = Module::load(dir.string());
    // Recompiled into place (a new file at the same path) while `first` still holds the old one.
    fs::remove_all(dir);
    write_artifact(dir, fake_manifest(), kFakePlan, fake_weights(), kernels);
    CHECK_THAT(load_error(dir.string()), Catch::Contains("replaced on disk"));
    CHECK_NOTHROW(first.run({x}));
  }
  // Once the old Module is gone the new artifact loads.
  Module second = Module::load(dir.string());
  CHECK(second.run({x})[0].data_as<float>()[0] == 2.0f);
}

TEST_CASE("in-graph selection leaves out schedules that crash, hang or compute something else", "[deploy][select]") {
  TempDir tmp;
  const fs::path dir = write_fake_artifact(tmp.path);
  if (dir.empty()) {
    WARN("no C compiler (cc): skipping the in-graph selection isolation test");
    return;
  }
  // The plan's first kernel call (add) with five stand-ins for its schedules.
  TaskAlternatives task{"add|2x3", "Add", {0}, {}};
  for (const char *symbol : {"add", "add_crash", "add_wrong", "add_again", "add_hang"})
    task.alternatives.push_back({DeployedSchedule{"", symbol, 1e-6}, {symbol}});
  InGraphSelectionOptions options;
  options.threads = 1;
  options.rounds = 2;
  options.runs_per_round = 3;
  options.child_timeout_seconds = 3;
  auto selection = select_in_graph(dir.string(), {task}, options);
  INFO((selection.ok() ? "" : selection.error().message));
  REQUIRE(selection.ok());
  REQUIRE(selection->tasks.size() == 1);
  const TaskSelection &s = selection->tasks[0];
  REQUIRE(s.left_out.size() == 5);
  CHECK(s.left_out[0].empty());
  CHECK_THAT(s.left_out[1], Catch::Contains("crashed"));
  CHECK_THAT(s.left_out[2], Catch::Contains("outputs differ"));
  CHECK(s.left_out[3].empty());
  CHECK_THAT(s.left_out[4], Catch::Contains("hung"));
  CHECK((s.chosen == 0 || s.chosen == 3));
  CHECK(std::isfinite(s.affected_ms[3]));
  CHECK(std::isinf(s.affected_ms[1]));

  // When the task's own fastest record is the one that crashes, there is nothing to fall
  // back on: an error naming it.
  TaskAlternatives broken{"add|2x3", "Add", {0}, {}};
  for (const char *symbol : {"add_crash", "add"}) broken.alternatives.push_back({DeployedSchedule{"", symbol, 1e-6}, {symbol}});
  auto failed = select_in_graph(dir.string(), {broken}, options);
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(failed.error().message, Catch::Contains("add_crash") && Catch::Contains("crashed"));
}

TEST_CASE("serial kernel calls stay only where they outweigh the slower parallel call after them", "[deploy]") {
  // Per-call medians (ms) with every kernel on the pool, and with calls 1 and 3 serial.
  const std::vector<bool> mix = {false, true, false, true, true, false};
  const std::vector<double> pool = {0.010, 0.020, 0.020, 0.006, 0.005, 0.012};
  SECTION("gains that the next call does not give back are kept") {
    const std::vector<double> in_mix = {0.010, 0.015, 0.021, 0.004, 0.004, 0.0125};
    CHECK(keep_serial_in_mix(mix, pool, in_mix) == mix);
  }
  SECTION("a call whose gain the parallel call after it loses goes back to the pool") {
    // Call 1 gains 0.005 and call 2 loses 0.014 after it: call 1 goes back.
    const std::vector<double> in_mix = {0.010, 0.015, 0.034, 0.004, 0.004, 0.0125};
    CHECK(keep_serial_in_mix(mix, pool, in_mix) == std::vector<bool>{false, false, false, true, true, false});
  }
  SECTION("a serial call before a serial one answers for its own time only") {
    // Call 3 gains 0.002 and its successor is serial too; call 4 gains 0.001 and call 5 loses 0.002.
    const std::vector<double> in_mix = {0.010, 0.015, 0.021, 0.004, 0.004, 0.014};
    CHECK(keep_serial_in_mix(mix, pool, in_mix) == std::vector<bool>{false, true, false, true, false, false});
  }
  SECTION("a call slower in the mix, or not timed, goes back") {
    const std::vector<double> in_mix = {0.010, 0.021, 0.020, 0.004};
    CHECK(keep_serial_in_mix(mix, pool, in_mix) == std::vector<bool>{false, false, false, true, false, false});
  }
}
