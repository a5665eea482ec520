#include "runtime/kernel_cache.h"

#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

#include "graph/op_registry.h"
#include "schedule/node_pipeline.h"

namespace tessel {

namespace {
struct Cache {
  std::mutex mutex;
  std::unordered_map<std::string, Result<JitKernel>> kernels;
  KernelCacheStats stats;
};
Cache &cache() {
  static Cache instance;
  return instance;
}

/// The cached kernel for `key`, or the result of building and compiling it.
Result<JitKernel> get_or_compile(const std::string &key, const std::function<Result<std::shared_ptr<NodePipeline>>()> &build,
                                 const Target &target) {
  Cache &c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.kernels.find(key);
    if (it != c.kernels.end()) {
      ++c.stats.hits;
      return it->second;
    }
  }
  // Compile outside the lock so parallel executors compile different kernels at once.
  auto pipeline = build();
  Result<JitKernel> kernel = pipeline.ok() ? JitKernel::compile(pipeline.value(), target) : pipeline.error();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (kernel.ok()) {
    ++c.stats.compiled;
    c.stats.compile_seconds += kernel->compile_seconds();
  }
  c.kernels.emplace(key, kernel);
  return kernel;
}
}  // namespace

std::string kernel_key(const Node &node, int64_t opset, const std::vector<TensorType> &input_types,
                       const std::vector<const Tensor *> &baked_values, const std::vector<TensorType> &output_types) {
  std::string key = node.op_type + "@" + std::to_string(opset) + "|" + node.attributes.canonical_text() + "|";
  for (size_t i = 0; i < input_types.size(); ++i) {
    key += input_types[i].to_string();
    if (i < baked_values.size() && baked_values[i]) key += "=" + tensor_canonical_text(*baked_values[i]);
    key += ";";
  }
  key += "->";
  for (const TensorType &t : output_types) key += t.to_string() + ";";
  return key;
}

Result<JitKernel> get_or_compile_kernel(const Node &node, int64_t opset,
                                        const std::vector<TensorType> &input_types,
                                        const std::vector<const Tensor *> &baked_values,
                                        const std::vector<TensorType> &output_types,
                                        const Target &target) {
  const std::string key = target.to_string() + "|" + kernel_key(node, opset, input_types, baked_values, output_types);
  auto kernel = get_or_compile(
      key, [&] { return build_node_pipeline(node, opset, input_types, baked_values, output_types); }, target);
  if (!kernel.ok()) return make_error("node '" + node.name + "' (" + node.op_type + "): " + kernel.error().message);
  return kernel;
}

std::string group_kernel_key(const Graph &g, const FusedGroup &group, const GroupSignature &sig) {
  std::map<int, std::string> local;  // tensor id -> position inside the group
  for (size_t i = 0; i < sig.inputs.size(); ++i) local[sig.inputs[i]] = "in" + std::to_string(i);
  std::string key;
  int produced = 0;
  for (int n : group.nodes) {
    const Node &node = g.nodes[n];
    const OpSchema *schema = find_op_schema(node.op_type);
    std::vector<TensorType> in_types, out_types;
    std::vector<const Tensor *> baked;
    std::string wiring = "(";
    for (size_t i = 0; i < g.node_inputs[n].size(); ++i) {
      const int t = g.node_inputs[n][i];
      in_types.push_back(t == kNoTensor ? TensorType{} : sig.types[t]);
      const bool is_value = schema && std::count(schema->value_inputs.begin(), schema->value_inputs.end(), static_cast<int>(i));
      baked.push_back(t != kNoTensor && is_value && static_cast<size_t>(t) < sig.values.size() ? sig.values[t] : nullptr);
      wiring += (i ? "," : "") + (t == kNoTensor ? std::string("_") : local.at(t));
    }
    wiring += ")->(";
    for (size_t i = 0; i < g.node_outputs[n].size(); ++i) {
      const int t = g.node_outputs[n][i];
      out_types.push_back(t == kNoTensor ? TensorType{} : sig.types[t]);
      if (t != kNoTensor) local[t] = "t" + std::to_string(produced++);
      wiring += (i ? "," : "") + (t == kNoTensor ? std::string("_") : local[t]);
    }
    key += kernel_key(node, g.opset, in_types, baked, out_types) + wiring + ");";
  }
  key += "out:";
  for (int t : sig.outputs) key += local.at(t) + ",";
  return key;
}

Result<JitKernel> get_or_compile_group_kernel(const std::string &key, const Graph &graph, const FusedGroup &group,
                                              const GroupSignature &signature, const Target &target) {
  return get_or_compile(
      target.to_string() + "|group|" + key, [&] { return build_group_pipeline(graph, group, signature); }, target);
}

Result<JitKernel> get_or_compile_tuned_group_kernel(const std::string &key, const std::string &schedule_text,
                                                    const Graph &graph, const FusedGroup &group,
                                                    const GroupSignature &signature, const Target &target) {
  return get_or_compile(
      target.to_string() + "|tuned|" + key + "|" + schedule_text,
      [&]() -> Result<std::shared_ptr<NodePipeline>> {
        auto schedule = parse_schedule(schedule_text);
        if (!schedule.ok()) return schedule.error();
        return build_scheduled_group_pipeline(graph, group, signature, schedule.value());
      },
      target);
}

KernelCacheStats kernel_cache_stats() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().stats;
}

}  // namespace tessel
