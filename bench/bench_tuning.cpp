// Ablation of the search: for matmul 1024^3 and the ResNet-18 3x3 conv, the best GFLOP/s
// found after N trials with the cost model guiding the search, and with random picks among
// the same sketches (no model), each from an empty database, in the same run. The two
// searches of a kernel run side by side and take turns round by round, so a change in the
// machine's load hits both alike.
//
//   tessel_bench_tuning [--trials 1000] [--checkpoints 200,500,1000] [--batch 8]
//                       [--kernels matmul,conv] [--keep-db DIR] [--out FILE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <condition_variable>
#include <thread>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "graph/fusion/fuse.h"
#include "tuner/benchmark_problems.h"
#include "tuner/schedule_benchmark.h"
#include "tuner/random_cost_model.h"
#include "tuner/tune_model.h"

using namespace tessel;

namespace {

struct Curve {
  std::vector<std::pair<int, double>> points;  // trials, best model latency (seconds)
  double seconds = 0;
  int measured = 0;
};

/// Best latency after `trials` trials of the curve (the last point at or before it).
double best_at(const Curve &c, int trials) {
  double best = 0;
  for (const auto &[t, s] : c.points)
    if (t <= trials && s > 0) best = s;
  return best;
}

/// Lets two searches take turns: a search runs one round, then waits until the other has
/// run one (or has finished).
class Turnstile {
 public:
  void wait_turn(int me) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return turn_ == me || done_[1 - me]; });
  }
  void pass(int me) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      turn_ = 1 - me;
    }
    changed_.notify_all();
    wait_turn(me);
  }
  void finish(int me) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_[me] = true;
      turn_ = 1 - me;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int turn_ = 0;
  bool done_[2] = {false, false};
};

std::string db_path(const std::string &dir, const std::string &kind, bool guided) {
  return (std::filesystem::path(dir) /
          ("tessel_ablation_" + std::to_string(::getpid()) + "_" + kind + (guided ? "_model.db" : "_random.db")))
      .string();
}

/// One search (arm 0: cost model, arm 1: random) of one kernel, taking turns with the other.
Result<Curve> tune_curve(const std::string &kind, const std::string &spec, int arm, int trials, int batch,
                         const std::string &path, Turnstile &turns) {
  const bool guided = arm == 0;
  turns.wait_turn(arm);
  struct Finish {
    Turnstile &turns;
    int arm;
    ~Finish() { turns.finish(arm); }
  } finish{turns, arm};
  auto graph = make_benchmark_graph(kind, spec);
  if (!graph.ok()) return graph.error();
  std::filesystem::remove(path);
  auto db = TuningDatabase::open(path);
  if (!db.ok()) return db.error();
  Curve curve;
  // Seconds of this search's own turns, not of the waits for the other's.
  auto turn_start = std::chrono::steady_clock::now();
  auto end_turn = [&] { curve.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - turn_start).count(); };
  TuneOptions options;
  options.trials = trials;
  options.batch = batch;
  options.seed = 1 + arm;
  options.threads = 2;  // the searches' kernels run 2 threads, on any machine
  // The ablation: the same search ranking its candidates at random instead of by the model.
  if (!guided) options.cost_model = std::make_shared<RandomCostModel>(options.seed);
  options.record_builtin = false;  // compare what each search found, not the hand schedule
  options.on_round = [&](int done, double latency) {
    curve.points.push_back({done, latency});
    end_turn();
    turns.pass(arm);
    turn_start = std::chrono::steady_clock::now();
  };
  options.log = [&](const std::string &line) {
    std::fprintf(stderr, "%s %s: %s\n", kind.c_str(), guided ? "model" : "random", line.c_str());
  };
  auto summary = tune_model(*graph.value(), Target{}, db.value(), options);
  if (!summary.ok()) return summary.error();
  end_turn();
  curve.measured = summary->measured;
  return curve;
}

}  // namespace

int main(int argc, char **argv) {
  int trials = 1000, batch = 8;
  std::vector<int> checkpoints;
  std::string out_file, command, keep_dir, kernel_filter = "matmul,conv";
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--trials" && i + 1 < argc) trials = std::atoi(argv[++i]);
    else if (a == "--batch" && i + 1 < argc) batch = std::atoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc) out_file = argv[++i];
    else if (a == "--keep-db" && i + 1 < argc) keep_dir = argv[++i];
    else if (a == "--kernels" && i + 1 < argc) kernel_filter = argv[++i];
    else if (a == "--checkpoints" && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      std::string item;
      while (std::getline(list, item, ',')) checkpoints.push_back(std::atoi(item.c_str()));
    } else {
      std::fprintf(stderr, "usage: tessel_bench_tuning [--trials N] [--checkpoints a,b,c] [--batch B] [--kernels matmul,conv] [--keep-db DIR] [--out FILE]\n");
      return 2;
    }
  }
  if (checkpoints.empty()) checkpoints = {trials / 5, trials / 2, trials};

  const std::vector<std::pair<std::string, std::string>> kernels = {{"matmul", "1024x1024x1024"},
                                                                    {"conv", "1,64,56,56,64,3,3"}};
  std::ostringstream table;
  table << "| kernel | search | " ;
  for (int c : checkpoints) table << c << " trials GFLOP/s | ";
  table << "wall s | trials/s |\n| --- | --- | ";
  for (size_t i = 0; i < checkpoints.size(); ++i) table << "---: | ";
  table << "---: | ---: |\n";
  for (const auto &[kind, spec] : kernels) {
    auto graph = make_benchmark_graph(kind, spec);
    if (!graph.ok()) return 1;
    auto task = make_task(graph.value(), partition_graph(*graph.value()).front());
    if (!task.ok()) return 1;
    const double flops = static_cast<double>(task->flops);
    if (kernel_filter.find(kind) == std::string::npos) continue;
    // Both searches run at once, taking turns round by round; wall seconds count each
    // search's own turns.
    const std::string dir = keep_dir.empty() ? std::filesystem::temp_directory_path().string() : keep_dir;
    const std::string paths[2] = {db_path(dir, kind, true), db_path(dir, kind, false)};
    Turnstile turns;
    std::optional<Result<Curve>> curves[2];
    std::thread random_arm([&] { curves[1] = tune_curve(kind, spec, 1, trials, batch, paths[1], turns); });
    curves[0] = tune_curve(kind, spec, 0, trials, batch, paths[0], turns);
    random_arm.join();
    for (int arm = 0; arm < 2; ++arm) {
      if (keep_dir.empty()) std::filesystem::remove(paths[arm]);
      else std::fprintf(stderr, "kept %s\n", paths[arm].c_str());
      const Result<Curve> &curve = *curves[arm];
      if (!curve.ok()) {
        std::fprintf(stderr, "%s\n", curve.error().message.c_str());
        return 1;
      }
      table << "| " << kind << " " << spec << " | " << (arm == 0 ? "cost model (XGBoost)" : "random (same sketches)") << " | ";
      char cell[64];
      for (int c : checkpoints) {
        const double s = best_at(curve.value(), c);
        std::snprintf(cell, sizeof(cell), "%.1f | ", s > 0 ? flops / s / 1e9 : 0.0);
        table << cell;
      }
      std::snprintf(cell, sizeof(cell), "%.0f | %.2f |\n", curve->seconds, curve->measured / std::max(curve->seconds, 1e-9));
      table << cell;
    }
  }
  std::printf("%s", table.str().c_str());
  if (!out_file.empty()) {
    std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    std::ofstream f(out_file);
    f << "# Search ablation: cost-model-guided vs random\n\n- date: " << date << "\n- command: `" << command
      << "`\n- method: each row tunes the kernel from an empty database with `tune_model` (workers compile in\n"
      << "  parallel, time one at a time, 2 threads); a cell is the best median latency among the schedules the\n"
      << "  search measured within that many trials (the built-in hand schedule is not counted), as GFLOP/s.\n"
      << "  The two searches of a kernel run side by side and take turns round by round (one round = one\n"
      << "  batch proposed, compiled, timed and, for the model, retrained on), so load changes hit both;\n"
      << "  wall s is each search's own turns.\n\n"
      << table.str();
  }
  return 0;
}
