#pragma once
// The execution plan of an artifact (plan.txt, see ARTIFACT.md): the tensors a compiled model
// touches, where their bytes live, and the kernel calls and copies to run in order. Written
// by `tessel compile`, read by the deploy runtime.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/result.h"
#include "tensor/dtype.h"

namespace tessel::deploy {

/// Dynamic: a value whose shape is known only at run time (downstream of NonZero, say); a
/// host step produces it and the runtime holds it for the run.
enum class Location { Input, Output, Weight, Arena, View, Dynamic };

struct PlanTensor {
  int id = 0;
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // ONNX order, dense; -1 for a dimension known only at run time
  Location location = Location::Arena;
  int64_t argument = 0;  // input/output position, byte offset (weight, arena) or viewed tensor id
  bool rank_known = true;  // false: the rank too is known only at run time (shape empty)
};

struct KernelStep {
  std::string symbol;     // calls <symbol>_argv
  std::vector<int> args;  // tensor ids: inputs, then outputs
  bool serial = false;    // its parallel loops run on the calling thread only
};

struct CopyStep {
  int source = 0;
  int destination = 0;
};

/// A node computed by plain C++ on the host (host/host_op.h), from host.json's node list.
struct HostStep {
  int node = 0;               // index into host.json's nodes
  std::vector<int> inputs;    // tensor ids; -1 for an omitted input; the node's body captures last
  std::vector<int> outputs;   // tensor ids; -1 for an output nothing reads
};

/// Nothing runs: the parts were computed into their places inside `whole` (a Concat done in
/// place), which holds its value from here on.
struct JoinStep {
  int whole = 0;
  std::vector<int> parts;  // in order of their bytes, which tile whole's
};

using PlanStep = std::variant<KernelStep, CopyStep, HostStep, JoinStep>;

/// Whether the tensor's shape is known only at run time (then only host steps touch it).
bool run_time_shaped(const PlanTensor &t);

struct ExecutionPlan {
  std::vector<PlanTensor> tensors;
  std::vector<int> inputs;   // tensor id per graph input position
  std::vector<int> outputs;  // tensor id per graph output position
  std::vector<PlanStep> steps;
};

bool operator==(const PlanTensor &a, const PlanTensor &b);
bool operator==(const KernelStep &a, const KernelStep &b);
bool operator==(const CopyStep &a, const CopyStep &b);
bool operator==(const HostStep &a, const HostStep &b);
bool operator==(const JoinStep &a, const JoinStep &b);
bool operator==(const ExecutionPlan &a, const ExecutionPlan &b);

/// plan.txt text of `plan` (ARTIFACT.md's grammar).
std::string to_text(const ExecutionPlan &plan);

/// Parses and checks plan.txt: grammar, unique ids, every referenced id declared, input and
/// output positions complete and matching the tensors' locations, views acyclic with equal
/// dtype and element count, copies between equal sizes. Errors name the line.
Result<ExecutionPlan> parse_plan(const std::string &text);

/// Proves the plan's data flow, given how many of each kernel step's arguments it writes
/// (its last ones; `kernel_outputs[i]` for the i-th kernel step, from the kernel's own
/// metadata): every tensor a step reads holds bytes an input, weights.bin or an earlier step
/// put there, not overwritten since by a step writing overlapping arena bytes; every output
/// is written. A plan that drops or reorders a step fails here instead of running on stale
/// memory.
Result<void> check_data_flow(const ExecutionPlan &plan, const std::vector<int> &kernel_outputs);

/// Percent-encoding of names as ARTIFACT.md says, and its inverse (error on a bad escape).
std::string encode_plan_name(const std::string &name);
Result<std::string> decode_plan_name(const std::string &text);

/// The dtypes ARTIFACT.md allows (plan.txt and manifest.json), by name; nullopt otherwise.
std::optional<DType> parse_artifact_dtype(const std::string &name);
/// Element count times element size of a tensor of this dtype and shape; nullopt if a
/// dimension is negative or the product overflows int64.
std::optional<int64_t> artifact_tensor_bytes(DType dtype, const std::vector<int64_t> &shape);

}  // namespace tessel::deploy
