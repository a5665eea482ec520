#include "deploy/module.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "HalideRuntime.h"
#include "base/cache_eviction.h"
#include "base/cuda_jit_registers.h"
#include "base/path_inside.h"
#include "base/scratch_allocator.h"
#include "base/spin_pool.h"
#include "base/version.h"
#include "deploy/artifact_manifest.h"
#include "deploy/cpu_features.h"
#include "deploy/cuda_device_memory.h"
#include "deploy/execution_plan.h"
#include "deploy/host_program.h"
#include "deploy/huge_page_buffer.h"
#include "host/host_graph_interpreter.h"

namespace tessel {

using namespace deploy;

const char *deploy_runtime_version() { return TESSEL_VERSION; }

namespace {

constexpr size_t kAlignment = 64;  // ARTIFACT.md: weight and arena offsets, and the arena itself

// ---- Halide's error messages -------------------------------------------------------------

// Halide reports a failure by calling the error handler, then returning non-zero from the
// kernel. Checks at a kernel's entry run on the calling thread (thread_local keeps concurrent
// Modules apart); a failure inside a parallel loop runs on a worker, hence the process-wide
// fallback.
thread_local std::string t_halide_error;
std::mutex g_halide_error_mutex;
std::string g_halide_error;

void on_halide_error(void * /*user_context*/, const char *message) {
  std::string m = message ? message : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  t_halide_error = m;
  std::lock_guard<std::mutex> lock(g_halide_error_mutex);
  g_halide_error = m;
}

// ---- kernels.so identity ---------------------------------------------------------------

// dlopen() returns an already loaded library when the path matches, even if the file at that
// path has since been replaced (a recompiled artifact): the process would run the old kernels
// with the new plan. Remember which file each path was loaded from and refuse the mix.
struct LoadedLibrary {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  struct timespec mtime = {};
  int live = 0;  // Modules holding it
};

std::mutex &library_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, LoadedLibrary> &loaded_libraries() {
  static std::map<std::string, LoadedLibrary> libraries;
  return libraries;
}

bool same_file(const LoadedLibrary &a, const struct stat &st) {
  return a.dev == st.st_dev && a.ino == st.st_ino && a.size == st.st_size && a.mtime.tv_sec == st.st_mtim.tv_sec &&
         a.mtime.tv_nsec == st.st_mtim.tv_nsec;
}

// ---- files ------------------------------------------------------------------------------

std::string join_path(const std::string &dir, const std::string &name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

/// Reads exactly `size` bytes of `relative`, inside the artifact `directory`, into
/// `destination`. open_inside follows no symbolic link: a file swapped for one after
/// check_file() looked at it is refused here, not read.
Result<void> read_exactly(const std::string &directory, const std::string &relative, uint8_t *destination, size_t size) {
  const std::string path = join_path(directory, relative);
  Result<OwnedFd> fd = open_inside(directory, relative, "artifact file");
  if (!fd.ok()) return fd.error();
  return read_exactly_at(fd.value(), 0, destination, size, path);
}

Result<std::string> read_file(const std::string &directory, const std::string &relative, size_t expected_size) {
  std::string data(expected_size, '\0');
  if (Result<void> r = read_exactly(directory, relative, reinterpret_cast<uint8_t *>(data.data()), expected_size); !r.ok())
    return r.error();
  return data;
}

std::string desc_text(DType dtype, const Shape &shape) { return dtype_name(dtype) + shape_to_string(shape); }

halide_type_t halide_type_of(DType d) {
  switch (d) {
    case DType::Float32: return halide_type_t(halide_type_float, 32);
    case DType::Float16: return halide_type_t(halide_type_float, 16);
    case DType::BFloat16: return halide_type_t(halide_type_bfloat, 16);
    case DType::Float64: return halide_type_t(halide_type_float, 64);
    // Halide's bool is a 1-bit uint stored one byte per element.
    case DType::Bool: return halide_type_t(halide_type_uint, 1);
    default: break;
  }
  const uint8_t bits = static_cast<uint8_t>(8 * dtype_size(d));
  return halide_type_t(dtype_is_signed_int(d) ? halide_type_int : halide_type_uint, bits);
}

// Where a buffer's bytes are: fixed at load (weights, arena) or the caller's, patched per run.
// On a GPU every tensor has a fixed device address instead (inputs and outputs have slots
// of their own that a run copies in and out).
struct Where {
  enum Kind : uint8_t { Fixed, Input, Output } kind = Fixed;
  int position = 0;
  uint8_t *fixed = nullptr;
  uint64_t device = 0;
};

struct KernelCall {
  std::string symbol;
  int (*entry)(void **) = nullptr;
  std::vector<halide_buffer_t> buffers;
  std::vector<std::vector<halide_dimension_t>> dims;  // per buffer; buffers[i].dim points here
  std::vector<void *> argv;                            // &buffers[i], what <symbol>_argv takes
  std::vector<Where> where;                            // per buffer
  std::vector<int> patched;                            // buffers whose host is an input or output
  bool serial = false;                                 // its parallel loops run on the caller only
  int gpu_max_registers = 0;  // cuda: the register cap its PTX is compiled under (0: Halide's)
  bool gpu_loaded = false;    // cuda: it has run once, so the driver has compiled its PTX
};

struct CopyCall {
  Where source, destination;
  size_t bytes = 0;
};

// A host step's tensor: fixed bytes (resolved per run like a kernel's), or a value of the
// run whose shape only the run decides.
struct HostArgument {
  int id = -1;  // -1: omitted input, or an output nothing reads
  bool run_time = false;
  Where where;
  DType dtype = DType::Float32;
  Shape shape;
};

struct HostCall {
  const HostNode *node = nullptr;
  std::vector<HostArgument> inputs, outputs;  // inputs end with the node's captures
};

struct StepRef {
  enum Kind : uint8_t { Kernel, Copy, Host } kind = Kernel;
  size_t index = 0;
};

}  // namespace

struct Module::Impl {
  std::string directory;
  std::string manifest_text;
  ArtifactManifest manifest;
  std::vector<TensorDesc> inputs, outputs;

  void *weights = nullptr;  // weights.bin, read into huge pages or mapped; null when empty
  size_t weights_size = 0;
  void *weights_mapping = nullptr;  // the region weights.bin is mapped into, when mapped
  size_t weights_mapping_bytes = 0;
  HugePageBuffer weights_copy;
  void *library = nullptr;  // dlopen handle of kernels.so
  std::string library_key;  // its realpath, in loaded_libraries()
  HugePageBuffer arena_memory;
  uint8_t *arena = nullptr;  // arena_memory's bytes

  // A cuda artifact: its weights, arena, inputs and outputs live on the GPU.
  bool gpu = false;
  std::unique_ptr<CudaDeviceMemory> device;
  std::vector<int64_t> device_input_offset, device_output_offset;  // per position
  std::vector<int64_t> input_bytes, output_bytes;                  // per position
  int64_t device_weights_offset = 0, device_arena_offset = 0;

  std::vector<KernelCall> kernels;
  std::vector<CopyCall> copies;
  // Host steps (host.json): their nodes, and the values of the run they produce by tensor id.
  HostProgram host_program;
  std::vector<HostCall> host_calls;
  std::map<int, Tensor> run_values;
  std::vector<int> run_time_output;  // per output position: its tensor id when run-time shaped, else -1
  std::vector<Tensor> run_time_results;  // per output position, after a run
  std::vector<StepRef> steps;
  bool profile = false;
  std::vector<std::vector<double>> kernel_ms;  // per kernel call, per run (when profiling)
  std::vector<std::vector<double>> host_ms;    // per host step, per run (when profiling)
  std::mutex mutex;  // one run at a time: the arena and the buffers' host pointers are shared

  Impl() = default;
  Impl(const Impl &) = delete;
  Impl &operator=(const Impl &) = delete;

  ~Impl() {
    // Device memory goes back through Halide's runtime, inside kernels.so: before dlclose.
    if (device) {
      for (KernelCall &k : kernels)
        for (halide_buffer_t &b : k.buffers) device->detach(b);
      device.reset();
    }
    if (weights_mapping) ::munmap(weights_mapping, weights_mapping_bytes);
    if (library) {
      std::lock_guard<std::mutex> lock(library_mutex());
      ::dlclose(library);
      auto it = loaded_libraries().find(library_key);
      if (it != loaded_libraries().end()) --it->second.live;
    }
  }

  Result<void> load(const std::string &path, const ModuleOptions &options);
  Result<void> check_manifest();
  Result<void> check_file(const ArtifactFile &file, const char *role);
  Result<void> open_library(const std::string &file, const OwnedFd &fd, const ModuleOptions &options);
  Result<void> check_plan_fits(const ExecutionPlan &plan) const;
  Result<void> build_steps(const ExecutionPlan &plan);
  /// How many of kernel step k's arguments it writes, from the kernel's Halide metadata.
  Result<int> kernel_outputs(const KernelStep &k) const;
  Result<void> allocate_device();
  void execute(const void *const *in, void *const *out);
  void execute_on_gpu(const void *const *in, void *const *out);
  void call_kernel(KernelCall &k);
  void call_host(const HostCall &h, const std::function<uint8_t *(const Where &)> &resolve);

  Error fail(const std::string &what) const { return make_error(directory + ": " + what); }
};

// ---- load -------------------------------------------------------------------------------

Result<void> Module::Impl::check_manifest() {
  const ArtifactManifest &m = manifest;
  const std::string where = join_path(directory, "manifest.json") + ": ";
  if (m.tessel_version != TESSEL_VERSION)
    return make_error(ErrorKind::Unsupported,
                      where + "compiled by tessel " + m.tessel_version + ", but this runtime is tessel " + TESSEL_VERSION +
                      " (recompile the model with this version)");
  if (m.arch != "x86-64")
    return make_error(ErrorKind::Unsupported,
                      where + "compiled for arch \"" + m.arch + "\"; this runtime runs x86-64 artifacts only");
#if !defined(__x86_64__)
  return make_error(ErrorKind::Unsupported,
                    where + "x86-64 artifact, but this runtime was built for another architecture");
#endif
  if (Result<void> cpu = check_cpu_features(m.required_cpu_features); !cpu.ok())
    return make_error(ErrorKind::Unsupported,
                      where + "cannot run on this machine: " + cpu.error().message +
                      (m.halide_target.empty() ? "" : " (kernels compiled for " + m.halide_target + ")"));
  // tessel's target string: a kind, then options ("llvm -mcpu=skylake-avx512").
  const std::string kind = m.target.substr(0, m.target.find(' '));
  if (kind != "llvm" && kind != "cuda")
    return make_error(ErrorKind::InvalidInput,
                      where + "unknown target \"" + m.target + "\" (this runtime runs \"llvm\" and \"cuda\" artifacts)");
  gpu = kind == "cuda";
  // The kernels must be what the target says: host code alone cannot run a cuda plan.
  const bool cuda_kernels = m.halide_target.find("-cuda") != std::string::npos;
  if (!m.halide_target.empty() && gpu != cuda_kernels)
    return make_error(ErrorKind::InvalidInput,
                      where + "target \"" + m.target + "\" but kernels compiled for " + m.halide_target);
  return {};
}

Result<void> Module::Impl::check_file(const ArtifactFile &file, const char *role) {
  // Paths stay inside the artifact: a manifest must not point the runtime elsewhere.
  const std::string &p = file.path;
  if (p.empty() || p[0] == '/' || p == ".." || p.rfind("../", 0) == 0 || p.find("/../") != std::string::npos ||
      (p.size() >= 3 && p.compare(p.size() - 3, 3, "/..") == 0))
    return fail("manifest.json: the " + std::string(role) + " file path \"" + p + "\" must be relative, inside the artifact");
  const std::string full = join_path(directory, p);
  struct stat st;
  if (::lstat(full.c_str(), &st) != 0)
    return make_error(errno == ENOENT ? ErrorKind::NotFound : ErrorKind::Io,
                      full + ": " + (errno == ENOENT ? std::string("missing") : std::strerror(errno)) + " (the artifact's " +
                      role + " file, listed in manifest.json)");
  // A symbolic link could make the runtime read or dlopen a file outside the artifact. This
  // names the role up front; every read then goes through open_inside, which refuses a link
  // anywhere along the path (a folder too) and reads what it checked.
  if (S_ISLNK(st.st_mode))
    return make_error(ErrorKind::InvalidInput,
                      full + ": a symbolic link; an artifact's files must be regular files inside it");
  if (!S_ISREG(st.st_mode)) return make_error(ErrorKind::InvalidInput, full + ": not a regular file");
  if (st.st_size != file.bytes)
    return fail("truncated or modified: " + p + " has " + std::to_string(st.st_size) + " bytes, the manifest says " +
                std::to_string(file.bytes));
  return {};
}

Result<void> Module::Impl::open_library(const std::string &file, const OwnedFd &fd, const ModuleOptions &options) {
  char resolved[PATH_MAX];
  if (!::realpath(file.c_str(), resolved)) return make_error(ErrorKind::Io, file + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return make_error(ErrorKind::Io, file + ": " + std::strerror(errno));
  // Loaded through the descriptor open_inside() checked (its /proc name), not by path: a
  // kernels.so swapped after the check is never loaded. Without /proc, the path is loaded
  // only if it still names the same file.
  const std::string by_descriptor = "/proc/self/fd/" + std::to_string(fd.get());
  struct stat named;
  const bool through_proc = ::stat(by_descriptor.c_str(), &named) == 0 && named.st_ino == st.st_ino && named.st_dev == st.st_dev;
  if (!through_proc && (::stat(resolved, &named) != 0 || named.st_ino != st.st_ino || named.st_dev != st.st_dev))
    return make_error(ErrorKind::Io, file + ": changed while the artifact was being loaded");
  const char *load_path = through_proc ? by_descriptor.c_str() : resolved;

  std::lock_guard<std::mutex> lock(library_mutex());
  auto known = loaded_libraries().find(resolved);
  if (known != loaded_libraries().end() && !same_file(known->second, st)) {
    bool still_loaded = known->second.live > 0;
    if (!still_loaded) {
      // Every Module using the old file is gone; check the library really was unloaded.
      if (void *h = ::dlopen(resolved, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
        ::dlclose(h);
        still_loaded = true;
      }
    }
    if (still_loaded)
      return make_error(ErrorKind::Unsupported,
                        file + ": replaced on disk while this process still has the previous kernels.so from the same "
                               "path loaded (dlopen would return the old kernels); destroy the Modules loaded from "
                               "the old artifact first");
    loaded_libraries().erase(known);
  }
  dlerror();
  void *handle = ::dlopen(load_path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return make_error(ErrorKind::Internal, file + ": cannot load the kernels: " + (why ? why : "dlopen failed"));
  }
  library = handle;
  library_key = resolved;
  LoadedLibrary &entry = loaded_libraries()[resolved];
  entry.dev = st.st_dev;
  entry.ino = st.st_ino;
  entry.size = st.st_size;
  entry.mtime = st.st_mtim;
  ++entry.live;

  auto set_error_handler =
      reinterpret_cast<halide_error_handler_t (*)(halide_error_handler_t)>(::dlsym(handle, "halide_set_error_handler"));
  if (!set_error_handler)
    return make_error(ErrorKind::InvalidInput,
                      file + ": has no halide_set_error_handler (was it linked with Halide's runtime?)");
  set_error_handler(&on_halide_error);
  // Parallel loops run on the runtime's spinning pool (spin_pool.h), shared by every Module.
  auto set_do_par_for =
      reinterpret_cast<halide_do_par_for_t (*)(halide_do_par_for_t)>(::dlsym(handle, "halide_set_custom_do_par_for"));
  if (!set_do_par_for)
    return make_error(ErrorKind::InvalidInput,
                      file + ": has no halide_set_custom_do_par_for (was it linked with Halide's runtime?)");
  set_do_par_for(&spin_pool_par_for);
  // Intermediates come from the scratch cache (scratch_allocator.h): without it every run
  // faulted its large blocks in again. Both setters are in every Halide runtime; a library
  // without them keeps Halide's malloc.
  using halide_malloc_fn = void *(*)(void *, size_t);
  using halide_free_fn = void (*)(void *, void *);
  auto set_malloc = reinterpret_cast<halide_malloc_fn (*)(halide_malloc_fn)>(::dlsym(handle, "halide_set_custom_malloc"));
  auto set_free = reinterpret_cast<halide_free_fn (*)(halide_free_fn)>(::dlsym(handle, "halide_set_custom_free"));
  if (set_malloc && set_free) {
    set_malloc(&scratch_allocate);
    set_free(&scratch_free);
  }
  spin_pool_set_pinning(options.pin_threads);
  if (options.threads > 0) spin_pool_set_threads(options.threads);
  return {};
}

// Before anything is mapped or opened: every tensor's bytes lie inside weights.bin or the arena,
// and every buffer Halide will see has 32-bit extents and strides.
Result<void> Module::Impl::check_plan_fits(const ExecutionPlan &plan) const {
  std::map<int, const PlanTensor *> by_id;
  for (const PlanTensor &t : plan.tensors) by_id[t.id] = &t;
  const std::string where = manifest.plan.path + ": ";
  for (const PlanTensor &t : plan.tensors) {
    if (run_time_shaped(t) || t.location == Location::Dynamic) continue;  // no bytes before the run
    const PlanTensor *root = &t;
    while (root->location == Location::View) root = by_id.at(static_cast<int>(root->argument));
    const int64_t bytes = *artifact_tensor_bytes(t.dtype, t.shape);
    const std::string name = "tensor " + std::to_string(t.id) + " (" + t.name + ")";
    if (root->location == Location::Weight || root->location == Location::Arena) {
      const bool weight = root->location == Location::Weight;
      const int64_t offset = root->argument;
      const int64_t limit = weight ? manifest.weights.bytes : manifest.arena_bytes;
      const char *what = weight ? "weight" : "arena";
      if (offset % static_cast<int64_t>(kAlignment) != 0)
        return fail(where + "tensor " + std::to_string(root->id) + " (" + root->name + "): " + what + " offset " +
                    std::to_string(offset) + " is not 64-byte aligned");
      if (offset > limit || bytes > limit - offset)
        return fail(where + name + " (" + std::to_string(bytes) + " bytes at " + what + " offset " + std::to_string(offset) +
                    ") runs past the end of " + (weight ? "weights.bin (" : "the arena (") + std::to_string(limit) +
                    " bytes in manifest.json)");
    }
    int64_t stride = 1;
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) {
      if (*d > INT32_MAX || stride > INT32_MAX)
        return fail(where + name + " " + desc_text(t.dtype, t.shape) + " is too large for Halide's 32-bit extents and strides");
      stride *= std::max<int64_t>(*d, 1);
    }
  }
  return {};
}

Result<int> Module::Impl::kernel_outputs(const KernelStep &k) const {
  // Halide writes a description of every kernel's arguments next to it: what the plan passes
  // must be what the kernel takes, inputs first, then the buffers it writes.
  const std::string entry = k.symbol + "_metadata";
  auto describe = reinterpret_cast<const halide_filter_metadata_t *(*)()>(::dlsym(library, entry.c_str()));
  const halide_filter_metadata_t *metadata = describe ? describe() : nullptr;
  if (!metadata)
    return make_error(ErrorKind::InvalidInput, "kernels.so has no " + entry + " (kernel " + k.symbol + " of plan.txt)");
  if (metadata->num_arguments != static_cast<int>(k.args.size()))
    return make_error(ErrorKind::InvalidInput,
                      "kernel " + k.symbol + " takes " + std::to_string(metadata->num_arguments) +
                      " arguments, plan.txt passes " + std::to_string(k.args.size()));
  int outputs = 0;
  for (int i = 0; i < metadata->num_arguments; ++i) {
    const bool output = metadata->arguments[i].kind == halide_argument_kind_output_buffer;
    if (!output && metadata->arguments[i].kind != halide_argument_kind_input_buffer)
      return make_error(ErrorKind::InvalidInput,
                        "kernel " + k.symbol + " takes a scalar argument; plan.txt passes only buffers");
    if (!output && outputs > 0)
      return make_error(ErrorKind::InvalidInput, "kernel " + k.symbol + " takes an input after an output");
    outputs += output;
  }
  return outputs;
}

Result<void> Module::Impl::build_steps(const ExecutionPlan &plan) {
  std::vector<int> outputs_per_kernel;
  std::map<int, const PlanTensor *> by_id;
  for (const PlanTensor &t : plan.tensors) by_id[t.id] = &t;

  // Every tensor's bytes: views resolve to the tensor they view (acyclic: parse_plan checked).
  std::map<int, Where> where_of;
  for (const PlanTensor &t : plan.tensors) {
    const PlanTensor *root = &t;
    while (root->location == Location::View) root = by_id.at(static_cast<int>(root->argument));
    Where w;
    switch (root->location) {
      case Location::Input: w.kind = Where::Input; w.position = static_cast<int>(root->argument); break;
      case Location::Output: w.kind = Where::Output; w.position = static_cast<int>(root->argument); break;
      // An empty weights.bin is not mapped; its (empty) tensors still need a non-null host.
      case Location::Weight: w.fixed = weights ? static_cast<uint8_t *>(weights) + root->argument : arena; break;
      case Location::Arena: w.fixed = arena + root->argument; break;
      case Location::View: break;  // unreachable: root is not a view
      case Location::Dynamic: break;  // a value of the run, not bytes: only host steps see it
    }
    if (device && root->location != Location::Dynamic && !run_time_shaped(*root)) {
      const int64_t offset = root->location == Location::Input    ? device_input_offset[w.position]
                             : root->location == Location::Output ? device_output_offset[w.position]
                             : root->location == Location::Weight ? device_weights_offset + root->argument
                                                                  : device_arena_offset + root->argument;
      w.device = device->address(offset);
    }
    where_of[t.id] = w;
  }

  for (const PlanStep &step : plan.steps) {
    if (const CopyStep *c = std::get_if<CopyStep>(&step)) {
      CopyCall call;
      call.source = where_of.at(c->source);
      call.destination = where_of.at(c->destination);
      call.bytes = static_cast<size_t>(*artifact_tensor_bytes(by_id.at(c->source)->dtype, by_id.at(c->source)->shape));
      steps.push_back({StepRef::Copy, copies.size()});
      copies.push_back(call);
      continue;
    }
    if (const HostStep *h = std::get_if<HostStep>(&step)) {
      if (h->node < 0 || static_cast<size_t>(h->node) >= host_program.nodes.size())
        return fail("plan.txt: host step of node " + std::to_string(h->node) + ", but host.json has " +
                    std::to_string(host_program.nodes.size()) + " nodes");
      HostCall call;
      call.node = &host_program.nodes[h->node];
      if (h->inputs.size() < call.node->captures.size())
        return fail("plan.txt: host step of node '" + call.node->node.name + "' passes fewer inputs than its " +
                    std::to_string(call.node->captures.size()) + " captured values");
      for (auto [ids, list] : {std::pair{&h->inputs, &call.inputs}, std::pair{&h->outputs, &call.outputs}})
        for (int id : *ids) {
          HostArgument a;
          a.id = id;
          if (id >= 0) {
            const PlanTensor &t = *by_id.at(id);
            a.run_time = run_time_shaped(t) || t.location == Location::Dynamic;
            a.where = where_of.at(id);
            a.dtype = t.dtype;
            a.shape = t.shape;
          }
          list->push_back(a);
        }
      steps.push_back({StepRef::Host, host_calls.size()});
      host_calls.push_back(std::move(call));
      continue;
    }
    if (std::holds_alternative<JoinStep>(step)) continue;  // its parts were computed in place
    const KernelStep &k = std::get<KernelStep>(step);
    KernelCall call;
    call.symbol = k.symbol;
    const std::string entry = k.symbol + "_argv";
    call.entry = reinterpret_cast<int (*)(void **)>(::dlsym(library, entry.c_str()));
    if (!call.entry) return fail("kernels.so has no " + entry + " (kernel " + k.symbol + " of plan.txt)");
    auto written = kernel_outputs(k);
    if (!written.ok()) return fail(written.error().message);
    outputs_per_kernel.push_back(written.value());
    for (int id : k.args) {
      const PlanTensor &t = *by_id.at(id);
      const int rank = static_cast<int>(t.shape.size());
      std::vector<halide_dimension_t> dims(rank);
      int64_t stride = 1;
      // Halide's dimension 0 is the innermost (last ONNX) axis.
      for (int i = 0; i < rank; ++i) {
        const int64_t extent = t.shape[rank - 1 - i];  // fits: check_plan_fits
        dims[i] = halide_dimension_t(0, static_cast<int32_t>(extent), static_cast<int32_t>(stride));
        stride *= std::max<int64_t>(extent, 1);
      }
      halide_buffer_t b{};
      b.device = 0;
      b.device_interface = nullptr;
      b.flags = 0;  // neither side dirty: host memory only
      b.type = halide_type_of(t.dtype);
      b.dimensions = rank;
      const Where w = where_of.at(id);
      if (device) {
        // The kernel reads and writes the device only; nothing on the host side.
        if (Result<void> r = device->wrap(b, w.device); !r.ok()) return fail("kernel " + k.symbol + ": " + r.error().message);
      } else {
        b.host = w.kind == Where::Fixed ? w.fixed : nullptr;
        if (w.kind != Where::Fixed) call.patched.push_back(static_cast<int>(call.buffers.size()));
      }
      call.where.push_back(w);
      call.buffers.push_back(b);
      call.dims.push_back(std::move(dims));
    }
    // Pointers into the vectors only now that they have stopped growing.
    for (size_t i = 0; i < call.buffers.size(); ++i) {
      call.buffers[i].dim = call.dims[i].empty() ? nullptr : call.dims[i].data();
      call.argv.push_back(&call.buffers[i]);
    }
    call.serial = k.serial;
    if (auto cap = manifest.gpu_max_registers.find(k.symbol); cap != manifest.gpu_max_registers.end())
      call.gpu_max_registers = cap->second;
    steps.push_back({StepRef::Kernel, kernels.size()});
    kernels.push_back(std::move(call));  // moving the vectors keeps their heap storage in place
  }
  if (Result<void> flow = check_data_flow(plan, outputs_per_kernel); !flow.ok()) return fail(flow.error().message);
  return {};
}

Result<void> Module::Impl::load(const std::string &path, const ModuleOptions &options) {
  directory = path;
  if (options.threads < 0)
    return make_error(ErrorKind::InvalidInput,
                      "ModuleOptions.threads must be >= 0, got " + std::to_string(options.threads));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return make_error(errno == ENOENT ? ErrorKind::NotFound : ErrorKind::Io,
                      path + ": " + (errno == ENOENT ? std::string("no such artifact directory") : std::strerror(errno)));
  if (!S_ISDIR(st.st_mode))
    return make_error(ErrorKind::InvalidInput,
                      path + ": not an artifact directory (an artifact is a directory like model.tsl/)");

  // manifest.json: what it is and whether this runtime can run it here.
  const std::string manifest_path = join_path(path, "manifest.json");
  if (::lstat(manifest_path.c_str(), &st) != 0)
    return make_error(errno == ENOENT ? ErrorKind::NotFound : ErrorKind::Io,
                      manifest_path + ": " + (errno == ENOENT ? std::string("missing (not a tessel artifact?)") : std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return make_error(ErrorKind::InvalidInput,
                      manifest_path + ": not a regular file" + (S_ISLNK(st.st_mode) ? " (a symbolic link)" : ""));
  Result<std::string> text = read_file(path, "manifest.json", static_cast<size_t>(st.st_size));
  if (!text.ok()) return text.error();
  manifest_text = std::move(text).value();
  Result<ArtifactManifest> parsed = parse_manifest(manifest_text);
  if (!parsed.ok()) return make_error(ErrorKind::InvalidInput, manifest_path + ": " + parsed.error().message);
  manifest = std::move(parsed).value();
  if (Result<void> r = check_manifest(); !r.ok()) return r;

  // The three files: present, the size the manifest says, then (optionally) the hash.
  for (auto [file, role] : {std::pair{&manifest.plan, "plan"}, std::pair{&manifest.weights, "weights"},
                            std::pair{&manifest.kernels, "kernels"}})
    if (Result<void> r = check_file(*file, role); !r.ok()) return r;
  if (manifest.host)
    if (Result<void> r = check_file(*manifest.host, "host"); !r.ok()) return r;
  auto check_hash = [&](const ArtifactFile &f, const void *data, size_t size) -> Result<void> {
    if (!options.verify_hashes) return {};
    std::string h = fnv1a64_hex(data, size);
    if (h != f.fnv1a64)
      return fail("modified: " + f.path + " has FNV-1a 64 " + h + ", the manifest says " + f.fnv1a64);
    return {};
  };

  Result<std::string> plan_text = read_file(path, manifest.plan.path, static_cast<size_t>(manifest.plan.bytes));
  if (!plan_text.ok()) return plan_text.error();
  if (Result<void> r = check_hash(manifest.plan, plan_text.value().data(), plan_text.value().size()); !r.ok()) return r;
  Result<ExecutionPlan> plan = parse_plan(plan_text.value());
  if (!plan.ok()) return fail(manifest.plan.path + " " + plan.error().message);
  const bool host_steps = std::any_of(plan->steps.begin(), plan->steps.end(),
                                      [](const PlanStep &s) { return std::holds_alternative<HostStep>(s); });
  if (host_steps && !manifest.host) return fail(manifest.plan.path + " has host steps, but manifest.json lists no host file");
  if (host_steps && gpu) return fail("host steps run in CPU artifacts only, and this is a " + manifest.target + " artifact");
  if (manifest.host) {
    Result<std::string> host_text = read_file(path, manifest.host->path, static_cast<size_t>(manifest.host->bytes));
    if (!host_text.ok()) return host_text.error();
    if (Result<void> r = check_hash(*manifest.host, host_text.value().data(), host_text.value().size()); !r.ok()) return r;
    Result<HostProgram> program = parse_host_program(host_text.value());
    if (!program.ok()) return fail(program.error().message);
    host_program = std::move(program).value();
  }
  for (int id : plan->outputs) {
    const auto t = std::find_if(plan->tensors.begin(), plan->tensors.end(), [&](const PlanTensor &p) { return p.id == id; });
    run_time_output.push_back(t != plan->tensors.end() && run_time_shaped(*t) ? id : -1);
  }

  // The plan's inputs and outputs are the manifest's.
  for (auto [list, ids, kind] : {std::tuple{&manifest.inputs, &plan->inputs, "input"},
                                 std::tuple{&manifest.outputs, &plan->outputs, "output"}}) {
    if (list->size() != ids->size())
      return fail(std::string("manifest.json lists ") + std::to_string(list->size()) + " " + kind + "s, " +
                  manifest.plan.path + " has " + std::to_string(ids->size()));
    for (size_t i = 0; i < ids->size(); ++i) {
      const ArtifactTensor &declared = (*list)[i];
      for (const PlanTensor &t : plan->tensors)
        if (t.id == (*ids)[i] && (t.dtype != declared.dtype || t.shape != declared.shape))
          return fail(std::string(kind) + " " + std::to_string(i) + " (" + declared.name + ") is " +
                      desc_text(t.dtype, t.shape) + " in " + manifest.plan.path + " but " +
                      desc_text(declared.dtype, declared.shape) + " in manifest.json");
    }
  }
  if (Result<void> r = check_plan_fits(plan.value()); !r.ok()) return r;
  for (const ArtifactTensor &t : manifest.inputs) inputs.push_back({t.name, t.dtype, t.shape});
  for (const ArtifactTensor &t : manifest.outputs) outputs.push_back({t.name, t.dtype, t.shape});

  // weights.bin: read into huge pages (ModuleOptions::weights_in_huge_pages) or mapped
  // read-only; the kernels only read it.
  const std::string weights_path = join_path(path, manifest.weights.path);
  weights_size = static_cast<size_t>(manifest.weights.bytes);
  if (weights_size > 0 && options.weights_in_huge_pages) {
    // Read straight into huge pages, so that no second copy is ever resident.
    if (!weights_copy.allocate(weights_size))
      return fail("cannot allocate " + std::to_string(weights_size) + " bytes for the weights: " + std::strerror(errno));
    if (Result<void> r = read_exactly(path, manifest.weights.path, weights_copy.data(), weights_size); !r.ok()) return r;
    weights = weights_copy.data();
  } else if (weights_size > 0) {
    Result<OwnedFd> weights_file = open_inside(path, manifest.weights.path, "artifact file");
    if (!weights_file.ok()) return weights_file.error();
    const int fd = weights_file.value().get();
    // A readable page on either side, as HugePageBuffer leaves (Halide may read a few bytes
    // past a buffer's edge): the file is mapped into the middle of a reserved region.
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t reserved = (weights_size + page - 1) / page * page + 2 * page;
    void *region = ::mmap(nullptr, reserved, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *map = region == MAP_FAILED ? MAP_FAILED
                                     : ::mmap(static_cast<uint8_t *>(region) + page, weights_size, PROT_READ,
                                              MAP_PRIVATE | MAP_FIXED, fd, 0);
    int err = errno;
    if (region != MAP_FAILED) {
      weights_mapping = region;
      weights_mapping_bytes = reserved;
    }
    if (map == MAP_FAILED) return make_error(ErrorKind::Internal, weights_path + ": cannot map: " + std::strerror(err));
    weights = map;
  }
  if (Result<void> r = check_hash(manifest.weights, weights, weights_size); !r.ok()) return r;

  // kernels.so: opened once, hashed from that descriptor, then loaded through it, so the
  // file hashed is the file loaded.
  const std::string kernels_path = join_path(path, manifest.kernels.path);
  Result<OwnedFd> kernels_file = open_inside(path, manifest.kernels.path, "artifact file");
  if (!kernels_file.ok()) return kernels_file.error();
  if (options.verify_hashes) {
    std::string bytes(static_cast<size_t>(manifest.kernels.bytes), '\0');
    if (Result<void> r = read_exactly_at(kernels_file.value(), 0, bytes.data(), bytes.size(), kernels_path); !r.ok())
      return r;
    if (Result<void> r = check_hash(manifest.kernels, bytes.data(), bytes.size()); !r.ok()) return r;
  }
  if (Result<void> r = open_library(kernels_path, kernels_file.value(), options); !r.ok()) return r;

  // The arena, once, aligned; at least one line so no buffer's host pointer is null (Halide
  // would take a null host for a bounds query).
  // A cuda artifact's arena is on the GPU: the host keeps one line for empty weights.
  const size_t arena_size =
      gpu ? 0 : (static_cast<size_t>(manifest.arena_bytes) + kAlignment - 1) / kAlignment * kAlignment;
  if (!arena_memory.allocate(std::max(arena_size, kAlignment)))
    return fail("cannot allocate the arena of " + std::to_string(manifest.arena_bytes) + " bytes: " + std::strerror(errno));
  arena = arena_memory.data();
  std::memset(arena, 0, std::max(arena_size, kAlignment));  // its pages are faulted in now, not in the first run

  if (gpu)
    if (Result<void> r = allocate_device(); !r.ok()) return r;
  if (Result<void> r = build_steps(plan.value()); !r.ok()) return r;
  profile = options.profile;
  kernel_ms.assign(kernels.size(), {});
  host_ms.assign(host_calls.size(), {});
  return {};
}

// One device allocation: weights.bin (uploaded now), the arena, then a slot per input and
// per output. The host copy of the weights is let go once it is on the GPU.
Result<void> Module::Impl::allocate_device() {
  auto aligned = [](int64_t bytes) { return (bytes + int64_t{kAlignment} - 1) / int64_t{kAlignment} * int64_t{kAlignment}; };
  int64_t end = aligned(static_cast<int64_t>(weights_size));
  device_arena_offset = end;
  end += aligned(manifest.arena_bytes);
  for (auto [declared, offsets, sizes] : {std::tuple{&manifest.inputs, &device_input_offset, &input_bytes},
                                          std::tuple{&manifest.outputs, &device_output_offset, &output_bytes}})
    for (const ArtifactTensor &t : *declared) {
      const int64_t bytes = *artifact_tensor_bytes(t.dtype, t.shape);
      offsets->push_back(end);
      sizes->push_back(bytes);
      end += aligned(bytes);
    }
  // A message is read once: a later failure that reports none must not show this one.
  auto memory = CudaDeviceMemory::create(library, end, [] { return std::exchange(t_halide_error, std::string()); });
  if (!memory.ok()) return fail(memory.error().message);
  device = std::move(memory.value());
  if (weights_size > 0)
    if (Result<void> r = device->upload(weights, device->address(device_weights_offset), static_cast<int64_t>(weights_size));
        !r.ok())
      return fail("uploading weights.bin to the GPU: " + r.error().message);
  weights_copy = HugePageBuffer();
  if (weights_mapping) ::munmap(weights_mapping, weights_mapping_bytes);
  weights_mapping = nullptr;
  weights = nullptr;
  return {};
}

// ---- run --------------------------------------------------------------------------------

void Module::Impl::call_kernel(KernelCall &k) {
  for (halide_buffer_t &b : k.buffers) b.flags = 0;
  t_halide_error.clear();
  const int rc = k.entry(k.argv.data());
  if (rc != 0) {
    std::string why = t_halide_error;
    if (why.empty()) {
      std::lock_guard<std::mutex> lock(g_halide_error_mutex);
      why = g_halide_error;
    }
    if (why.empty()) why = "Halide error code " + std::to_string(rc);
    throw ModuleError("kernel " + k.symbol + " failed: " + why);
  }
}

void Module::Impl::execute_on_gpu(const void *const *in, void *const *out) {
  auto check = [&](Result<void> r, const std::string &what) {
    if (!r.ok()) throw ModuleError(directory + ": " + what + ": " + r.error().message);
  };
  for (size_t p = 0; p < inputs.size(); ++p)
    check(device->upload(in[p], device->address(device_input_offset[p]), input_bytes[p]),
          "copying input '" + inputs[p].name + "' to the GPU");
  for (const StepRef &s : steps) {
    if (s.kind == StepRef::Copy) {
      const CopyCall &c = copies[s.index];
      check(device->copy(c.source.device, c.destination.device, static_cast<int64_t>(c.bytes)), "a copy step");
      continue;
    }
    KernelCall &k = kernels[s.index];
    if (!k.gpu_loaded) {
      // Halide's runtime has the driver compile a kernel's PTX on its first call.
      set_cuda_jit_register_cap(k.gpu_max_registers);
      k.gpu_loaded = true;
    }
    const auto start = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    call_kernel(k);
    if (profile) {
      // Launches are asynchronous: a kernel's time ends when the GPU has finished it.
      check(device->synchronize(), "kernel " + k.symbol);
      kernel_ms[s.index].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
  }
  // Copies to the host wait for every kernel before them.
  for (size_t p = 0; p < outputs.size(); ++p)
    check(device->download(device->address(device_output_offset[p]), out[p], output_bytes[p]),
          "copying output '" + outputs[p].name + "' from the GPU");
}

void Module::Impl::execute(const void *const *in, void *const *out) {
  if (device) return execute_on_gpu(in, out);
  SpinPoolCallerPin pinned;
  auto resolve = [&](const Where &w) -> uint8_t * {
    switch (w.kind) {
      case Where::Input: return const_cast<uint8_t *>(static_cast<const uint8_t *>(in[w.position]));
      case Where::Output: return static_cast<uint8_t *>(out[w.position]);
      default: return w.fixed;
    }
  };
  run_values.clear();
  for (const StepRef &s : steps) {
    if (s.kind == StepRef::Copy) {
      const CopyCall &c = copies[s.index];
      uint8_t *dst = resolve(c.destination);
      const uint8_t *src = resolve(c.source);
      if (dst != src && c.bytes) std::memmove(dst, src, c.bytes);
      continue;
    }
    if (s.kind == StepRef::Host) {
      const auto start = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      call_host(host_calls[s.index], resolve);
      if (profile)
        host_ms[s.index].push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      continue;
    }
    KernelCall &k = kernels[s.index];
    for (int b : k.patched) k.buffers[b].host = resolve(k.where[b]);
    const auto start = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    {
      SpinPoolSerialScope serial(k.serial);
      call_kernel(k);
    }
    if (profile)
      kernel_ms[s.index].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  run_time_results.assign(run_time_output.size(), Tensor());
  for (size_t p = 0; p < run_time_output.size(); ++p)
    if (run_time_output[p] >= 0) {
      auto value = run_values.find(run_time_output[p]);
      if (value == run_values.end()) throw ModuleError(directory + ": output " + std::to_string(p) + " was never computed");
      run_time_results[p] = value->second;
    }
  run_values.clear();
}

void Module::Impl::call_host(const HostCall &h, const std::function<uint8_t *(const Where &)> &resolve) {
  const Node &node = h.node->node;
  const std::string where = "host step '" + node.name + "' (" + node.op_type + ")";
  std::vector<Tensor> fixed;  // views of bytes the plan placed; reserved so pointers stay put
  fixed.reserve(h.inputs.size());
  std::vector<const Tensor *> inputs;
  for (const HostArgument &a : h.inputs) {
    if (a.id < 0) {
      inputs.push_back(nullptr);
    } else if (a.run_time) {
      auto value = run_values.find(a.id);
      if (value == run_values.end()) throw ModuleError(where + ": reads tensor " + std::to_string(a.id) + " before any step made it");
      inputs.push_back(&value->second);
    } else {
      fixed.push_back(Tensor::wrap(a.dtype, a.shape, resolve(a.where)));
      inputs.push_back(&fixed.back());
    }
  }
  const size_t own_inputs = inputs.size() - h.node->captures.size();
  HostScope scope;
  for (size_t c = 0; c < h.node->captures.size(); ++c)
    if (inputs[own_inputs + c]) scope.values[h.node->captures[c]] = *inputs[own_inputs + c];
  inputs.resize(own_inputs);
  Result<std::vector<Tensor>> results = run_node_on_host(node, host_program.opset, inputs, h.outputs.size(), scope);
  if (!results.ok()) throw ModuleError(directory + ": " + where + ": " + results.error().message);
  for (size_t o = 0; o < h.outputs.size(); ++o) {
    const HostArgument &a = h.outputs[o];
    if (a.id < 0) continue;
    if (o >= results->size() || !(*results)[o].defined())
      throw ModuleError(directory + ": " + where + ": output " + std::to_string(o) + " was not computed");
    const Tensor &value = (*results)[o];
    if (value.dtype() != a.dtype)
      throw ModuleError(directory + ": " + where + ": output " + std::to_string(o) + " is " + dtype_name(value.dtype()) +
                        ", the plan says " + dtype_name(a.dtype));
    if (a.run_time) {
      // A value that only borrows bytes the plan reuses (a view of an arena tensor) is copied.
      run_values[a.id] = value.storage() ? value : value.clone();
      continue;
    }
    if (value.shape() != a.shape)
      throw ModuleError(directory + ": " + where + ": output " + std::to_string(o) + " has shape " +
                        shape_to_string(value.shape()) + ", the plan says " + shape_to_string(a.shape));
    if (value.bytes()) std::memmove(resolve(a.where), value.data(), value.bytes());
  }
}

Module Module::load(const std::string &path, const ModuleOptions &options) {
  auto impl = std::make_unique<Impl>();
  Result<void> r = impl->load(path, options);
  if (!r.ok()) throw ModuleError(r.error().message);
  return Module(std::move(impl));
}

Module::Module(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Module::Module(Module &&) noexcept = default;
Module &Module::operator=(Module &&) noexcept = default;
Module::~Module() = default;

namespace {
// A template so it need not name the private Module::Impl.
template <typename T>
T &checked(const std::unique_ptr<T> &impl) {
  if (!impl) throw ModuleError("use of a moved-from tessel::Module");
  return *impl;
}
}  // namespace

const std::vector<TensorDesc> &Module::inputs() const { return checked(impl_).inputs; }
const std::vector<TensorDesc> &Module::outputs() const { return checked(impl_).outputs; }
int64_t Module::arena_bytes() const { return checked(impl_).manifest.arena_bytes; }
void Module::evict_weights() const {
  const Impl &impl = checked(impl_);
  if (impl.weights && impl.weights_size > 0) evict_from_caches(impl.weights, impl.weights_size);
}
int Module::kernel_count() const { return static_cast<int>(checked(impl_).kernels.size()); }
int Module::host_step_count() const { return static_cast<int>(checked(impl_).host_calls.size()); }
const std::string &Module::manifest_json() const { return checked(impl_).manifest_text; }

std::vector<KernelTimes> Module::kernel_times() const {
  Impl &m = checked(impl_);
  std::lock_guard<std::mutex> lock(m.mutex);
  std::vector<KernelTimes> out;
  if (!m.profile) return out;
  for (size_t i = 0; i < m.kernels.size(); ++i)
    out.push_back({m.kernels[i].symbol, static_cast<int>(i), m.kernel_ms[i], m.kernels[i].serial});
  return out;
}

std::vector<HostStepTimes> Module::host_step_times() const {
  Impl &m = checked(impl_);
  std::lock_guard<std::mutex> lock(m.mutex);
  std::vector<HostStepTimes> out;
  if (!m.profile) return out;
  for (size_t i = 0; i < m.host_calls.size(); ++i)
    out.push_back({m.host_calls[i].node->node.op_type, m.host_calls[i].node->node.name, m.host_ms[i]});
  return out;
}

void Module::clear_kernel_times() {
  Impl &m = checked(impl_);
  std::lock_guard<std::mutex> lock(m.mutex);
  for (std::vector<double> &times : m.kernel_ms) times.clear();
  for (std::vector<double> &times : m.host_ms) times.clear();
}

void Module::set_kernel_serial(int call, bool serial) {
  Impl &m = checked(impl_);
  std::lock_guard<std::mutex> lock(m.mutex);
  if (call < 0 || static_cast<size_t>(call) >= m.kernels.size())
    throw ModuleError("set_kernel_serial: no kernel call " + std::to_string(call) + " (the plan has " +
                      std::to_string(m.kernels.size()) + ")");
  m.kernels[call].serial = serial;
}

void Module::use_kernel(int call, const std::string &symbol) {
  Impl &m = checked(impl_);
  std::lock_guard<std::mutex> lock(m.mutex);
  if (call < 0 || static_cast<size_t>(call) >= m.kernels.size())
    throw ModuleError("use_kernel: no kernel call " + std::to_string(call) + " (the plan has " +
                      std::to_string(m.kernels.size()) + ")");
  const std::string entry = symbol + "_argv";
  auto function = reinterpret_cast<int (*)(void **)>(::dlsym(m.library, entry.c_str()));
  if (!function) throw ModuleError(m.directory + ": kernels.so has no " + entry);
  m.kernels[call].symbol = symbol;
  m.kernels[call].entry = function;
}

std::vector<Tensor> Module::run(const std::vector<Tensor> &inputs) {
  Impl &m = checked(impl_);
  if (inputs.size() != m.inputs.size())
    throw ModuleError("run: the model takes " + std::to_string(m.inputs.size()) + " input" +
                      (m.inputs.size() == 1 ? "" : "s") + ", got " + std::to_string(inputs.size()));
  std::vector<const void *> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc &d = m.inputs[i];
    const Tensor &t = inputs[i];
    if (t.dtype() != d.dtype || t.shape() != d.shape)
      throw ModuleError("run: input '" + d.name + "' (position " + std::to_string(i) + "): expected " +
                        desc_text(d.dtype, d.shape) + ", got " +
                        (t.defined() ? desc_text(t.dtype(), t.shape()) : std::string("an empty tensor")));
    if (!t.data()) throw ModuleError("run: input '" + d.name + "' has no data");
    in[i] = t.data();
  }
  std::vector<Tensor> outputs;
  std::vector<void *> out;
  for (size_t p = 0; p < m.outputs.size(); ++p) {
    // An output whose shape the run decides is the run's own value, not a buffer filled in place.
    const TensorDesc &d = m.outputs[p];
    outputs.push_back(m.run_time_output[p] >= 0 ? Tensor() : Tensor(d.dtype, d.shape));
    out.push_back(outputs.back().data());
  }
  std::lock_guard<std::mutex> lock(m.mutex);
  m.execute(in.data(), out.data());
  for (size_t p = 0; p < outputs.size(); ++p)
    if (m.run_time_output[p] >= 0) outputs[p] = std::move(m.run_time_results[p]);
  return outputs;
}

std::map<std::string, Tensor> Module::run_named(const std::map<std::string, Tensor> &inputs) {
  Impl &m = checked(impl_);
  std::vector<Tensor> ordered;
  std::string missing, unknown, expected;
  for (const TensorDesc &d : m.inputs) {
    expected += (expected.empty() ? "'" : ", '") + d.name + "'";
    auto it = inputs.find(d.name);
    if (it == inputs.end()) missing += (missing.empty() ? "'" : ", '") + d.name + "'";
    else ordered.push_back(it->second);
  }
  for (const auto &[name, tensor] : inputs) {
    bool known = false;
    for (const TensorDesc &d : m.inputs) known = known || d.name == name;
    if (!known) unknown += (unknown.empty() ? "'" : ", '") + name + "'";
  }
  if (!missing.empty() || !unknown.empty()) {
    std::string message = "run_named:";
    if (!missing.empty()) message += " missing input" + std::string(missing.find(',') != std::string::npos ? "s " : " ") + missing + ";";
    if (!unknown.empty()) message += " unknown input" + std::string(unknown.find(',') != std::string::npos ? "s " : " ") + unknown + ";";
    throw ModuleError(message + " the model's inputs are " + (expected.empty() ? std::string("none") : expected));
  }
  std::vector<Tensor> results = run(ordered);
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < results.size(); ++i) named.emplace(m.outputs[i].name, std::move(results[i]));
  return named;
}

void Module::run_raw(const std::vector<const void *> &inputs, const std::vector<void *> &outputs) {
  Impl &m = checked(impl_);
  if (inputs.size() != m.inputs.size() || outputs.size() != m.outputs.size())
    throw ModuleError("run_raw: the model takes " + std::to_string(m.inputs.size()) + " inputs and " +
                      std::to_string(m.outputs.size()) + " outputs, got " + std::to_string(inputs.size()) + " and " +
                      std::to_string(outputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) throw ModuleError("run_raw: input '" + m.inputs[i].name + "' is a null pointer");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i]) throw ModuleError("run_raw: output '" + m.outputs[i].name + "' is a null pointer");
    if (m.run_time_output[i] >= 0)
      throw ModuleError("run_raw: output '" + m.outputs[i].name + "' has a shape only the run decides; use run()");
  }
  std::lock_guard<std::mutex> lock(m.mutex);
  m.execute(inputs.data(), outputs.data());
}

}  // namespace tessel
