#include "tensor/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "tensor/input_limit.h"

namespace tessel {
namespace {

struct DescrEntry {
  const char *code;  // without the byte-order character
  DType dtype;
};
const DescrEntry kDescrs[] = {{"f2", DType::Float16}, {"f4", DType::Float32}, {"f8", DType::Float64},
                              {"i1", DType::Int8},    {"i2", DType::Int16},   {"i4", DType::Int32},
                              {"i8", DType::Int64},   {"u1", DType::UInt8},   {"u2", DType::UInt16},
                              {"u4", DType::UInt32},  {"u8", DType::UInt64},  {"b1", DType::Bool}};

/// The value text after `'key':` in the header dict.
std::string header_field(const std::string &header, const std::string &key) {
  auto pos = header.find("'" + key + "'");
  if (pos == std::string::npos) return "";
  pos = header.find(':', pos);
  if (pos == std::string::npos) return "";
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  if (header[pos] == '(') return header.substr(pos, header.find(')', pos) - pos + 1);
  if (header[pos] == '\'') return header.substr(pos + 1, header.find('\'', pos + 1) - pos - 1);
  auto end = header.find_first_of(",}", pos);
  return header.substr(pos, end - pos);
}

}  // namespace

/// The .npy in `in`; errors start with `path` (a file's name, or what the bytes are).
static Result<Tensor> read_npy_stream(std::istream &in, const std::string &path, int64_t max_bytes) {
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return make_error(ErrorKind::InvalidInput, path + ": not an .npy file (bad magic)");
  const int major = magic[6];
  uint32_t header_len = 0;
  if (major == 1) {
    uint8_t b[2];
    if (!in.read(reinterpret_cast<char *>(b), 2))
      return make_error(ErrorKind::InvalidInput, path + ": truncated header");
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    uint8_t b[4];
    if (!in.read(reinterpret_cast<char *>(b), 4))
      return make_error(ErrorKind::InvalidInput, path + ": truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    return make_error(ErrorKind::Unsupported, path + ": unsupported .npy version " + std::to_string(major));
  }
  if (header_len > (1u << 20)) return make_error(ErrorKind::InvalidInput, path + ": header too large");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) return make_error(ErrorKind::InvalidInput, path + ": truncated header");

  const std::string descr = header_field(header, "descr");
  if (descr.size() < 3) return make_error(ErrorKind::InvalidInput, path + ": header has no dtype ('descr')");
  if (descr[0] == '>') return make_error(ErrorKind::Unsupported, path + ": big-endian arrays are not supported");
  DType dtype = DType::Undefined;
  for (const DescrEntry &e : kDescrs)
    if (descr.substr(1) == e.code) dtype = e.dtype;
  if (dtype == DType::Undefined)
    return make_error(ErrorKind::Unsupported, path + ": unsupported dtype '" + descr + "'");
  if (header_field(header, "fortran_order") == "True")
    return make_error(ErrorKind::Unsupported,
                      path + ": Fortran-order arrays are not supported; save with np.ascontiguousarray");
  const std::string shape_text = header_field(header, "shape");
  if (shape_text.empty() || shape_text[0] != '(')
    return make_error(ErrorKind::InvalidInput, path + ": header has no shape");
  Shape shape;
  std::stringstream ss(shape_text.substr(1, shape_text.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    try {
      shape.push_back(std::stoll(item));
    } catch (...) {
      return make_error(ErrorKind::InvalidInput, path + ": bad shape " + shape_text);
    }
  }
  // Checked before allocating: a header may claim any shape (2^62 elements wrapped to 0
  // bytes and "read" an empty file; a huge one exhausted memory before the file ran out).
  const Result<int64_t> bytes = checked_tensor_bytes(dtype, shape);
  if (!bytes.ok()) return make_error(ErrorKind::InvalidInput, path + ": " + bytes.error().message);
  const std::streampos data_start = in.tellg();
  in.seekg(0, std::ios::end);
  const int64_t available = static_cast<int64_t>(in.tellg() - data_start);
  in.seekg(data_start);
  if (bytes.value() > available)
    return make_error(ErrorKind::InvalidInput, path + ": file is truncated (expected " + std::to_string(bytes.value()) +
                                                   " data bytes for shape " + shape_to_string(shape) + ", found " +
                                                   std::to_string(available) + ")");
  if (auto within = check_input_bytes(path, dtype, shape, max_bytes); !within.ok()) return within.error();
  Tensor t(dtype, shape);
  if (t.bytes() && !in.read(static_cast<char *>(t.data()), static_cast<std::streamsize>(t.bytes())))
    return make_error(ErrorKind::InvalidInput,
                      path + ": file is truncated (expected " + std::to_string(t.bytes()) + " data bytes for " +
                      t.type().to_string() + ")");
  return t;
}

Result<std::pair<std::string, Tensor>> read_input_spec(const std::string &spec, int64_t max_bytes) {
  const auto eq = spec.find('=');
  std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
  TESSEL_TRY(Tensor tensor, read_npy(eq == std::string::npos ? spec : spec.substr(eq + 1), max_bytes));
  return std::make_pair(std::move(name), std::move(tensor));
}

Result<Tensor> read_npy(const std::string &path, int64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorKind::NotFound, path + ": cannot open file");
  return read_npy_stream(in, path, max_bytes);
}

Result<Tensor> parse_npy(const std::string &bytes, const std::string &name) {
  std::istringstream in(bytes, std::ios::binary);
  return read_npy_stream(in, name, std::numeric_limits<int64_t>::max());
}

Result<void> write_npy(const std::string &path, const Tensor &tensor) {
  const char *code = nullptr;
  for (const DescrEntry &e : kDescrs)
    if (e.dtype == tensor.dtype()) code = e.code;
  if (!code) return make_error(ErrorKind::Unsupported, path + ": cannot write dtype " + dtype_name(tensor.dtype()));
  std::string shape = "(";
  for (int64_t d : tensor.shape()) shape += std::to_string(d) + ", ";
  if (tensor.rank() > 1) shape.resize(shape.size() - 2);
  else if (tensor.rank() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  const char order = (tensor.dtype() == DType::Bool || dtype_size(tensor.dtype()) == 1) ? '|' : '<';
  std::string header = "{'descr': '" + std::string(1, order) + code + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so magic + length + header is a multiple of 64, ending in a newline.
  const size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return make_error(ErrorKind::Io, path + ": cannot write file");
    out.write("\x93NUMPY\x01\x00", 8);
    const uint16_t len = static_cast<uint16_t>(header.size());
    const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
    out.write(len_bytes, 2);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(static_cast<const char *>(tensor.data()), static_cast<std::streamsize>(tensor.bytes()));
    if (!out) return make_error(ErrorKind::Io, path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return make_error(ErrorKind::Io, path + ": cannot move file into place");
  return {};
}

}  // namespace tessel
