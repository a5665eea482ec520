#pragma once
// What the CPU and GPU schedule writers (cpu/sketch_schedule.cpp, gpu/gpu_sketch_schedule.cpp)
// share: walking a sketch's Func plans in order, looking up Funcs and chosen values,
// appending steps, and turning a choice the sketch cannot use into an Error that names the
// sketch.
#include <string>

#include "base/result.h"
#include "compute/compute_desc.h"
#include "schedule/schedule_ir.h"
#include "search/cpu/sketch.h"
#include "search/cpu/sketch_schedule.h"
#include "search/loop_names.h"

namespace tessel {

/// Thrown while writing; write() returns it as an Error.
struct SketchRejected {
  std::string message;
};
[[noreturn]] void reject_choice(const std::string &message);

/// The value chosen for parameter `name`, or `fallback` when there is none.
int64_t choice_or(const SketchChoices &choices, const std::string &name, int64_t fallback);

/// Appends the fuse steps that make `loops` (innermost first, adjacent in the stage's order)
/// one loop, named from `base` by `names`; returns its name (the only loop, unfused, when
/// there is one).
std::string fuse_loops(std::vector<ScheduleStep> &steps, const StageRef &stage, const std::vector<std::string> &loops,
                       LoopNames &names, const std::string &base);

class SketchWriter {
 public:
  SketchWriter(const ComputeDesc &compute, const Sketch &sketch, const SketchChoices &choices);
  virtual ~SketchWriter() = default;

  /// Every Func's steps in the sketch's order, or the first rejected choice, as
  /// "sketch NAME: why".
  Result<Schedule> write();

 protected:
  /// The steps of one Func's rule (reject_choice when the choices do not fit).
  virtual void write_rule(const FuncPlan &plan, const FuncDesc &func) = 0;

  /// The Func named by a plan (its partner), which the compute must have.
  const FuncDesc &need(const std::string &name) const;
  int64_t value(const std::string &name, int64_t fallback) const { return choice_or(choices_, name, fallback); }
  void step(ScheduleStep s) { schedule_.steps.push_back(std::move(s)); }

  const ComputeDesc &compute_;
  const Sketch &sketch_;
  SketchChoices choices_;
  Schedule schedule_;
};

}  // namespace tessel
