// Host ops whose output length the values decide (host/host_detection_ops.cpp), on the
// cases the ONNX conformance data leaves out.
#include <catch2/catch.hpp>

#include <limits>

#include "tests/support/op_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {
Tensor floats(Shape shape, std::vector<float> values) {
  Tensor t(DType::Float32, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}
}  // namespace

TEST_CASE("NonMaxSuppression reads INT64_MAX boxes per class as no limit", "[host_ops]") {
  // Two overlapping boxes and one apart; detectors' exports pass INT64_MAX as the limit.
  const Tensor boxes = floats({1, 3, 4}, {0, 0, 1, 1, 0, 0.05f, 1, 1.05f, 0, 2, 1, 3});
  const Tensor scores = floats({1, 1, 3}, {0.9f, 0.8f, 0.7f});
  Tensor limit(DType::Int64, {1});
  limit.data_as<int64_t>()[0] = std::numeric_limits<int64_t>::max();
  const Tensor iou = Tensor::scalar(DType::Float32, 0.5f);
  const std::vector<Tensor> out = run_on_inputs("NonMaxSuppression", {boxes, scores, limit, iou});
  CHECK(out[0].shape() == Shape{2, 3});
  CHECK(out[0].to_int64_vector() == std::vector<int64_t>{0, 0, 0, 0, 0, 2});
}

TEST_CASE("NonZero and Compress give empty outputs when nothing is selected", "[host_ops]") {
  const Tensor zeros(DType::Float32, {2, 3});
  CHECK(run_on_inputs("NonZero", {zeros})[0].shape() == Shape{2, 0});
  Tensor none(DType::Bool, {2});
  CHECK(run_on_inputs("Compress", {zeros, none}, make_attributes({{"axis", int64_t{0}}}))[0].shape() == Shape{0, 3});
}
