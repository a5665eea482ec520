#pragma once
// The pretrained cost model that ships with tessel (models/cost_model/, made by
// scripts/pretrain_cost_model.py): where it is for a target, if there is one.
#include <string>

#include "codegen/target.h"

namespace tessel {

/// The shipped model for `target`: TESSEL_COST_MODEL if set ("none": no model), else
/// <prefix>/share/tessel/cost_model/<kind>.json next to an installed binary, else the source
/// tree's models/cost_model/<kind>.json; empty when none exists (CUDA targets have none yet).
std::string shipped_cost_model_path(const Target &target);

}  // namespace tessel
