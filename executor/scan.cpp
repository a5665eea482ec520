// Scan: the runtime drives the body from the host, as it does Loop's. Each iteration reads
// one slice of every scan input and the current states; the body's scan outputs are
// stacked along their axes. Opset 8's batched form runs the same core once per batch entry.
#include <algorithm>
#include <cstring>

#include "executor/graph_executor.h"
#include "executor/host_ops.h"

namespace tessel {
namespace {

/// Products of the dims before and after `axis`, in elements.
struct AxisSplit {
  int64_t outer = 1, inner = 1;
  AxisSplit(const Shape &shape, int64_t axis) {
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  }
};

/// Entry `index` of `axis`, that axis dropped.
Tensor take_along(const Tensor &x, int64_t axis, int64_t index) {
  Shape shape = x.shape();
  const int64_t length = shape[axis];
  const AxisSplit split(shape, axis);
  shape.erase(shape.begin() + axis);
  Tensor out(x.dtype(), shape);
  const size_t row = static_cast<size_t>(split.inner) * dtype_size(x.dtype());
  for (int64_t o = 0; o < split.outer; ++o)
    std::memcpy(static_cast<uint8_t *>(out.data()) + o * row,
                static_cast<const uint8_t *>(x.data()) + (o * length + index) * row, row);
  return out;
}

/// `parts` (equal shapes) stacked along a new axis `axis`, part t at position t, or at
/// length - 1 - t when `reverse`.
Result<Tensor> stack_along(const std::vector<Tensor> &parts, int64_t axis, bool reverse) {
  const Shape &part_shape = parts.front().shape();
  Shape shape = part_shape;
  const int64_t length = static_cast<int64_t>(parts.size());
  if (axis < 0) axis += static_cast<int64_t>(shape.size()) + 1;
  if (axis < 0 || axis > static_cast<int64_t>(shape.size()))
    return make_error(ErrorKind::InvalidInput, "a scan output axis is out of range");
  shape.insert(shape.begin() + axis, length);
  Tensor out(parts.front().dtype(), shape);
  const AxisSplit split(shape, axis);
  const size_t row = static_cast<size_t>(split.inner) * dtype_size(out.dtype());
  for (int64_t t = 0; t < length; ++t) {
    const Tensor &part = parts[t];
    if (part.shape() != part_shape || part.dtype() != out.dtype())
      return make_error(ErrorKind::InvalidInput,
                        "scan output shapes differ between iterations: " + shape_to_string(part_shape) + " vs " +
                        shape_to_string(part.shape()));
    const int64_t at = reverse ? length - 1 - t : t;
    for (int64_t o = 0; o < split.outer; ++o)
      std::memcpy(static_cast<uint8_t *>(out.data()) + (o * length + at) * row,
                  static_cast<const uint8_t *>(part.data()) + o * row, row);
  }
  return out;
}

int64_t entry_or(const std::vector<int64_t> &values, size_t i, int64_t fallback) {
  return i < values.size() ? values[i] : fallback;
}

/// One unbatched scan: `length` iterations over `scanned` along their axes.
struct ScanCore {
  const GraphExecutor &body;
  const Scope &scope;
  std::vector<int64_t> input_axes, input_directions, output_axes, output_directions;

  Result<std::vector<Tensor>> run(std::vector<Tensor> states, const std::vector<Tensor> &scanned,
                                  int64_t length) const {
    const size_t num_states = states.size();
    const Graph &g = body.graph();
    if (g.inputs.size() != num_states + scanned.size())
      return make_error(ErrorKind::InvalidInput,
                        "the body takes " + std::to_string(g.inputs.size()) + " inputs, expected " +
                        std::to_string(num_states + scanned.size()));
    if (g.outputs.size() < num_states)
      return make_error(ErrorKind::InvalidInput, "the body has fewer outputs than the scan has states");
    std::vector<int64_t> axes;
    for (size_t j = 0; j < scanned.size(); ++j) {
      int64_t axis = entry_or(input_axes, j, 0);
      if (axis < 0) axis += scanned[j].rank();
      if (axis < 0 || axis >= scanned[j].rank())
        return make_error(ErrorKind::InvalidInput, "scan_input_axes is outside a scan input's rank");
      if (scanned[j].shape()[axis] < length)
        return make_error(ErrorKind::InvalidInput, "the scan inputs differ in length");
      axes.push_back(axis);
    }
    const size_t num_outputs = g.outputs.size() - num_states;
    std::vector<std::vector<Tensor>> per_iteration(num_outputs);
    for (int64_t t = 0; t < length; ++t) {
      std::vector<Tensor> inputs = states;
      for (size_t j = 0; j < scanned.size(); ++j)
        inputs.push_back(take_along(scanned[j], axes[j], entry_or(input_directions, j, 0) ? length - 1 - t : t));
      auto outputs = body.run(inputs, &scope);
      if (!outputs.ok())
        return make_error(outputs.error().kind, "iteration " + std::to_string(t) + ": " + outputs.error().message);
      for (size_t i = 0; i < num_states; ++i) states[i] = (*outputs)[i];
      for (size_t k = 0; k < num_outputs; ++k) per_iteration[k].push_back((*outputs)[num_states + k]);
    }
    std::vector<Tensor> results = std::move(states);
    for (size_t k = 0; k < num_outputs; ++k) {
      if (per_iteration[k].empty()) {
        // No iteration ran: the declared per-iteration shape, with a zero-length axis.
        const TensorType &declared = g.tensors[g.outputs[num_states + k]].type;
        if (!declared.fully_known())
          return make_error(ErrorKind::Unsupported, "a scan of length 0 with an undeclared scan output shape");
        Shape shape = declared.shape;
        int64_t axis = entry_or(output_axes, k, 0);
        if (axis < 0) axis += static_cast<int64_t>(shape.size()) + 1;
        shape.insert(shape.begin() + std::clamp<int64_t>(axis, 0, static_cast<int64_t>(shape.size())), 0);
        results.emplace_back(declared.dtype, shape);
        continue;
      }
      auto stacked = stack_along(per_iteration[k], entry_or(output_axes, k, 0), entry_or(output_directions, k, 0) != 0);
      if (!stacked.ok()) return stacked.error();
      results.push_back(stacked.value());
    }
    return results;
  }
};

/// Opset 8: every input and output has a batch axis 0; scan inputs are scanned along axis
/// 1 for sequence_lens[b] steps (all of it when omitted); shorter outputs are zero-padded.
Result<std::vector<Tensor>> run_batched(const ScanCore &core, const HostOpContext &ctx, size_t num_states) {
  const Tensor *lengths = ctx.inputs.at(0);
  std::vector<const Tensor *> all(ctx.inputs.begin() + 1, ctx.inputs.end());
  for (const Tensor *t : all)
    if (!t || t->rank() < 1)
      return make_error(ErrorKind::InvalidInput, "every state and scan input needs a batch axis");
  const int64_t batch = all[0]->shape()[0];
  const int64_t max_length = all[num_states]->rank() >= 2 ? all[num_states]->shape()[1] : 0;
  std::vector<std::vector<Tensor>> per_entry;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> states, scanned;
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i]->shape()[0] != batch) return make_error(ErrorKind::InvalidInput, "the inputs' batch sizes differ");
      (i < num_states ? states : scanned).push_back(take_along(*all[i], 0, b));
    }
    const int64_t length = lengths ? lengths->element_as_int64(b) : max_length;
    if (length < 0 || length > max_length)
      return make_error(ErrorKind::InvalidInput, "sequence_lens entry is outside [0, sequence length]");
    auto outputs = core.run(states, scanned, length);
    if (!outputs.ok()) return outputs.error();
    // Pad scan outputs to the longest sequence so the entries stack.
    for (size_t k = num_states; k < outputs->size(); ++k) {
      Tensor &y = (*outputs)[k];
      if (y.shape()[0] == max_length) continue;
      Shape padded = y.shape();
      padded[0] = max_length;
      Tensor full(y.dtype(), padded);
      if (y.bytes()) std::memcpy(full.data(), y.data(), y.bytes());
      y = full;
    }
    per_entry.push_back(std::move(outputs).value());
  }
  if (per_entry.empty()) return make_error(ErrorKind::Unsupported, "a batch of 0 entries is not supported");
  std::vector<Tensor> results;
  for (size_t i = 0; i < per_entry[0].size(); ++i) {
    std::vector<Tensor> parts;
    for (const auto &entry : per_entry) parts.push_back(entry[i]);
    auto stacked = stack_along(parts, 0, false);
    if (!stacked.ok()) return stacked.error();
    results.push_back(stacked.value());
  }
  return results;
}

}  // namespace

Result<std::vector<Tensor>> run_scan(const HostOpContext &ctx) {
  const Node &node = ctx.node;
  const auto fail = [&](const std::string &m) { return make_error("node '" + node.name + "' (Scan): " + m); };
  const bool batched = ctx.opset < 9;
  const size_t first = batched ? 1 : 0;
  const int64_t num_scan = node.attributes.get_int("num_scan_inputs", 0);
  if (num_scan < 1 || ctx.inputs.size() < first + static_cast<size_t>(num_scan))
    return fail("num_scan_inputs must be between 1 and the number of inputs");
  const size_t num_states = ctx.inputs.size() - first - num_scan;
  GraphExecutor body(node.attributes.get_graph("body"), ctx.target);
  const auto &a = node.attributes;
  ScanCore core{body, ctx.scope, a.get_ints("scan_input_axes", {}),
                a.get_ints(batched ? "directions" : "scan_input_directions", {}), a.get_ints("scan_output_axes", {}),
                a.get_ints("scan_output_directions", {})};
  Result<std::vector<Tensor>> results = std::vector<Tensor>{};
  if (batched) {
    core.input_axes.clear();
    core.output_axes.clear();
    core.output_directions.clear();
    results = run_batched(core, ctx, num_states);
  } else {
    std::vector<Tensor> states, scanned;
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      if (!ctx.inputs[i]) return fail("input " + std::to_string(i) + " is missing");
      (i < num_states ? states : scanned).push_back(*ctx.inputs[i]);
    }
    int64_t axis = entry_or(core.input_axes, 0, 0);
    if (axis < 0) axis += scanned[0].rank();
    if (axis < 0 || axis >= scanned[0].rank()) return fail("scan_input_axes is outside the first scan input's rank");
    results = core.run(states, scanned, scanned[0].shape()[axis]);
  }
  if (!results.ok()) return fail(results.error().message);
  return results;
}

}  // namespace tessel
