#pragma once
// The cost model's feature vectors as stored in the database (records, queue): float32
// little-endian whatever the host, so a database file or server can move between machines.
#include <cstdint>
#include <vector>

#include "base/result.h"

namespace tessel {

std::vector<uint8_t> encode_features(const std::vector<float> &features);
/// An error when the blob is not a whole number of float32 values.
Result<std::vector<float>> decode_features(const std::vector<uint8_t> &bytes);

}  // namespace tessel
