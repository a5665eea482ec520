#include "search/sketch_writer.h"

namespace tessel {

void reject_choice(const std::string &message) { throw SketchRejected{message}; }

std::string fuse_loops(std::vector<ScheduleStep> &steps, const StageRef &stage, const std::vector<std::string> &loops,
                       LoopNames &names, const std::string &base) {
  std::string fused = loops.front();
  for (size_t i = 1; i < loops.size(); ++i) {
    const std::string next = names.fresh(base);
    steps.push_back(FuseStep{stage, fused, loops[i], next});
    fused = next;
  }
  return fused;
}

int64_t choice_or(const SketchChoices &choices, const std::string &name, int64_t fallback) {
  auto it = choices.find(name);
  return it == choices.end() ? fallback : it->second;
}

SketchWriter::SketchWriter(const ComputeDesc &compute, const Sketch &sketch, const SketchChoices &choices)
    : compute_(compute), sketch_(sketch), choices_(choices) {}

Result<Schedule> SketchWriter::write() {
  try {
    schedule_ = Schedule{};
    for (const FuncPlan &plan : sketch_.funcs) write_rule(plan, need(plan.func));
    return schedule_;
  } catch (const SketchRejected &e) {
    return make_error(ErrorKind::InvalidInput, "sketch " + sketch_.name + ": " + e.message);
  }
}

const FuncDesc &SketchWriter::need(const std::string &name) const {
  const FuncDesc *f = compute_.find(name);
  if (!f) reject_choice("sketch names func '" + name + "', which the compute does not have");
  return *f;
}

}  // namespace tessel
