#include "compiler/plan_builder.h"

// GCC 12 at -O3 warns that a std::variant<KernelStep, CopyStep, HostStep, JoinStep> moved while the
// steps vector grows "may use" the strings and vectors of alternatives it does not hold: a
// known false positive of its variant analysis.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tessel {

using deploy::Location;

namespace {
constexpr int64_t kAlignment = 64;
int64_t aligned(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }
}  // namespace

PlanBuilder::PlanBuilder(const Graph &g, const MemoryPlan &memory)
    : g_(g), memory_(memory), arena_end_(memory.arena_bytes), next_id_(static_cast<int>(g.tensors.size())) {
  for (size_t p = 0; p < g.inputs.size(); ++p) input_position_.emplace(g.inputs[p], static_cast<int>(p));
  for (size_t p = 0; p < g.outputs.size(); ++p) output_position_.emplace(g.outputs[p], static_cast<int>(p));
}

int PlanBuilder::tensor(int t) {
  if (auto it = declared_.find(t); it != declared_.end()) return it->second;
  const TensorInfo &info = g_.tensors[t];
  deploy::PlanTensor pt;
  pt.id = t;
  pt.name = info.name;
  pt.dtype = info.type.dtype;
  pt.shape = info.type.shape;
  if (!info.type.fully_known()) {
    // Known only at run time: a value of the run that host steps make and read.
    pt.shape = info.type.shape;
    pt.rank_known = info.type.rank_known;
    auto out = output_position_.find(t);
    pt.location = out != output_position_.end() ? Location::Output : Location::Dynamic;
    pt.argument = out != output_position_.end() ? out->second : 0;
  } else if (auto in = input_position_.find(t); in != input_position_.end()) {
    pt.location = Location::Input;
    pt.argument = in->second;
  } else if (info.constant && g_.tensor_producer[t] < 0) {
    pt.location = Location::Weight;
    pt.argument = add_weight(*info.constant);
  } else if (auto out = output_position_.find(t); out != output_position_.end()) {
    pt.location = Location::Output;
    pt.argument = out->second;
  } else if (auto view = view_source_.find(t); view != view_source_.end()) {
    pt.location = Location::View;
    pt.argument = tensor(view->second);
  } else if (memory_.arena_offset[t] != MemoryPlan::kNotInArena) {
    pt.location = Location::Arena;
    pt.argument = memory_.arena_offset[t];
  } else {
    // Not planned (a value inside a group that runs node by node): a slot of its own.
    pt.location = Location::Arena;
    pt.argument = arena_end_;
    arena_end_ += aligned(static_cast<int64_t>(shape_numel(pt.shape) * dtype_size(pt.dtype)));
  }
  declared_.emplace(t, t);
  plan_.tensors.push_back(pt);
  return t;
}

void PlanBuilder::kernel(const std::string &symbol, const std::vector<int> &graph_tensors) {
  deploy::KernelStep step{symbol, {}};
  for (int t : graph_tensors) step.args.push_back(tensor(t));
  plan_.steps.push_back(step);
}

void PlanBuilder::copy(int source, int destination) {
  plan_.steps.push_back(deploy::CopyStep{tensor(source), tensor(destination)});
}

void PlanBuilder::join(int whole, const std::vector<int> &parts) {
  deploy::JoinStep step{tensor(whole), {}};
  for (int t : parts) step.parts.push_back(tensor(t));
  plan_.steps.push_back(std::move(step));
}

void PlanBuilder::host(int node, const std::vector<int> &plan_inputs, const std::vector<int> &plan_outputs) {
  deploy::HostStep step;
  step.node = node;
  step.inputs = plan_inputs;
  step.outputs = plan_outputs;
  plan_.steps.push_back(step);
}

int PlanBuilder::extra_weight(const std::string &name, const Tensor &value) {
  deploy::PlanTensor pt;
  pt.id = next_id_++;
  pt.name = name;
  pt.dtype = value.dtype();
  pt.shape = value.shape();
  pt.location = Location::Weight;
  pt.argument = add_weight(value);
  plan_.tensors.push_back(pt);
  return pt.id;
}

deploy::ExecutionPlan PlanBuilder::finish() {
  for (int t : g_.inputs) plan_.inputs.push_back(tensor(t));
  int next_id = next_id_;
  for (size_t p = 0; p < g_.outputs.size(); ++p) {
    const int t = g_.outputs[p];
    const int id = tensor(t);
    const deploy::PlanTensor &declared = *find(id);
    if (declared.location == Location::Output && declared.argument == static_cast<int64_t>(p)) {
      plan_.outputs.push_back(id);
      continue;
    }
    // An input, a weight, or a second position of one tensor: a buffer of its own.
    deploy::PlanTensor out = declared;
    out.id = next_id++;
    out.location = Location::Output;
    out.argument = static_cast<int64_t>(p);
    plan_.tensors.push_back(out);
    plan_.steps.push_back(deploy::CopyStep{id, out.id});
    plan_.outputs.push_back(out.id);
  }
  return plan_;
}

const deploy::PlanTensor *PlanBuilder::find(int id) const {
  for (const deploy::PlanTensor &t : plan_.tensors)
    if (t.id == id) return &t;
  return nullptr;
}

int64_t PlanBuilder::add_weight(const Tensor &value) {
  const int64_t offset = static_cast<int64_t>(weights_.size());
  weights_.append(static_cast<const char *>(value.data()), value.bytes());
  weights_.resize(static_cast<size_t>(aligned(static_cast<int64_t>(weights_.size()))), '\0');
  return offset;
}

}  // namespace tessel
