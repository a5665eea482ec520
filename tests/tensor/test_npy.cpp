#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "tensor/npy.h"

using namespace tessel;

TEST_CASE("npy files round-trip every supported dtype and rank", "[npy]") {
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::Int8, DType::Int64, DType::UInt8, DType::Bool}) {
    for (Shape shape : {Shape{}, Shape{5}, Shape{2, 3, 4}}) {
      Tensor t(dtype, shape);
      for (int64_t i = 0; i < t.numel(); ++i) t.set_element_from_double(i, (i % 3) + (dtype == DType::Bool ? 0 : 1));
      const std::string path = "/tmp/tessel_test_roundtrip.npy";
      REQUIRE(write_npy(path, t).ok());
      auto back = read_npy(path);
      REQUIRE(back.ok());
      CHECK(back->type() == t.type());
      for (int64_t i = 0; i < t.numel(); ++i) CHECK(back->element_as_double(i) == t.element_as_double(i));
    }
  }
}

TEST_CASE("bad npy files are one-line errors naming the file", "[npy][error]") {
  const std::string path = "/tmp/tessel_test_bad.npy";
  {
    std::ofstream out(path, std::ios::binary);
    out << "not numpy at all";
  }
  auto bad = read_npy(path);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains(path) && Catch::Contains("magic"));

  Tensor t(DType::Float32, {4, 4});
  REQUIRE(write_npy(path, t).ok());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes.substr(0, bytes.size() - 10);
  }
  auto truncated = read_npy(path);
  REQUIRE_FALSE(truncated.ok());
  CHECK_THAT(truncated.error().message, Catch::Contains("truncated"));
  CHECK_FALSE(read_npy("/nonexistent.npy").ok());
}
