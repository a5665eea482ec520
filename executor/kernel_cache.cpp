#include "executor/kernel_cache.h"

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "compute/node_pipeline.h"
#include "compute/vector_isa.h"
#include "graph/ir/op_registry.h"

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

/// The cached kernel for `key_text`, or the result of building and compiling it. The key
/// also names the vector width the built-in tiles were sized for (compute/vector_isa.h),
/// which TESSEL_VECTOR_BITS may change within a process.
Result<JitKernel> get_or_compile(const std::string &key_text,
                                 const std::function<Result<std::shared_ptr<NodePipeline>>()> &build,
                                 const Target &target) {
  const std::string key = "v" + std::to_string(host_vector_bits()) + "|" + key_text;
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

Result<JitKernel> get_or_compile_kernel(const Node &node, int64_t opset,
                                        const std::vector<TensorType> &input_types,
                                        const std::vector<const Tensor *> &baked_values,
                                        const std::vector<TensorType> &output_types,
                                        const Target &target) {
  const std::string key = target.to_string() + "|" + kernel_key(node, opset, input_types, baked_values, output_types);
  auto kernel = get_or_compile(
      key, [&] { return build_node_pipeline(node, opset, input_types, baked_values, output_types); }, target);
  if (!kernel.ok())
    return make_error(kernel.error().kind,
                      "node '" + node.name + "' (" + node.op_type + "): " + kernel.error().message);
  return kernel;
}

Result<JitKernel> get_or_compile_group_kernel(const std::string &key, const Graph &graph, const FusedGroup &group,
                                              const GroupSignature &signature, const Target &target) {
  return get_or_compile(
      target.to_string() + "|group|" + key,
      [&]() -> Result<std::shared_ptr<NodePipeline>> {
        return build_pipeline(make_kernel_task(borrow_graph(graph), group, signature), nullptr, target);
      },
      target);
}

Result<JitKernel> get_or_compile_tuned_group_kernel(const std::string &key, const std::string &schedule_text,
                                                    const Graph &graph, const FusedGroup &group,
                                                    const GroupSignature &signature, const Target &target) {
  return get_or_compile(
      target.to_string() + "|tuned|" + key + "|" + schedule_text,
      [&]() -> Result<std::shared_ptr<NodePipeline>> {
        auto schedule = parse_schedule(schedule_text);
        if (!schedule.ok()) return schedule.error();
        return build_pipeline(make_kernel_task(borrow_graph(graph), group, signature), &schedule.value(), target);
      },
      target);
}

KernelCacheStats kernel_cache_stats() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().stats;
}

}  // namespace tessel
