#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "graph/infer/shape_inference.h"
#include "graph/onnx/onnx_import.h"
#include "onnx/onnx_pb.h"

using namespace tessel;

namespace {

const std::string kNodeTests = "/usr/share/libonnx-testdata/data/node/";

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A one-input model whose nodes are given as (op_type, name) and chained x -> y0 -> y1 ...
std::string chain_model(const std::vector<std::pair<std::string, std::string>> &ops) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto *g = model.mutable_graph();
  g->set_name("chain");
  auto *in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  std::string prev = "x";
  for (size_t i = 0; i < ops.size(); ++i) {
    auto *node = g->add_node();
    node->set_op_type(ops[i].first);
    node->set_name(ops[i].second);
    node->add_input(prev);
    prev = "y" + std::to_string(i);
    node->add_output(prev);
  }
  auto *out = g->add_output();
  out->set_name(prev);
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  out->mutable_type()->mutable_tensor_type()->mutable_shape();  // the checker wants one, even empty
  return model.SerializeAsString();
}

}  // namespace

TEST_CASE("a conformance model imports with its initializers, inputs and opset", "[import]") {
  auto g = import_onnx_file(kNodeTests + "test_conv_with_strides_padding/model.onnx");
  REQUIRE(g.ok());
  REQUIRE(g->nodes.size() == 1);
  CHECK(g->nodes[0].op_type == "Conv");
  CHECK(g->nodes[0].attributes.get_ints("strides") == std::vector<int64_t>{2, 2});
  CHECK(g->opset > 0);
  REQUIRE(g->inputs.size() == 2);
  CHECK(g->tensors[g->inputs[0]].type.shape == Shape{1, 1, 7, 5});
}

TEST_CASE("nested If bodies are imported as subgraphs", "[import]") {
  auto g = import_onnx_file(kNodeTests + "test_if/model.onnx");
  REQUIRE(g.ok());
  auto then_branch = g->nodes.at(0).attributes.get_graph("then_branch");
  REQUIRE(then_branch);
  CHECK(then_branch->outputs.size() == 1);
}

TEST_CASE("a missing file is an error naming the file", "[import][error]") {
  auto g = import_onnx_file("/nonexistent/model.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().message, Catch::Contains("/nonexistent/model.onnx") && Catch::Contains("cannot open"));
}

TEST_CASE("a truncated model is rejected, not crashed on", "[import][error]") {
  const std::string bytes = read_file(kNodeTests + "test_conv_with_strides_padding/model.onnx");
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t(7)}) {
    auto g = import_onnx_bytes(bytes.substr(0, cut), ".");
    CHECK_FALSE(g.ok());
  }
}

TEST_CASE("garbage bytes are rejected as not an ONNX model", "[import][error]") {
  // (the whole literal, its NUL included: ASan caught a length past its end here)
  static const char garbage[] = "\x12\x34garbage that is not a protobuf\xff\xff\xff";
  auto g = import_onnx_bytes(std::string(garbage, sizeof garbage), ".");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().message, Catch::Contains("ONNX"));
  auto empty = import_onnx_bytes("", ".");
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(empty.error().message, Catch::Contains("empty"));
}

TEST_CASE("a model the ONNX checker rejects gives the checker's reason", "[import][error]") {
  onnx::ModelProto model;
  model.ParseFromString(chain_model({{"Relu", "r"}}));
  model.mutable_graph()->mutable_node(0)->set_input(0, "undefined_tensor");
  auto g = import_onnx_bytes(model.SerializeAsString(), ".");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().message, Catch::Contains("checker"));
}

TEST_CASE("a tensor declaring gigabytes but holding one value is rejected before allocating", "[import][error]") {
  // A fuzzer find: a Constant whose value declares 3221225485 floats (12.9 GB) and holds
  // one. The child's address space is capped at 1 GiB above what it maps already, so an
  // allocation of the declared size before the count check fails instead of erroring.
  onnx::ModelProto model;
  model.ParseFromString(chain_model({{"Relu", "r"}}));
  auto *constant = model.mutable_graph()->add_node();
  constant->set_op_type("Constant");
  constant->set_name("huge");
  constant->add_output("c");
  auto *attr = constant->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  attr->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  attr->mutable_t()->add_dims(3221225485);
  attr->mutable_t()->add_float_data(1.0f);
  const std::string bytes = model.SerializeAsString();
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    long mapped_pages = 0;
    std::ifstream("/proc/self/statm") >> mapped_pages;
    const rlim_t cap = static_cast<rlim_t>(mapped_pages) * ::sysconf(_SC_PAGESIZE) + (rlim_t{1} << 30);
    const rlimit limit{cap, cap};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(2);
    auto g = import_onnx_bytes(bytes, ".", /*run_checker=*/false);
    ::_exit(!g.ok() && g.error().message.find("has 1 values, expected 3221225485") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

TEST_CASE("every unsupported op is listed with its nodes at once", "[import][error]") {
  // Ops tessel has no rule for and ONNX defines no function body of.
  auto g = import_onnx_bytes(
      chain_model({{"Relu", "ok"}, {"StringNormalizer", "sn1"}, {"RandomNormalLike", "r1"}, {"StringNormalizer", "sn2"}}), ".",
      /*run_checker=*/false);
  REQUIRE(g.ok());
  auto supported = check_supported_ops(g.value());
  REQUIRE_FALSE(supported.ok());
  const std::string &m = supported.error().message;
  CHECK_THAT(m, Catch::Contains("StringNormalizer (sn1, sn2)"));
  CHECK_THAT(m, Catch::Contains("RandomNormalLike (r1)"));
  CHECK_THAT(m, !Catch::Contains("Relu"));
}

TEST_CASE("static inference fills every tensor type of a chain", "[inference]") {
  auto g = import_onnx_bytes(chain_model({{"Relu", "a"}, {"Sigmoid", "b"}}), ".");
  INFO((g.ok() ? std::string() : g.error().message));
  REQUIRE(g.ok());
  auto inferred = infer_shapes(g.value());
  REQUIRE(inferred.ok());
  for (const TensorInfo &t : inferred->tensors) CHECK(t.type.to_string() == "float32[4]");
}

TEST_CASE("inference reports broadcast mismatches naming the node", "[inference][error]") {
  Node add{"Add", "bad_add", "", {}};
  auto out = infer_node_types(add, 17, {{DType::Float32, {2, 3}}, {DType::Float32, {4}}}, {nullptr, nullptr}, 1);
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(out.error().message, Catch::Contains("bad_add") && Catch::Contains("[2,3]") && Catch::Contains("[4]"));
}
