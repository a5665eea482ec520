// The Graphviz writer of `tessel inspect --dot`: clusters per fused group, labels, escaping.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "graph/fusion/fuse.h"
#include "graph/fusion/graph_dot.h"
#include "graph/infer/shape_inference.h"

using namespace tessel;

namespace {

/// x -> Conv -> Add(bias) -> Relu -> Reshape -> y, types inferred.
Graph conv_bias_relu_reshape(const std::string &conv_name = "conv") {
  Graph g;
  g.name = "dot_test";
  g.opset = 17;
  auto tensor = [&](const std::string &name, std::optional<Tensor> value = std::nullopt) {
    TensorType type = value ? value->type() : TensorType{};
    return g.add_tensor({name, type, std::move(value)});
  };
  const int x = tensor("x");
  g.tensors[x].type = {DType::Float32, {1, 3, 8, 8}};
  const int w = tensor("w", Tensor(DType::Float32, {4, 3, 3, 3}));
  const int bias = tensor("bias", Tensor(DType::Float32, {1, 4, 1, 1}));
  const int shape = tensor("shape", Tensor::from_int64s({1, -1}, {2}));
  const int c = tensor("c"), a = tensor("a"), r = tensor("r"), y = tensor("y");
  Attributes pads;
  pads.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  g.add_node({"Conv", conv_name, "", pads}, {x, w}, {c});
  g.add_node({"Add", "add", "", {}}, {c, bias}, {a});
  g.add_node({"Relu", "relu", "", {}}, {a}, {r});
  g.add_node({"Reshape", "flatten", "", {}}, {r, shape}, {y});
  g.inputs = {x};
  g.outputs = {y};
  auto inferred = infer_shapes(std::move(g));
  REQUIRE(inferred.ok());
  return std::move(inferred.value());
}

int count(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The text of cluster k: from its `subgraph` line to the line closing it.
std::string cluster(const std::string &dot, int k) {
  const size_t begin = dot.find("subgraph cluster_" + std::to_string(k) + " {");
  REQUIRE(begin != std::string::npos);
  return dot.substr(begin, dot.find("\n  }\n", begin) - begin);
}

}  // namespace

TEST_CASE("fused_graph_dot draws one cluster per fused group", "[dot]") {
  const Graph g = conv_bias_relu_reshape();
  const std::vector<FusedGroup> groups = partition_graph(g);
  REQUIRE(groups.size() == 2);  // Conv+Add+Relu, and the Reshape view alone
  const std::string dot = fused_graph_dot(g, groups);

  CHECK(dot.rfind("digraph \"dot_test\" {", 0) == 0);
  CHECK(dot.substr(dot.size() - 2) == "}\n");
  CHECK(count(dot, "subgraph cluster_") == 2);

  const std::string kernel = cluster(dot, 0);
  CHECK_THAT(kernel, Catch::Contains(workload_key(g, groups[0]) + " (OutElementwiseFusable)"));
  CHECK_THAT(kernel, Catch::Contains("n0 [label=\"Conv\\nconv\\n[1,4,8,8]\", penwidth=2]"));  // the anchor
  CHECK_THAT(kernel, Catch::Contains("n1 [label=\"Add\\nadd\\n[1,4,8,8]\"]"));
  CHECK_THAT(kernel, Catch::Contains("n2 [label=\"Relu\\nrelu\\n[1,4,8,8]\"]"));
  CHECK_THAT(kernel, !Catch::Contains("dashed"));

  const std::string host = cluster(dot, 1);
  CHECK_THAT(host, Catch::Contains("host: Opaque") && Catch::Contains("style=dashed"));
  CHECK_THAT(host, Catch::Contains("n3 [label=\"Reshape\\nflatten\\n[1,256]\", style=\"rounded,dashed\"]"));

  // Inputs and outputs as their own shapes; edges carry shapes; weights are not drawn.
  CHECK_THAT(dot, Catch::Contains("in0 [label=\"input\\nx\\nfloat32[1,3,8,8]\", shape=invhouse"));
  CHECK_THAT(dot, Catch::Contains("out0 [label=\"output\\ny\\nfloat32[1,256]\", shape=house"));
  CHECK_THAT(dot, Catch::Contains("in0 -> n0 [label=\"[1,3,8,8]\"]"));
  CHECK_THAT(dot, Catch::Contains("n0 -> n1 [label=\"[1,4,8,8]\"]"));
  CHECK_THAT(dot, Catch::Contains("n2 -> n3 [label=\"[1,4,8,8]\"]"));
  CHECK_THAT(dot, Catch::Contains("n3 -> out0 [label=\"[1,256]\"]"));
  CHECK(count(dot, " -> ") == 5);
  CHECK_THAT(dot, !Catch::Contains("\"w\"") && !Catch::Contains("\\nw\\n"));
}

TEST_CASE("fused_graph_dot escapes quotes and backslashes in names", "[dot]") {
  CHECK(dot_escape("plain") == "plain");
  CHECK(dot_escape("a\"b\\c") == "a\\\"b\\\\c");
  CHECK(dot_escape("two\nlines") == "two\\nlines");

  const Graph g = conv_bias_relu_reshape("conv \"1\" \\ x");
  const std::string dot = fused_graph_dot(g, partition_graph(g));
  CHECK_THAT(dot, Catch::Contains("label=\"Conv\\nconv \\\"1\\\" \\\\ x\\n[1,4,8,8]\""));
  // Every quote in the text is either escaped or one of the writer's own delimiters, which
  // pair up on every line.
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    int unescaped = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\\') ++i;
      else if (line[i] == '"') ++unescaped;
    }
    INFO(line);
    CHECK(unescaped % 2 == 0);
  }
}

TEST_CASE("fused_graph_dot output parses with Graphviz when it is installed", "[dot]") {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) {
    WARN("graphviz `dot` not installed; parse check skipped");
    return;
  }
  const Graph g = conv_bias_relu_reshape("conv \"quoted\" \\ name");
  char path[] = "/tmp/tessel_dot_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << fused_graph_dot(g, partition_graph(g));
  const int status = std::system(("dot -Tsvg " + std::string(path) + " -o /dev/null").c_str());
  std::remove(path);
  CHECK(status == 0);
}
