#pragma once
// Fresh loop names for one stage, so that the names a sketch builder adds never collide
// with the stage's own or with each other.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "compute/compute_desc.h"

namespace tessel {

class LoopNames {
 public:
  explicit LoopNames(const std::vector<AxisDesc> &axes) {
    for (const AxisDesc &a : axes) used_.insert(a.name);
  }
  void use(const std::string &name) { used_.insert(name); }
  /// `base` (with the '$' of RDom names made '_'), else base2, base3, ...
  std::string fresh(const std::string &base) {
    std::string clean = base;
    std::replace(clean.begin(), clean.end(), '$', '_');
    std::string name = clean;
    for (int n = 2; used_.count(name); ++n) name = clean + std::to_string(n);
    used_.insert(name);
    return name;
  }

 private:
  std::set<std::string> used_;
};

}  // namespace tessel
