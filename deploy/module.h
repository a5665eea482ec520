#pragma once
// The deploy runtime's C++ API: load an artifact written by `tessel compile` and run it.
// Links no Halide JIT, LLVM or ONNX: only the kernels' shared library (with Halide's small
// runtime inside), the C++ standard library, libdl and pthreads.
//
//   auto module = tessel::Module::load("model.tsl");           // throws tessel::ModuleError
//   std::vector<tessel::Tensor> out = module.run({input});     // positional
//   auto named = module.run_named({{"input", input}});         // by name
//
// A Module is movable, not copyable. run() on one Module is serialized by a mutex (the arena
// is per module); separate Modules run concurrently from different threads.
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace tessel {

/// Every load or run failure: a message naming the file, tensor or kernel at fault.
class ModuleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The tessel version this runtime was built as: an artifact's "tessel_version" must equal it.
const char *deploy_runtime_version();

struct ModuleOptions {
  int threads = 0;             // threads of the kernels' parallel loops (spin_pool.h); 0: HL_NUM_THREADS or all cores
  bool verify_hashes = true;   // check every file against the manifest's FNV-1a 64 hashes
  bool profile = false;        // time every kernel call of every run (see Module::kernel_times)
  /// Read the weights into transparent huge pages (huge_page_buffer.h): fewer TLB misses
  /// on every run, for a copy at load and memory no longer shared with other processes
  /// running the same artifact. false maps weights.bin read-only instead.
  bool weights_in_huge_pages = true;
  /// Pin the pool's threads to CPUs, and the thread calling run() to its own for the run
  /// (spin_pool_set_pinning). Process-wide: the last Module loaded decides.
  bool pin_threads = true;
};

/// Wall time of one kernel call of the plan over the runs since load (ModuleOptions::profile).
struct KernelTimes {
  std::string symbol;       // the kernel's entry (a kernel may be called by several steps)
  int step = 0;             // its position among the plan's kernel calls
  std::vector<double> ms;   // one per run, in run order
  bool serial = false;      // runs its parallel loops on the calling thread only
};

/// Wall time of one host step (host.json's node) over the runs since load.
struct HostStepTimes {
  std::string op_type, name;
  std::vector<double> ms;  // one per run, in run order
};

struct TensorDesc {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
};

class Module {
 public:
  /// Loads the artifact directory at `path`: reads and checks the manifest (format and
  /// tessel version, target, this CPU's features), file sizes and hashes, the plan; reads
  /// the weights into huge pages or maps them (ModuleOptions::weights_in_huge_pages);
  /// opens the kernels; allocates the arena (in huge pages).
  static Module load(const std::string &path, const ModuleOptions &options = {});

  Module(Module &&) noexcept;
  Module &operator=(Module &&) noexcept;
  ~Module();

  const std::vector<TensorDesc> &inputs() const;
  const std::vector<TensorDesc> &outputs() const;
  /// Bytes of the arena (intermediate tensors) allocated once at load.
  int64_t arena_bytes() const;
  /// Evicts the weights from every CPU cache level, as a model's other layers do between
  /// two calls (how `tessel bench --cold` times an artifact).
  void evict_weights() const;
  /// Kernel calls per run.
  int kernel_count() const;
  /// Nodes computed on the host per run (host.json: shapes only a run decides).
  int host_step_count() const;
  /// The manifest's text.
  const std::string &manifest_json() const;
  /// Per kernel call of the plan, in plan order: its times in every run so far; empty
  /// unless the module was loaded with ModuleOptions::profile.
  std::vector<KernelTimes> kernel_times() const;
  /// Per host step, in plan order: its times in every run so far (ModuleOptions::profile).
  std::vector<HostStepTimes> host_step_times() const;
  /// Forgets the kernel (and host step) times recorded so far.
  void clear_kernel_times();
  /// Makes kernel call `call` (plan order) run `symbol`, another entry of kernels.so that
  /// takes the same arguments: how a trial artifact compares a task's schedules inside the
  /// model (in_graph_selection.h). Throws ModuleError when kernels.so has no such entry.
  void use_kernel(int call, const std::string &symbol);
  /// Makes kernel call `call` run its parallel loops on the calling thread only (or on the
  /// pool again): how `tessel compile` measures which kernels a second thread slows down.
  void set_kernel_serial(int call, bool serial);

  /// Runs with one tensor per input in order (dtype and shape must match exactly);
  /// returns newly allocated outputs.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs);
  /// Same, inputs by name (every input exactly once).
  std::map<std::string, Tensor> run_named(const std::map<std::string, Tensor> &inputs);
  /// Raw buffers: one pointer per input and per output, dense, of the declared types and
  /// shapes; outputs are written in place. Nothing is allocated.
  void run_raw(const std::vector<const void *> &inputs, const std::vector<void *> &outputs);

 private:
  struct Impl;
  explicit Module(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessel
