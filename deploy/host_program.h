#pragma once
// host.json: the nodes an artifact's host steps compute (ARTIFACT.md). They run by plain C++
// (host/host_op.h) where shapes are known only at run time: a detector's post-processing
// after NonZero and TopK, If branches. Each node keeps its attributes, the bodies of If
// included, exactly as the compiler's graph had them.
#include <string>
#include <vector>

#include "base/result.h"
#include "graph/ir/graph.h"

namespace tessel::deploy {

struct HostNode {
  Node node;
  /// Names of enclosing values its bodies read: the host step passes them after the node's
  /// own inputs, in this order.
  std::vector<std::string> captures;
};

struct HostProgram {
  int64_t opset = 0;  // the model's default-domain opset: the ops' semantics depend on it
  std::vector<HostNode> nodes;
};

/// JSON text of the program: attributes typed, floats by their bit patterns and tensors by
/// their bytes in hex, so the runtime gets exactly the compiler's values.
std::string to_json(const HostProgram &program);

/// Parses host.json; any malformed field is an error naming it.
Result<HostProgram> parse_host_program(const std::string &json);

}  // namespace tessel::deploy
