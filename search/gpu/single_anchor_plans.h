#pragma once
// The Func plans of a GPU sketch built around one output and its anchor (gpu_warp_tile,
// gpu_split_k): the pair gets the sketch's two rules, other Funcs are inlined or computed
// at root, and a task with another output is not the sketch's.
#include <optional>
#include <string>
#include <vector>

#include "compute/compute_desc.h"
#include "search/cpu/sketch.h"

namespace tessel {

inline std::optional<std::vector<FuncPlan>> single_anchor_plans(const ComputeDesc &compute, const std::string &out,
                                                                 const std::string &anchor, FuncRule out_rule,
                                                                 FuncRule anchor_rule) {
  std::vector<FuncPlan> plans;
  for (const FuncDesc &f : compute.funcs) {
    FuncPlan plan{f.name, FuncRule::Inline, ""};
    if (f.name == out) plan = FuncPlan{f.name, out_rule, anchor};
    else if (f.name == anchor) plan = FuncPlan{f.name, anchor_rule, out};
    else if (f.is_output) return std::nullopt;  // several outputs: left to gpu_tile
    else if (!f.inlinable) plan.rule = FuncRule::Root;
    plans.push_back(plan);
  }
  return plans;
}

}  // namespace tessel
