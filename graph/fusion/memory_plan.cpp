#include "graph/fusion/memory_plan.h"

#include <algorithm>
#include <map>

namespace tessel {

namespace {

/// A buffer: one or more tensors sharing bytes (views, in-place outputs), alive from the
/// first producing group to the last reading group.
struct Buffer {
  int64_t bytes = 0;
  int first = 0, last = 0;
  int64_t offset = 0;
  bool holds_slices = false;  // a Concat's output whose inputs live inside it
};

constexpr int kAlignment = 64;

int64_t aligned(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

MemoryPlan plan_memory(const Graph &g, const std::vector<FusedGroup> &groups, const MemoryPlanOptions &options) {
  MemoryPlan plan;
  plan.arena_offset.assign(g.tensors.size(), MemoryPlan::kNotInArena);
  plan.alias_of.assign(g.tensors.size(), -1);
  plan.concat_in_place.assign(g.nodes.size(), false);

  std::vector<int> group_of_node(g.nodes.size(), -1);
  for (size_t i = 0; i < groups.size(); ++i)
    for (int n : groups[i].nodes) group_of_node[n] = static_cast<int>(i);
  std::vector<bool> external(g.tensors.size(), false);  // owned by the caller or the model
  for (int t : g.inputs) external[t] = true;
  for (int t : g.outputs) external[t] = true;
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].constant) external[t] = true;

  // Tensors that cross a group boundary need memory; the rest stay inside one kernel.
  std::vector<int> last_use(g.tensors.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (int t : g.node_inputs[n])
      if (t != kNoTensor) last_use[t] = std::max(last_use[t], group_of_node[n]);
    // If/Loop bodies read enclosing values by name: those live until the node runs.
    for (const std::string &name : node_body_captures(g.nodes[n]))
      if (int t = g.find_tensor(name); t != kNoTensor) last_use[t] = std::max(last_use[t], group_of_node[n]);
  }
  auto needs_buffer = [&](int t) {
    if (t == kNoTensor || external[t] || g.tensor_producer[t] < 0) return false;
    const int producer_group = group_of_node[g.tensor_producer[t]];
    return last_use[t] > producer_group && g.tensors[t].type.fully_known() && dtype_size(g.tensors[t].type.dtype) > 0;
  };
  auto bytes_of = [&](int t) {
    return static_cast<int64_t>(shape_numel(g.tensors[t].type.shape) * dtype_size(g.tensors[t].type.dtype));
  };

  // Concats done in place: each input's (Concat output, byte offset in it).
  std::vector<std::pair<int, int64_t>> slice_of(g.tensors.size(), {-1, 0});
  if (!options.writes_anywhere.empty())
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      if (groups[gi].nodes.size() != 1 || !options.writes_anywhere[gi]) continue;
      const int n = groups[gi].nodes.front();
      if (g.nodes[n].op_type != "Concat" || g.node_outputs[n].size() != 1) continue;
      const int out = g.node_outputs[n][0];
      if (!needs_buffer(out)) continue;
      const TensorType &type = g.tensors[out].type;
      const int64_t rank = static_cast<int64_t>(type.shape.size());
      int64_t axis = g.nodes[n].attributes.get_int("axis", g.opset < 4 ? 1 : 0);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) continue;
      // Only then is each input one contiguous run of the output's bytes.
      bool fits = true;
      for (int64_t d = 0; d < axis; ++d) fits = fits && type.shape[d] == 1;
      std::vector<std::pair<int, int64_t>> slices;
      int64_t offset = 0;
      for (int input : g.node_inputs[n]) {
        if (!fits) break;
        // A view of a kernel's output (a 1x1 conv computed as a matrix product) is placed
        // by placing what it views.
        int t = input;
        while (t != kNoTensor && needs_buffer(t) && is_view_op(g.nodes[g.tensor_producer[t]].op_type) &&
               groups[group_of_node[g.tensor_producer[t]]].nodes.size() == 1 &&
               !g.node_inputs[g.tensor_producer[t]].empty() && needs_buffer(g.node_inputs[g.tensor_producer[t]][0]))
          t = g.node_inputs[g.tensor_producer[t]][0];
        fits = needs_buffer(t) && g.tensors[t].type.dtype == type.dtype && bytes_of(t) > 0 &&
               bytes_of(t) == bytes_of(input) && slice_of[t].first < 0;
        if (!fits) break;
        const int producer = g.tensor_producer[t];
        const int producer_group = group_of_node[producer];
        const FusedGroup &from = groups[producer_group];
        fits = options.writes_anywhere[producer_group] && !plan.concat_in_place[producer] &&
               !(from.nodes.size() == 1 && runs_on_host(g.nodes[producer].op_type));
        for (const auto &[seen, at] : slices) fits = fits && seen != t;
        fits = fits && offset % kAlignment == 0;  // where every arena tensor starts (ARTIFACT.md)
        slices.emplace_back(t, offset);
        offset += bytes_of(t);
      }
      if (!fits || offset != bytes_of(out)) continue;
      for (const auto &[t, at] : slices) slice_of[t] = {out, at};
      plan.concat_in_place[n] = true;
      ++plan.concats_in_place;
    }

  std::vector<Buffer> buffers;
  std::vector<int> buffer_of(g.tensors.size(), -1);
  std::vector<int64_t> offset_in_buffer(g.tensors.size(), 0);
  auto root_of = [&](int t) {
    while (plan.alias_of[t] >= 0) t = plan.alias_of[t];
    return t;
  };
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const FusedGroup &group = groups[gi];
    const Node &first = g.nodes[group.nodes.front()];
    for (int n : group.nodes) {
      for (int t : g.node_outputs[n]) {
        if (!needs_buffer(t)) continue;
        plan.unshared_bytes += aligned(bytes_of(t));
        if (buffer_of[t] >= 0) continue;  // a Concat in place: its first input made its buffer
        if (const int whole = slice_of[t].first; whole >= 0) {
          if (buffer_of[whole] < 0) {
            buffer_of[whole] = static_cast<int>(buffers.size());
            buffers.push_back({aligned(bytes_of(whole)), static_cast<int>(gi), last_use[whole], 0, true});
          }
          buffer_of[t] = buffer_of[whole];
          offset_in_buffer[t] = slice_of[t].second;
          Buffer &b = buffers[buffer_of[t]];
          b.last = std::max(b.last, last_use[t]);
          continue;
        }
        const int in = g.node_inputs[n].empty() ? kNoTensor : g.node_inputs[n][0];
        // A view shares its input's bytes when the input is an arena tensor.
        if (group.nodes.size() == 1 && is_view_op(first.op_type) && in != kNoTensor && buffer_of[in] >= 0) {
          plan.alias_of[t] = in;
          buffer_of[t] = buffer_of[in];
          offset_in_buffer[t] = offset_in_buffer[in];
          Buffer &b = buffers[buffer_of[t]];
          b.last = std::max(b.last, last_use[t]);
          ++plan.views;
          continue;
        }
        // An elementwise group may write over an input of the same size that dies here (not
        // over a Concat's bytes: another of its inputs may be a slice of them).
        if (group.pattern <= OpPattern::Broadcast) {
          bool placed = false;
          for (int m : group.nodes)
            for (int candidate : g.node_inputs[m]) {
              if (placed || candidate == kNoTensor || buffer_of[candidate] < 0) continue;
              Buffer &b = buffers[buffer_of[candidate]];
              if (b.last == static_cast<int>(gi) && b.bytes == aligned(bytes_of(t)) && root_of(candidate) == candidate &&
                  !b.holds_slices) {
                plan.alias_of[t] = candidate;
                buffer_of[t] = buffer_of[candidate];
                b.last = last_use[t];
                ++plan.in_place;
                placed = true;
              }
            }
          if (placed) continue;
        }
        buffer_of[t] = static_cast<int>(buffers.size());
        buffers.push_back({aligned(bytes_of(t)), static_cast<int>(gi), last_use[t], 0, false});
      }
    }
  }

  // Greedy by size: big buffers first, each at the lowest offset clear of every placed
  // buffer whose lifetime overlaps.
  std::vector<int> by_size(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) by_size[i] = static_cast<int>(i);
  std::stable_sort(by_size.begin(), by_size.end(), [&](int a, int b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<int> placed;
  for (int i : by_size) {
    Buffer &b = buffers[i];
    std::vector<std::pair<int64_t, int64_t>> taken;  // [start, end) of conflicting buffers
    for (int j : placed) {
      const Buffer &o = buffers[j];
      if (o.first <= b.last && b.first <= o.last) taken.emplace_back(o.offset, o.offset + o.bytes);
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto &[start, end] : taken) {
      if (offset + b.bytes <= start) break;
      offset = std::max(offset, end);
    }
    b.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + b.bytes);
    placed.push_back(i);
  }
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (buffer_of[t] >= 0) plan.arena_offset[t] = buffers[buffer_of[t]].offset + offset_in_buffer[t];
  return plan;
}

}  // namespace tessel
