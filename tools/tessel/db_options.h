#pragma once
// `tessel db stats|best|export|import|prune|copy`: options of the tuning-database subcommand.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tessel {

struct DbOptions {
  enum class Action { None, Stats, Best, Export, Import, Prune, Copy, TrainModel };
  Action action = Action::None;
  std::string db_path = "tessel.db";
  bool json = false;                 // stats, best: machine-readable output
  std::string workload_key;          // best
  std::string best_target = "llvm";  // best
  int top = 1;                       // best: the k fastest
  std::string export_target;         // export: only this target (empty: all)
  std::string export_workload;       // export: only this workload (empty: all)
  bool ok_only = false;              // export: only ok records
  std::string output_path;           // export: file (empty or "-": stdout)
  std::string log_path;              // import
  bool prune_failed = false;         // prune: records that did not run correctly
  int keep_best = 0;                 // prune: keep only the N fastest ok records per workload and target
  std::string copy_from, copy_to;    // copy: database to database (files or postgresql:// URLs)
  std::string model_target = "llvm";  // train-model: records of this target
  std::string model_output;          // train-model: the model file
  std::vector<std::string> exclude_models;  // train-model: leave out these models' workloads
  std::string model_base;            // train-model: continue from this model's trees
};

/// Adds `db` and its seven subcommands to the CLI, filling `options`; returns the `db` command.
/// In main: `CLI::App *db_cmd = tessel::add_db_command(app, db);` ... `if (*db_cmd) return tessel::db_command(db);`
CLI::App *add_db_command(CLI::App &app, DbOptions &options);

/// Runs the action; the exit code: 0 done, 1 error (printed as one line on stderr).
int db_command(const DbOptions &options);

}  // namespace tessel
