#include <Halide.h>

#include "peers/halide_autoschedule.h"

#include <chrono>
#include <mutex>
#include <set>

#include "compute/node_pipeline_internal.h"

namespace tessel {

namespace {

/// Halide dimension 0 is the last ONNX axis; an estimate covers the whole extent.
Halide::Region whole_extent(const Shape &shape) {
  Halide::Region region;
  for (auto it = shape.rbegin(); it != shape.rend(); ++it) region.emplace_back(0, static_cast<int>(*it));
  return region;
}

/// A plugin registers its autoscheduler when loaded; loading one twice registers it twice,
/// which Halide refuses. Failures stay failures for the rest of the process.
Result<void> load_plugin_once(const std::string &path) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(path)) return {};
  try {
    Halide::load_plugin(path);
  } catch (const std::exception &e) {
    return make_error("cannot load the autoscheduler plugin " + path + ": " + e.what());
  }
  loaded.insert(path);
  return {};
}

}  // namespace

Result<AutoscheduledPipeline> autoschedule_group_pipeline(const Graph &graph, const FusedGroup &group,
                                                          const GroupSignature &signature,
                                                          const AutoscheduleOptions &options) {
  if (auto loaded = load_plugin_once(options.plugin_path); !loaded.ok()) return loaded.error();
  // The plain form with no directive at all: every placement is the autoscheduler's choice.
  auto plain = build_unscheduled_group_pipeline(graph, group, signature);
  if (!plain.ok()) return plain.error();
  AutoscheduledPipeline result;
  result.pipeline = plain.value();
  NodePipeline &p = *result.pipeline;
  try {
    for (size_t i = 0; i < p.parameters.size(); ++i)
      p.parameters[i].set_estimates(whole_extent(signature.types.at(signature.inputs[i]).shape));
    std::vector<Halide::Func> outputs = p.pipeline.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].set_estimates(whole_extent(p.output_types.at(i).shape));
    const auto start = std::chrono::steady_clock::now();
    const Halide::AutoSchedulerResults scheduled = p.pipeline.auto_schedule(
        options.autoscheduler, Halide::Target(options.halide_target),
        Halide::MachineParams(options.parallelism, static_cast<uint64_t>(options.last_level_cache_bytes),
                              options.balance));
    result.autoschedule_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.schedule_source = scheduled.schedule_source;
  } catch (const Halide::Error &e) {
    return make_error(options.autoscheduler + " could not schedule the task: " + e.what());
  } catch (const std::exception &e) {
    return make_error(options.autoscheduler + " could not schedule the task: " + e.what());
  }
  return result;
}

}  // namespace tessel
