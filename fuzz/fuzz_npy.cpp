// .npy bytes, as `tessel run --input` reads them: any bytes give a tensor or an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tensor/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const tessel::Result<tessel::Tensor> tensor = tessel::parse_npy(std::string(reinterpret_cast<const char *>(data), size));
  // A tensor that came back must be as large as its shape says.
  if (tensor.ok() && tensor->bytes() > size) __builtin_trap();
  return 0;
}
