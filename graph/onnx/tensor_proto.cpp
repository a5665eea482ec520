#include "graph/onnx/tensor_proto.h"

#include <charconv>
#include <cstring>
#include <optional>
#include <fstream>
#include <sstream>

#include "base/path_inside.h"
#include "onnx/onnx_pb.h"

namespace tessel {

/// memcpy that accepts the null pointer an empty repeated field or string gives.
static void copy_bytes(void *to, const void *from, size_t bytes) {
  if (bytes) std::memcpy(to, from, bytes);
}


/// A non-negative decimal external-data field, or nothing.
static std::optional<int64_t> parse_size_field(const std::string &text) {
  int64_t value = 0;
  const char *end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || at != end || value < 0) return std::nullopt;
  return value;
}

static Result<std::string> read_external_data(const onnx::TensorProto &proto,
                                              const std::string &base_dir, size_t expected) {
  const std::string label = "tensor '" + proto.name() + "'";
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
      continue;
    }
    if (entry.key() != "offset" && entry.key() != "length") continue;
    const auto value = parse_size_field(entry.value());
    if (!value)
      return make_error(ErrorKind::InvalidInput, label + ": external data " + entry.key() + " '" + entry.value() +
                                                 "' is not a non-negative integer");
    (entry.key() == "offset" ? offset : length) = *value;
  }
  // Nothing outside the model's folder is read, through a symbolic link neither; the file
  // checked is the file read (open_inside).
  const std::string folder = base_dir.empty() ? "." : base_dir;
  Result<OwnedFd> file = open_inside(folder, location, label + ": external data file");
  if (!file.ok()) return file.error();
  const std::string shown = folder + "/" + location;
  if (length < 0) length = static_cast<int64_t>(expected);
  if (static_cast<uint64_t>(length) != expected)
    return make_error(ErrorKind::InvalidInput,
                      label + ": external data length " + std::to_string(length) + " does not match the " +
                      std::to_string(expected) + " bytes of its type and shape");
  Result<int64_t> size = file_size(file.value(), shown);
  if (!size.ok()) return size.error();
  if (offset > size.value() || length > size.value() - offset)
    return make_error(ErrorKind::InvalidInput,
                      label + ": external data file " + shown + " is shorter than offset+length");
  std::string bytes(static_cast<size_t>(length), '\0');
  if (Result<void> r = read_exactly_at(file.value(), offset, bytes.data(), bytes.size(), shown); !r.ok())
    return make_error(r.error().kind, label + ": external data file " + r.error().message);
  return bytes;
}

Result<Tensor> tensor_from_proto(const onnx::TensorProto &proto, const std::string &base_dir) {
  const DType dtype = dtype_from_onnx(proto.data_type());
  const std::string label = "tensor '" + proto.name() + "'";
  if (!dtype_is_supported(dtype))
    return make_error(ErrorKind::Unsupported, label + " has unsupported data type " + dtype_name(dtype) + " (code " +
                                              std::to_string(proto.data_type()) + ")");
  if (proto.has_segment()) return make_error(ErrorKind::Unsupported, label + ": segmented tensors are not supported");
  Shape shape(proto.dims().begin(), proto.dims().end());
  for (int64_t d : shape)
    if (d < 0) return make_error(ErrorKind::InvalidInput, label + " has a negative dimension");
  // The declared size is checked against the data the file holds before any allocation: a
  // few bytes of dims must not allocate gigabytes only to be rejected (a fuzzer find).
  Result<int64_t> checked_bytes = checked_tensor_bytes(dtype, shape);
  if (!checked_bytes.ok()) return make_error(ErrorKind::InvalidInput, label + ": " + checked_bytes.error().message);
  const int64_t n = shape_numel(shape);
  const size_t bytes = static_cast<size_t>(checked_bytes.value());

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    auto data = read_external_data(proto, base_dir, bytes);
    if (!data.ok()) return data.error();
    if (data->size() != bytes)
      return make_error(ErrorKind::InvalidInput, label + ": external data holds " + std::to_string(data->size()) +
                                                 " bytes, expected " + std::to_string(bytes));
    Tensor tensor(dtype, shape);
    copy_bytes(tensor.data(), data->data(), bytes);
    return tensor;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes)
      return make_error(ErrorKind::InvalidInput, label + ": raw_data holds " + std::to_string(proto.raw_data().size()) +
                                                 " bytes, expected " + std::to_string(bytes) + " for " +
                                                 TensorType{dtype, shape}.to_string());
    Tensor tensor(dtype, shape);
    copy_bytes(tensor.data(), proto.raw_data().data(), bytes);
    return tensor;
  }
  auto count_error = [&](int64_t got) {
    return make_error(ErrorKind::InvalidInput, label + " has " + std::to_string(got) + " values, expected " +
                                               std::to_string(n) + " for shape " + shape_to_string(shape));
  };
  int64_t values = 0;
  switch (dtype) {
    case DType::Float32: values = proto.float_data_size(); break;
    case DType::Float64: values = proto.double_data_size(); break;
    case DType::Int64: values = proto.int64_data_size(); break;
    case DType::UInt32:
    case DType::UInt64: values = proto.uint64_data_size(); break;
    default: values = proto.int32_data_size(); break;  // float16/bfloat16 bit patterns, small ints, bool
  }
  if (values != n) return count_error(values);
  Tensor tensor(dtype, shape);
  switch (dtype) {
    case DType::Float32:
      copy_bytes(tensor.data(), proto.float_data().data(), bytes);
      break;
    case DType::Float64:
      copy_bytes(tensor.data(), proto.double_data().data(), bytes);
      break;
    case DType::Int64:
      copy_bytes(tensor.data(), proto.int64_data().data(), bytes);
      break;
    case DType::UInt32:
    case DType::UInt64:
      for (int64_t i = 0; i < n; ++i) {
        if (dtype == DType::UInt32) tensor.data_as<uint32_t>()[i] = static_cast<uint32_t>(proto.uint64_data(i));
        else tensor.data_as<uint64_t>()[i] = proto.uint64_data(i);
      }
      break;
    case DType::Float16:
    case DType::BFloat16:
      // Stored as the raw 16-bit patterns in int32_data.
      for (int64_t i = 0; i < n; ++i)
        tensor.data_as<uint16_t>()[i] = static_cast<uint16_t>(proto.int32_data(i));
      break;
    default:  // int8/16/32, uint8/16, bool live in int32_data
      for (int64_t i = 0; i < n; ++i) tensor.set_element_from_double(i, proto.int32_data(i));
      break;
  }
  return tensor;
}

Result<Tensor> read_tensor_pb_file(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return make_error(ErrorKind::NotFound, "cannot open " + path);
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string bytes = buffer.str();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes))
    return make_error(ErrorKind::InvalidInput, path + ": not a valid TensorProto file");
  auto slash = path.find_last_of('/');
  auto t = tensor_from_proto(proto, slash == std::string::npos ? "" : path.substr(0, slash));
  if (!t.ok()) return make_error(t.error().kind, path + ": " + t.error().message);
  return t;
}

}  // namespace tessel
