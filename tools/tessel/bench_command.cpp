// `tessel bench matmul 1024x1024x1024 --vs openblas,onednn,adams2019`: a kernel (or every task
// of a model, or one workload of the database) timed in one process against its peers,
// interleaved, with medians, spread, GFLOP/s or GB/s, share of the machine's peak and ratios.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <thread>

#include "base/json.h"
#include "base/spin_pool.h"
#include "codegen/cuda_device.h"
#include "graph/fusion/fuse.h"
#include "graph/fusion/workload_graph.h"
#include "peers/bench_gpu.h"
#include "peers/bench_rows.h"
#include "peers/bench_tasks.h"
#include "peers/bench_table.h"
#include "peers/machine_peak.h"
#include "peers/process_env.h"
#include "peers/timing.h"
#include "task/task.h"
#include "tools/tessel/commands.h"
#include "tuner/benchmark_problems.h"
#include "tuner/kernel_timing.h"
#include "tuner/tune_model.h"
#include "tuning_db/database_location.h"

namespace tessel {

namespace {

const std::vector<std::string> kPeers = {"default", "adams2019", "onednn", "openblas"};
/// Without --vs: every peer that is ready in seconds. Adams2019's beam search takes minutes
/// on a conv (15+ min for README's 3x3 conv example on a 2-core host), so it is asked for by name.
const std::vector<std::string> kDefaultPeers = {"default", "onednn", "openblas"};


/// OpenBLAS 0.3.21 does not know Zen 4/5 and falls back to slower kernels; its SkylakeX
/// kernels are right for any CPU with these AVX-512 subsets. Elsewhere it detects the CPU.
std::string openblas_coretype() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return avx512 ? "SkylakeX" : "";
}




}  // namespace

int bench_command(const BenchOptions &options) {
  const int threads = options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // OpenMP (oneDNN) and OpenBLAS read their thread counts when they load: set them and run again.
  // (HL_NUM_THREADS among them, for Halide's own pool, which the Adams2019 peer runs on.)
  if (options.argv) bench::ensure_bench_environment(options.argv, threads, openblas_coretype());
  // tessel's kernels run on the spin pool, which takes the count directly.
  spin_pool_set_threads(threads);

  auto target = parse_target(options.request.target);
  if (!target.ok()) return fail(target.error().message);
  const bool gpu = target->kind == Target::Kind::Cuda;
  if (gpu && options.cold)
    return fail("--cold evicts the host CPU's caches; it does not apply to --target cuda");
  if (gpu && !options.vs.empty())
    return fail("--vs names CPU libraries; on a GPU the peers (cuBLAS, cuDNN) are timed by bench/bench_gpu.py");
  // Asked before any kernel runs here: the driver is queried in a child process, which CUDA
  // forbids once this process has initialized it.
  std::optional<CudaDeviceInfo> device;
  if (gpu) {
    auto found = name_device_architecture(target.value());  // records keyed as tune keys them
    if (!found.ok())
      return fail("`tessel bench --target cuda` times kernels on a CUDA GPU, and none is usable here: " +
                  found.error().message);
    device = found.value();
  }
  BenchRowOptions row_options;
  row_options.threads = threads;
  row_options.target = target.value();
  for (const std::string &peer : options.vs.empty() ? kDefaultPeers : options.vs) {
    if (std::find(kPeers.begin(), kPeers.end(), peer) == kPeers.end())
      return fail("--vs: unknown peer '" + peer + "' (default, adams2019, onednn, openblas)");
    row_options.vs.insert(peer);
  }

  std::shared_ptr<const Graph> tuning_graph;
  auto tasks = collect_bench_tasks(options.request, tuning_graph);
  if (!tasks.ok()) return fail(tasks.error().message);
  if (options.cold)
    for (const BenchTask &task : tasks.value())
      if (task_constant_bytes(task.task) == 0)
        std::fprintf(stderr, "tessel bench: note: %s has no operand known to be a weight; --cold evicts nothing of it\n",
                     task.label.c_str());

  // Records: tuning first (it forks measuring workers), then picking among the best.
  std::shared_ptr<TuningDatabase> db;
  if (options.request.trials > 0 || database_may_exist(options.request.db_path)) {
    auto opened = TuningDatabase::open(options.request.db_path);
    if (!opened.ok()) return fail(opened.error().message);
    db = std::make_shared<TuningDatabase>(std::move(opened.value()));
    if (options.request.trials > 0)
      if (auto tuned = tune_bench_tasks(options.request, *tuning_graph, tasks.value(), target.value(), *db); !tuned.ok())
        return fail(tuned.error().message);
    for (BenchTask &task : tasks.value())
      if (auto picked = pick_tuned_schedule(task, *db, target.value(), options.cold); !picked.ok())
        return fail(picked.error().message);
  }
  // Without it (no linker, say) the single kernel is still timed against its peers.
  for (BenchTask &task : tasks.value())
    if (auto prepared = prepare_as_in_model(task, db, target.value(), threads); !prepared.ok())
      std::fprintf(stderr, "tessel bench: warning: no row as in a model: %s\n", prepared.error().message.c_str());

  if (gpu) {
    GpuBenchOptions gpu_options;
    gpu_options.rounds = options.rounds;
    gpu_options.min_seconds = options.min_seconds;
    gpu_options.tolerance = kBenchTolerance;
    gpu_options.json = options.json;
    auto status = bench_tasks_on_gpu(tasks.value(), target.value(), *device, gpu_options);
    if (!status.ok()) return fail(status.error().message);
    return status.value();
  }
  const bench::MachinePeak peak = bench::machine_peak(threads, options.remeasure_peak);
  bench::TimingOptions timing;
  timing.rounds = options.rounds;
  timing.min_seconds = options.min_seconds;
  timing.cold = options.cold;
  timing.min_runs = 1000000;  // the time decides: every row gets the same slice
  if (!options.json) std::printf("%s\n\n", bench::describe(peak).c_str());

  Json json;
  json["threads"] = threads;
  json["fma_peak_gflops"] = peak.fma_gflops;
  json["memory_peak_gbs"] = peak.memory_gbs;
  json["cpu"] = peak.cpu;
  json["timing"] = timing.describe();
  json["kernels"] = Json::array();
  bool wrong = false;
  for (const BenchTask &task : tasks.value()) {
    auto bench = make_task_bench(task, row_options);
    if (!bench.ok()) {
      std::fprintf(stderr, "tessel bench: %s\n", bench.error().message.c_str());
      wrong = true;
      continue;
    }
    std::vector<TimedRow> timed(bench.value()->rows.size());
    for (size_t i = 0; i < timed.size(); ++i) {
      bench::KernelRow &row = bench.value()->rows[i];
      timed[i].row = &row;
      if (!row.unavailable.empty() || !row.run) continue;
      try {
        row.run();
        timed[i].error = row.check_error();
      } catch (const std::exception &e) {
        row.unavailable = std::string("failed: ") + e.what();
      }
    }
    const std::vector<bench::Samples> samples = bench::time_rows_interleaved(bench.value()->rows, timing);
    for (size_t i = 0; i < timed.size(); ++i) timed[i].samples = samples[i];
    if (!(timed[0].error <= kBenchTolerance)) wrong = true;
    if (options.json) json["kernels"].push_back(bench_json(task, *bench.value(), timed, peak));
    else std::printf("%s\n", format_bench_table(task, *bench.value(), timed, peak).c_str());
    std::fflush(stdout);
  }
  if (options.json) std::printf("%s\n", dump_json(json).c_str());
  if (!options.json) std::printf("timing: %s\n", timing.describe().c_str());
  return wrong ? 1 : 0;
}

}  // namespace tessel
