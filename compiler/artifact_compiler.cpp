#include "compiler/artifact_compiler.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/version.h"
#include "codegen/aot_compile.h"
#include "deploy/artifact_manifest.h"
#include "deploy/execution_plan.h"
#include "graph/fusion/fuse.h"
#include "graph/fusion/memory_plan.h"
#include "graph/infer/model_stats.h"
#include "search/cpu/parallel_resplit.h"
#include "search/cpu/source_placement.h"
#include "search/gpu/gpu_sketch.h"
#include "task/group_pipeline.h"
#include "task/kernel_key.h"

namespace tessel {

namespace fs = std::filesystem;
using deploy::Location;

namespace {

constexpr int64_t kAlignment = 64;
int64_t aligned(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

/// GCC's __builtin_cpu_supports names for the ISA features in a Halide x86 target string.
std::vector<std::string> required_cpu_features(const std::string &halide_target) {
  static const std::map<std::string, std::vector<std::string>> features = {
      {"sse41", {"sse4.1"}},
      {"avx", {"avx"}},
      {"avx2", {"avx2"}},
      {"fma", {"fma"}},
      {"f16c", {"f16c"}},
      {"avx512", {"avx512f", "avx512cd"}},
      {"avx512_knl", {"avx512f", "avx512cd", "avx512pf", "avx512er"}},
      {"avx512_skylake", {"avx512f", "avx512vl", "avx512bw", "avx512dq"}},
      {"avx512_cannonlake", {"avx512ifma", "avx512vbmi"}},
      {"avx512_sapphirerapids", {"avx512bf16", "avx512vnni"}},
  };
  std::set<std::string> out;
  std::stringstream in(halide_target);
  std::string token;
  while (std::getline(in, token, '-'))
    if (auto it = features.find(token); it != features.end()) out.insert(it->second.begin(), it->second.end());
  return {out.begin(), out.end()};
}

std::string file_fnv(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return deploy::fnv1a64_hex(bytes.data(), bytes.size());
}

std::string shell_quote(const std::string &s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

Result<void> write_file(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return make_error("cannot write " + path);
  return {};
}

/// Removes a directory on scope exit unless released.
struct DirectoryGuard {
  std::string path;
  ~DirectoryGuard() {
    if (path.empty()) return;
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

/// Builds the execution plan: which bytes every tensor a step touches lives in.
class PlanBuilder {
 public:
  PlanBuilder(const Graph &g, const MemoryPlan &memory) : g_(g), memory_(memory), arena_end_(memory.arena_bytes) {
    for (size_t p = 0; p < g.inputs.size(); ++p) input_position_.emplace(g.inputs[p], static_cast<int>(p));
    for (size_t p = 0; p < g.outputs.size(); ++p) output_position_.emplace(g.outputs[p], static_cast<int>(p));
  }

  /// The plan tensor id of graph tensor t, declaring it on first use.
  int tensor(int t) {
    if (auto it = declared_.find(t); it != declared_.end()) return it->second;
    const TensorInfo &info = g_.tensors[t];
    deploy::PlanTensor pt;
    pt.id = t;
    pt.name = info.name;
    pt.dtype = info.type.dtype;
    pt.shape = info.type.shape;
    if (auto in = input_position_.find(t); in != input_position_.end()) {
      pt.location = Location::Input;
      pt.argument = in->second;
    } else if (info.constant && g_.tensor_producer[t] < 0) {
      pt.location = Location::Weight;
      pt.argument = add_weight(*info.constant);
    } else if (auto out = output_position_.find(t); out != output_position_.end()) {
      pt.location = Location::Output;
      pt.argument = out->second;
    } else if (auto view = view_source_.find(t); view != view_source_.end()) {
      pt.location = Location::View;
      pt.argument = tensor(view->second);
    } else if (memory_.arena_offset[t] != MemoryPlan::kNotInArena) {
      pt.location = Location::Arena;
      pt.argument = memory_.arena_offset[t];
    } else {
      // Not planned (a value inside a group that runs node by node): a slot of its own.
      pt.location = Location::Arena;
      pt.argument = arena_end_;
      arena_end_ += aligned(static_cast<int64_t>(shape_numel(pt.shape) * dtype_size(pt.dtype)));
    }
    declared_.emplace(t, t);
    plan_.tensors.push_back(pt);
    return t;
  }

  void view(int output, int source) { view_source_[output] = source; }
  bool is_graph_output(int t) const { return output_position_.count(t) != 0; }
  bool in_arena(int t) const { return memory_.arena_offset[t] != MemoryPlan::kNotInArena; }
  bool is_view(int t) const { return view_source_.count(t) != 0; }

  void kernel(const std::string &symbol, const std::vector<int> &graph_tensors) {
    deploy::KernelStep step{symbol, {}};
    for (int t : graph_tensors) step.args.push_back(tensor(t));
    plan_.steps.push_back(step);
  }
  void copy(int source, int destination) { plan_.steps.push_back(deploy::CopyStep{tensor(source), tensor(destination)}); }

  /// Inputs, outputs, and copies into every output position no step wrote.
  deploy::ExecutionPlan finish() {
    for (int t : g_.inputs) plan_.inputs.push_back(tensor(t));
    int next_id = static_cast<int>(g_.tensors.size());
    for (size_t p = 0; p < g_.outputs.size(); ++p) {
      const int t = g_.outputs[p];
      const int id = tensor(t);
      const deploy::PlanTensor &declared = *find(id);
      if (declared.location == Location::Output && declared.argument == static_cast<int64_t>(p)) {
        plan_.outputs.push_back(id);
        continue;
      }
      // An input, a weight, or a second position of one tensor: a buffer of its own.
      deploy::PlanTensor out = declared;
      out.id = next_id++;
      out.location = Location::Output;
      out.argument = static_cast<int64_t>(p);
      plan_.tensors.push_back(out);
      plan_.steps.push_back(deploy::CopyStep{id, out.id});
      plan_.outputs.push_back(out.id);
    }
    return plan_;
  }

  const std::string &weights() const { return weights_; }
  int64_t arena_bytes() const { return arena_end_; }

 private:
  const deploy::PlanTensor *find(int id) const {
    for (const deploy::PlanTensor &t : plan_.tensors)
      if (t.id == id) return &t;
    return nullptr;
  }
  int64_t add_weight(const Tensor &value) {
    const int64_t offset = static_cast<int64_t>(weights_.size());
    weights_.append(static_cast<const char *>(value.data()), value.bytes());
    weights_.resize(static_cast<size_t>(aligned(static_cast<int64_t>(weights_.size()))), '\0');
    return offset;
  }

  const Graph &g_;
  const MemoryPlan &memory_;
  int64_t arena_end_;
  std::map<int, int> input_position_, output_position_, view_source_, declared_;
  deploy::ExecutionPlan plan_;
  std::string weights_;
};

}  // namespace

Result<ArtifactCompileSummary> compile_artifact(const Graph &g, const ArtifactCompileOptions &options,
                                                const std::string &output_path) {
  const auto start = std::chrono::steady_clock::now();
  auto log = [&](const std::string &line) {
    if (options.log) options.log(line);
  };
  // A cuda artifact names the architecture it was compiled for, also when the target left it
  // to the device.
  const bool gpu = options.target.kind == Target::Kind::Cuda;
  Target target = options.target;
  if (gpu && target.mcpu.empty()) target.mcpu = "sm_" + std::to_string(cuda_capability(target));
  if (gpu && options.alternatives)
    return make_error("choosing schedules inside the model runs on the host CPU only so far, not for " + target.to_string());
  const std::vector<FusedGroup> groups = partition_graph(g);
  const MemoryPlan memory = plan_memory(g, groups);

  // Which tensors anything reads: dead host nodes need no support.
  std::vector<int> uses(g.tensors.size(), 0);
  for (const auto &inputs : g.node_inputs)
    for (int t : inputs)
      if (t != kNoTensor) ++uses[t];
  for (int t : g.outputs) ++uses[t];
  std::vector<std::string> unsupported;
  for (const FusedGroup &group : groups)
    for (int n : group.nodes) {
      const Node &node = g.nodes[n];
      if (!runs_on_host(node.op_type)) continue;
      bool used = false;
      for (int t : g.node_outputs[n]) used |= t != kNoTensor && uses[t] > 0;
      if (!used) continue;
      bool extra_outputs = false;  // Dropout's mask
      for (size_t i = 1; i < g.node_outputs[n].size(); ++i)
        extra_outputs |= g.node_outputs[n][i] != kNoTensor && uses[g.node_outputs[n][i]] > 0;
      if (!is_view_op(node.op_type) || extra_outputs)
        unsupported.push_back("'" + node.name + "' (" + node.op_type + ")");
    }
  if (!unsupported.empty()) {
    std::string list;
    for (const std::string &u : unsupported) list += (list.empty() ? "" : ", ") + u;
    return make_error("the deploy runtime cannot run " + std::to_string(unsupported.size()) +
                      " node(s) of this model yet (control flow, TopK and shape queries that depend on run-time "
                      "values): " + list);
  }

  // Everything is written into a temporary sibling and renamed into place at the end.
  const fs::path final_path = fs::absolute(output_path);
  if (fs::exists(final_path) && !(fs::is_directory(final_path) && (fs::exists(final_path / "manifest.json") ||
                                                                  fs::is_empty(final_path))))
    return make_error(output_path + " exists and is not a tessel artifact; not overwriting it");
  const fs::path staging = final_path.string() + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(staging, ec);
  if (!fs::create_directories(staging / "objects", ec))
    return make_error("cannot create " + staging.string() + ": " + ec.message());
  DirectoryGuard guard{staging.string()};

  PlanBuilder builder(g, memory);
  deploy::ArtifactManifest manifest;
  ArtifactCompileSummary summary;
  std::map<std::string, std::pair<std::string, AotOutput>> compiled;  // kernel key -> symbol, object
  std::vector<std::string> objects;
  int64_t total_flops = 0, default_flops = 0;
  std::vector<std::pair<std::string, int64_t>> default_tasks;  // ops, flops

  // One kernel for `group` (its static signature) with `schedule_text` (empty: built-in):
  // its symbol and the tensor ids it takes.
  auto compile_kernel = [&](const FusedGroup &group, const GroupSignature &sig,
                            const std::string &schedule_text) -> Result<std::pair<std::string, std::vector<int>>> {
    Result<std::shared_ptr<NodePipeline>> pipeline = make_error("");
    if (gpu) {
      // Every kernel runs on the GPU: without a record, the default GPU schedule.
      Schedule schedule;
      if (!schedule_text.empty()) {
        auto parsed = parse_schedule(schedule_text);
        if (!parsed.ok()) return parsed.error();
        schedule = parsed.value();
      } else {
        auto compute = describe_group_compute(g, group, sig);
        if (!compute.ok()) return compute.error();
        schedule = default_gpu_schedule(compute.value(), gpu_target_desc(target));
      }
      pipeline = build_scheduled_group_pipeline(g, group, sig, schedule, PipelineDevice::Gpu);
    } else if (!schedule_text.empty()) {
      auto schedule = parse_schedule(schedule_text);
      if (!schedule.ok()) return schedule.error();
      pipeline = build_scheduled_group_pipeline(g, group, sig, schedule.value());
    } else {
      pipeline = build_group_pipeline(g, group, sig);
    }
    if (!pipeline.ok()) return pipeline.error();
    const std::string key = group_kernel_key(g, group, sig) + "\n" + schedule_text;
    auto it = compiled.find(key);
    if (it == compiled.end()) {
      const std::string symbol = "tessel_k" + std::to_string(compiled.size());
      auto object = compile_to_object(*pipeline.value(), target, (staging / "objects" / symbol).string(), symbol);
      if (!object.ok()) return object.error();
      objects.push_back(object->object_path);
      it = compiled.emplace(key, std::make_pair(symbol, object.value())).first;
    }
    const AotOutput &object = it->second.second;
    std::vector<int> args;
    for (int i : object.used_inputs) args.push_back(sig.inputs[i]);
    for (int o : object.computed_outputs) args.push_back(sig.outputs[o]);
    return std::make_pair(it->second.first, args);
  };
  // The same, called by the plan.
  auto emit_kernel = [&](const FusedGroup &group, const GroupSignature &sig,
                         const std::string &schedule_text) -> Result<std::pair<std::string, std::vector<int>>> {
    auto kernel = compile_kernel(group, sig, schedule_text);
    if (!kernel.ok()) return kernel.error();
    builder.kernel(kernel->first, kernel->second);
    ++summary.kernel_steps;
    return kernel;
  };
  std::map<std::string, size_t> alternatives_of;  // workload key -> summary.alternatives index
  // Compiles the task's other schedules (those that build and take the same arguments) for
  // the kernel call just emitted, `main`.
  auto add_alternatives = [&](const FusedGroup &group, const GroupSignature &sig, const std::string &key,
                              const deploy::ArtifactTask &task, const DeployedSchedule &chosen,
                              const std::pair<std::string, std::vector<int>> &main) -> Result<void> {
    const int step = summary.kernel_steps - 1;
    auto [slot, fresh] = alternatives_of.emplace(key, summary.alternatives.size());
    if (fresh) {
      auto others = options.alternatives(key);
      if (!others.ok()) return others.error();
      TaskAlternatives entry{key, task.ops, {}, {KernelAlternative{chosen, {}}}};
      for (DeployedSchedule &s : others.value())
        if (s.schedule_hash != chosen.schedule_hash) entry.alternatives.push_back(KernelAlternative{std::move(s), {}});
      // Variants of the fastest records that only a run of the whole model tells apart.
      auto add_variant = [&entry](const Schedule &schedule, std::optional<double> median) {
        const std::string hash = schedule_hash(schedule);
        for (const KernelAlternative &a : entry.alternatives)
          if (a.schedule.schedule_hash == hash) return;
        entry.alternatives.push_back(KernelAlternative{DeployedSchedule{to_text(schedule), hash, median}, {}});
      };
      if (auto compute = describe_group_compute(g, group, sig); compute.ok()) {
        const size_t records = std::min<size_t>(2, entry.alternatives.size());
        std::vector<std::pair<Schedule, std::optional<double>>> fastest;
        for (size_t i = 0; i < records; ++i)
          if (auto parsed = parse_schedule(entry.alternatives[i].schedule.schedule_text); parsed.ok())
            fastest.emplace_back(parsed.value(), entry.alternatives[i].schedule.median_seconds);
        // The two fastest with the padded input copied inside their parallel loop
        // (source_placement.h).
        for (const auto &[schedule, median] : fastest)
          if (auto moved = with_sources_in_parallel_loop(compute.value(), schedule)) add_variant(*moved, median);
        // The fastest with its parallel loop moved to each other outer loop: which core
        // reads which data is decided there (parallel_resplit.h).
        if (!fastest.empty())
          for (const Schedule &moved : with_parallel_loop_moved(compute.value(), fastest.front().first, /*threads=*/2))
            add_variant(moved, fastest.front().second);
      }
      summary.alternatives.push_back(std::move(entry));
    }
    TaskAlternatives &entry = summary.alternatives[slot->second];
    entry.steps.push_back(step);
    std::vector<KernelAlternative> kept;
    for (KernelAlternative &alt : entry.alternatives) {
      auto kernel = &alt == &entry.alternatives.front() ? Result<std::pair<std::string, std::vector<int>>>(main)
                                                        : compile_kernel(group, sig, alt.schedule.schedule_text);
      // One that does not build or takes other arguments is dropped for every call.
      if (!kernel.ok() || kernel->second != main.second) continue;
      alt.symbols.push_back(kernel->first);
      kept.push_back(std::move(alt));
    }
    for (KernelAlternative &alt : kept)
      if (alt.symbols.size() != entry.steps.size()) alt.symbols.clear();
    kept.erase(std::remove_if(kept.begin(), kept.end(), [](const KernelAlternative &a) { return a.symbols.empty(); }),
               kept.end());
    entry.alternatives = std::move(kept);
    return {};
  };

  for (const FusedGroup &group : groups) {
    const Node &first = g.nodes[group.nodes.front()];
    if (group.nodes.size() == 1 && runs_on_host(first.op_type)) {
      const int n = group.nodes.front();
      const int out = g.node_outputs[n].empty() ? kNoTensor : g.node_outputs[n][0];
      if (out == kNoTensor || uses[out] == 0) continue;
      const int in = g.node_inputs[n][0];
      // A view that is a graph output is copied out now: the arena bytes it shows are
      // reused by later kernels.
      if (builder.is_graph_output(out)) builder.copy(in, out);
      // The memory plan aliases a view of an arena tensor to it; a view of an input or a
      // weight (or of such a view) has an arena slot of its own that nothing writes: it views
      // its source instead.
      else if (!builder.in_arena(out) || !builder.in_arena(in) || builder.is_view(in)) builder.view(out, in);
      continue;
    }
    auto sig = static_group_signature(g, group);
    if (!sig.ok()) return make_error("group of '" + first.name + "': " + sig.error().message);
    if (sig->outputs.empty()) continue;  // nothing reads what it computes
    const std::string key = workload_key(g, group);
    int64_t flops = 0;
    for (int n : group.nodes) flops += node_flops(g, n);
    total_flops += flops;
    std::optional<DeployedSchedule> record;
    if (options.schedules) {
      auto found = options.schedules(key);
      if (!found.ok()) return found.error();
      record = found.value();
    }
    deploy::ArtifactTask task;
    task.ops = group_ops_text(g, group);
    task.workload_key = key;
    task.flops = flops;
    task.tuned = record.has_value();
    if (record) {
      task.schedule_hash = record->schedule_hash;
      task.record_median_seconds = record->median_seconds;
    }
    const std::string schedule_text = record ? record->schedule_text : std::string();
    auto emitted = emit_kernel(group, sig.value(), schedule_text);
    if (!emitted.ok() && !schedule_text.empty()) {
      summary.warnings.push_back("the tuned schedule of " + task.ops + " (" + record->schedule_hash +
                                 ") does not build here (" + emitted.error().message + "); using the default");
      task.tuned = false;
      emitted = emit_kernel(group, sig.value(), "");
    }
    if (!emitted.ok()) {
      // The group cannot be one kernel: its nodes run one by one, as the executor does.
      for (int n : group.nodes) {
        FusedGroup single{{n}, n, node_pattern(g.nodes[n])};
        auto single_sig = static_group_signature(g, single);
        if (!single_sig.ok()) return make_error("node '" + g.nodes[n].name + "': " + single_sig.error().message);
        auto done = emit_kernel(single, single_sig.value(), "");
        if (!done.ok())
          return make_error("node '" + g.nodes[n].name + "' (" + g.nodes[n].op_type + "): " + done.error().message);
        task.kernel += (task.kernel.empty() ? "" : "+") + done->first;
      }
      task.tuned = false;
    } else {
      task.kernel = emitted->first;
      if (options.alternatives && task.tuned) {
        auto added = add_alternatives(group, sig.value(), key, task, *record, emitted.value());
        if (!added.ok()) return added.error();
      }
    }
    if (task.tuned) ++summary.tuned_tasks;
    else {
      ++summary.default_tasks;
      default_flops += flops;
      default_tasks.emplace_back(task.ops, flops);
    }
    manifest.tasks.push_back(task);
  }
  if (options.schedules && !default_tasks.empty()) {
    char share[64];
    for (const auto &[ops, flops] : default_tasks) {
      std::snprintf(share, sizeof(share), "%.1f%%", total_flops ? 100.0 * flops / total_flops : 0.0);
      summary.warnings.push_back("no tuning record for " + ops + " (" + share + " of the model's FLOPs): default schedule");
    }
  }
  for (const std::string &w : summary.warnings) log("warning: " + w);

  // One shared library: the kernels and one copy of Halide's runtime.
  const std::string runtime_object = (staging / "objects" / "halide_runtime.o").string();
  if (auto rt = compile_runtime_object(target, runtime_object); !rt.ok()) return rt.error();
  std::string linker = options.linker;
  if (linker.empty()) linker = std::getenv("TESSEL_LINKER") ? std::getenv("TESSEL_LINKER") : "c++";
  const std::string library = (staging / "kernels.so").string();
  const std::string link_log = (staging / "objects" / "link.log").string();
  std::string command = linker + " -shared -o " + shell_quote(library);
  for (const std::string &o : objects) command += " " + shell_quote(o);
  command += " " + shell_quote(runtime_object) + " -lpthread -ldl -lm > " + shell_quote(link_log) + " 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::ifstream in(link_log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return make_error("linking the kernels with '" + linker + "' failed (set TESSEL_LINKER to a C++ compiler): " + text);
  }

  const deploy::ExecutionPlan plan = builder.finish();
  const std::string plan_text = deploy::to_text(plan);
  if (auto ok = write_file((staging / "plan.txt").string(), plan_text); !ok.ok()) return ok.error();
  if (auto ok = write_file((staging / "weights.bin").string(), builder.weights()); !ok.ok()) return ok.error();
  fs::remove_all(staging / "objects", ec);

  manifest.tessel_version = TESSEL_VERSION;
  manifest.target = target.to_string();
  manifest.halide_target = target.halide_target();
  manifest.required_cpu_features = required_cpu_features(manifest.halide_target);
  manifest.model_path = options.model_path;
  manifest.model_fnv1a64 = options.model_path.empty() ? "" : file_fnv(options.model_path);
  manifest.created_utc = utc_now();
  manifest.arena_bytes = builder.arena_bytes();
  for (auto [list, out] : {std::make_pair(&g.inputs, &manifest.inputs), std::make_pair(&g.outputs, &manifest.outputs)})
    for (int t : *list) out->push_back({g.tensors[t].name, g.tensors[t].type.dtype, g.tensors[t].type.shape});
  manifest.plan = {"plan.txt", static_cast<int64_t>(plan_text.size()), deploy::fnv1a64_hex(plan_text.data(), plan_text.size())};
  manifest.weights = {"weights.bin", static_cast<int64_t>(builder.weights().size()),
                      deploy::fnv1a64_hex(builder.weights().data(), builder.weights().size())};
  manifest.kernels = {"kernels.so", static_cast<int64_t>(fs::file_size(library)), file_fnv(library)};
  if (auto ok = write_file((staging / "manifest.json").string(), deploy::to_json(manifest)); !ok.ok()) return ok.error();

  // Into place: an existing artifact is moved aside first and removed once the new one is in.
  const fs::path old = final_path.string() + ".old-" + std::to_string(::getpid());
  const bool replace = fs::exists(final_path);
  if (replace) {
    fs::rename(final_path, old, ec);
    if (ec) return make_error("cannot move the existing " + output_path + " aside: " + ec.message());
  }
  fs::rename(staging, final_path, ec);
  if (ec) {
    if (replace) fs::rename(old, final_path, ec);
    return make_error("cannot move the artifact to " + output_path + ": " + ec.message());
  }
  guard.path.clear();
  if (replace) fs::remove_all(old, ec);

  summary.compiled_kernels = static_cast<int>(compiled.size());
  summary.arena_bytes = manifest.arena_bytes;
  summary.weights_bytes = manifest.weights.bytes;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace tessel
