#include "tensor/input_limit.h"

#include <unistd.h>

namespace tessel {

int64_t default_max_input_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{1} << 30;
  return static_cast<int64_t>(pages) / 4 * static_cast<int64_t>(page_size);
}

Result<void> check_input_bytes(const std::string &what, DType dtype, const Shape &shape, int64_t max_bytes) {
  const Result<int64_t> bytes = checked_tensor_bytes(dtype, shape);
  if (!bytes.ok()) return make_error(ErrorKind::InvalidInput, what + ": " + bytes.error().message);
  if (bytes.value() > max_bytes)
    return make_error(ErrorKind::InvalidInput, what + ": " + dtype_name(dtype) + shape_to_string(shape) + " takes " +
                                                   std::to_string(bytes.value()) + " bytes, more than the limit of " +
                                                   std::to_string(max_bytes) + " (--max-input-bytes)");
  return {};
}

}  // namespace tessel
