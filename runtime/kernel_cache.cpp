#include "runtime/kernel_cache.h"

#include <mutex>
#include <unordered_map>

#include "schedule/node_pipeline.h"

namespace tessel {

namespace {
struct Cache {
  std::mutex mutex;
  std::unordered_map<std::string, JitKernel> kernels;
  KernelCacheStats stats;
};
Cache &cache() {
  static Cache instance;
  return instance;
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
  auto pipeline = build_node_pipeline(node, opset, input_types, baked_values, output_types);
  if (!pipeline.ok()) return pipeline.error();
  auto kernel = JitKernel::compile(pipeline.value(), target);
  if (!kernel.ok()) return make_error("node '" + node.name + "' (" + node.op_type + "): " + kernel.error().message);
  std::lock_guard<std::mutex> lock(c.mutex);
  ++c.stats.compiled;
  c.stats.compile_seconds += kernel->compile_seconds();
  c.kernels.emplace(key, kernel.value());
  return kernel;
}

KernelCacheStats kernel_cache_stats() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().stats;
}

}  // namespace tessel
