#include <catch2/catch.hpp>

#include "executor/kernel_cache.h"
#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

TEST_CASE("nodes differing only in requested outputs do not share a kernel", "[kernel_cache]") {
  Attributes attrs;
  attrs.set("kernel_shape", std::vector<int64_t>{2});
  const TensorType x{DType::Float32, {1, 1, 4}};
  const Tensor input = float_tensor({1, 1, 4}, {1, 5, 3, 2});
  // Values only first, then values and indices: the second must not reuse the first kernel.
  auto values_only = run_graph(single_node_graph("MaxPool", {x}, 1, attrs), {input});
  auto with_indices = run_graph(single_node_graph("MaxPool", {x}, 2, attrs), {input});
  REQUIRE(values_only.size() == 1);
  REQUIRE(with_indices.size() == 2);
  CHECK(with_indices[0].data_as<float>()[0] == 5);
  CHECK(with_indices[1].data_as<int64_t>()[0] == 1);
  CHECK(with_indices[1].data_as<int64_t>()[1] == 1);
  CHECK(with_indices[1].data_as<int64_t>()[2] == 2);
}
