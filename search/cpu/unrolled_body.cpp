#include "search/cpu/unrolled_body.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace tessel {

int64_t unrolled_body_vectors(const ScheduleTree &tree, const CpuTargetDesc &target) {
  const int64_t lanes = target.lanes(4);
  int64_t most = 1;
  std::vector<const ScheduleNode *> loops;
  std::function<void(int)> walk = [&](int index) {
    const ScheduleNode &n = tree.nodes[index];
    if (n.kind == ScheduleNodeKind::Compute) {
      int64_t body = 1;
      for (const ScheduleNode *loop : loops) {
        if (loop->loop_kind == LoopKind::Unrolled) body *= std::max<int64_t>(1, loop->extent);
        else if (loop->loop_kind == LoopKind::Vectorized) body *= std::max<int64_t>(1, loop->extent / lanes);
      }
      most = std::max(most, body);
    }
    if (n.kind == ScheduleNodeKind::Loop) loops.push_back(&n);
    for (int child : n.children) walk(child);
    if (n.kind == ScheduleNodeKind::Loop) loops.pop_back();
  };
  if (!tree.nodes.empty()) walk(0);
  return most;
}

Result<void> check_unrolled_body(const ScheduleTree &tree, const CpuTargetDesc &target) {
  const int64_t body = unrolled_body_vectors(tree, target);
  if (body > kMaxUnrolledBodyVectors)
    return make_error(ErrorKind::InvalidInput, "unrolls one compute to " + std::to_string(body) +
                                                   " vector statements (the cap is " +
                                                   std::to_string(kMaxUnrolledBodyVectors) + ")");
  return {};
}

}  // namespace tessel
