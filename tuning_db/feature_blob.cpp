#include "tuning_db/feature_blob.h"

#include <cstring>

namespace tessel {

std::vector<uint8_t> encode_features(const std::vector<float> &features) {
  std::vector<uint8_t> bytes(features.size() * 4);
  for (size_t i = 0; i < features.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &features[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<uint8_t>(bits >> (8 * b));
  }
  return bytes;
}

Result<std::vector<float>> decode_features(const std::vector<uint8_t> &bytes) {
  if (bytes.size() % 4 != 0)
    return make_error(ErrorKind::InvalidInput, "features blob of " + std::to_string(bytes.size()) + " bytes");
  std::vector<float> features(bytes.size() / 4);
  for (size_t i = 0; i < features.size(); ++i) {
    uint32_t bits = 0;
    for (int b = 0; b < 4; ++b) bits |= static_cast<uint32_t>(bytes[i * 4 + b]) << (8 * b);
    std::memcpy(&features[i], &bits, 4);
  }
  return features;
}

}  // namespace tessel
