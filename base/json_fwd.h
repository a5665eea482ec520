#pragma once
// The name of tessel's JSON value without nlohmann's full header (some 25,000 lines), for
// headers that only pass one along. Code that builds or reads a Json includes base/json.h.
#include <nlohmann/json_fwd.hpp>

namespace tessel {

/// A JSON value whose objects keep their keys in insertion order, so what tessel writes
/// (manifests, log lines, --json output) is deterministic and reads in the order it was built.
using Json = nlohmann::ordered_json;

}  // namespace tessel
