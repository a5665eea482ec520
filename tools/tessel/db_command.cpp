// `tessel db`: look into and move the tuning database (DESIGN.md, tuning_db/).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "base/json.h"
#include "codegen/target.h"
#include "tools/tessel/commands.h"
#include "tools/tessel/db_options.h"
#include "tuning_db/database_location.h"
#include "tuning_db/database_transfer.h"
#include "tuning_db/tuning_database.h"
#include "tuning_db/tuning_log_line.h"
#include "tuning_db/work_queue.h"
#include "tuner/cost_model_training.h"

namespace tessel {

CLI::App *add_db_command(CLI::App &app, DbOptions &options) {
  CLI::App *db = app.add_subcommand("db", "Manage the tuning database: stats, best, export, import, prune, copy, train-model");
  db->require_subcommand(1);
  const auto add_db_path = [&options](CLI::App *command) {
    command->add_option("--db", options.db_path, "tuning database: a file (default ./tessel.db) or a postgresql:// URL");
  };

  CLI::App *stats = db->add_subcommand("stats", "Count workloads, targets and records per status");
  add_db_path(stats);
  stats->add_flag("--json", options.json, "machine-readable output");
  stats->callback([&options] { options.action = DbOptions::Action::Stats; });

  CLI::App *best = db->add_subcommand("best", "Show the fastest measured schedule of a workload");
  add_db_path(best);
  best->add_option("--workload,-w", options.workload_key, "workload key (see `tessel inspect --tasks`)")->required();
  best->add_option("--target", options.best_target, "target the record was measured on (default llvm)");
  best->add_option("--top,-k", options.top, "show the k fastest")->check(CLI::PositiveNumber);
  best->add_flag("--json", options.json, "print the record as a tuning-log line");
  best->callback([&options] { options.action = DbOptions::Action::Best; });

  CLI::App *export_cmd = db->add_subcommand("export", "Write records as a portable JSON-lines tuning log");
  add_db_path(export_cmd);
  export_cmd->add_option("--target", options.export_target, "only records of this target");
  export_cmd->add_option("--workload,-w", options.export_workload, "only records of this workload");
  export_cmd->add_flag("--ok-only", options.ok_only, "only records that ran correctly");
  export_cmd->add_option("-o,--output", options.output_path, "log file (default: stdout)");
  export_cmd->callback([&options] { options.action = DbOptions::Action::Export; });

  CLI::App *import_cmd = db->add_subcommand("import", "Add the records of a tuning log (duplicates are skipped)");
  add_db_path(import_cmd);
  import_cmd->add_option("log", options.log_path, "tuning log (.jsonl)")->required();
  import_cmd->callback([&options] { options.action = DbOptions::Action::Import; });

  CLI::App *prune = db->add_subcommand("prune", "Delete failed records and/or all but the fastest per workload");
  add_db_path(prune);
  prune->add_flag("--failed", options.prune_failed, "delete records that did not run correctly");
  prune->add_option("--keep-best", options.keep_best, "keep only the N fastest ok records per workload and target")
      ->check(CLI::PositiveNumber);
  prune->callback([&options] { options.action = DbOptions::Action::Prune; });

  CLI::App *copy = db->add_subcommand("copy", "Copy every record from one database into another (duplicates are skipped)");
  copy->add_option("from", options.copy_from, "source: a database file or a postgresql:// URL")->required();
  copy->add_option("to", options.copy_to, "destination, created when missing: a file or a postgresql:// URL")->required();
  copy->callback([&options] { options.action = DbOptions::Action::Copy; });

  CLI::App *train = db->add_subcommand(
      "train-model", "Train the cost model on the records of a target and save it (the pretrained model `tune` starts from)");
  add_db_path(train);
  train->add_option("--target", options.model_target, "records of this target (default llvm)");
  train->add_option("-o,--output", options.model_output, "model file (XGBoost JSON)")->required();
  train->add_option("--exclude-model", options.exclude_models,
                    "leave out the workloads of this model.onnx (held out for evaluation; repeatable)");
  train->add_option("--start-from", options.model_base,
                    "continue from this model's trees (a model trained on records that are not in this database)")
      ->check(CLI::ExistingFile);
  train->callback([&options] { options.action = DbOptions::Action::TrainModel; });
  return db;
}

namespace {

/// "llvm", "cpu" and "host" name the same target; records use Target::to_string().
Result<std::string> canonical_target(const std::string &text) {
  auto target = parse_target(text);
  if (!target.ok()) return target.error();
  return target->to_string();
}

std::string format_seconds(double seconds) {
  char text[32];
  if (seconds >= 1) std::snprintf(text, sizeof(text), "%.3f s", seconds);
  else if (seconds >= 1e-3) std::snprintf(text, sizeof(text), "%.3f ms", seconds * 1e3);
  else std::snprintf(text, sizeof(text), "%.3f us", seconds * 1e6);
  return text;
}

int print_stats(TuningDatabase &db, bool json) {
  auto stats = db.stats();
  if (!stats.ok()) return fail(stats.error().message);
  // Remote tuning's work queue: what waits for workers, what they hold, whose leases ran out.
  auto queue = WorkQueue(db).stats();
  if (!queue.ok()) return fail(queue.error().message);
  if (json) {
    Json out;
    out["db"] = db.location();
    out["queue"] = Json::object();
    out["queue"]["queued"] = queue->queued;
    out["queue"]["claimed"] = queue->claimed;
    out["queue"]["expired"] = queue->expired;
    out["queue"]["done"] = queue->done;
    out["schema_version"] = stats->schema_version;
    out["workloads"] = stats->workloads;
    out["targets"] = stats->targets;
    out["records"] = stats->records;
    out["status"] = Json::object();
    for (const auto &[status, count] : stats->records_by_status) out["status"][to_text(status)] = count;
    const auto rows = [](const std::vector<TargetStats> &list) {
      Json table = Json::array();
      for (const TargetStats &target : list) {
        Json row;
        row["target"] = target.target;
        row["machine"] = target.machine;
        row["records"] = target.records;
        row["ok_records"] = target.ok_records;
        row["workloads"] = target.workloads;
        table.push_back(row);
      }
      return table;
    };
    out["per_target"] = rows(stats->per_target);
    out["per_machine"] = rows(stats->per_machine);
    std::printf("%s\n", dump_json(out).c_str());
    return 0;
  }
  std::printf("database   %s (schema %d)\n", db.location().c_str(), stats->schema_version);
  std::printf("workloads  %lld\n", static_cast<long long>(stats->workloads));
  std::printf("targets    %lld\n", static_cast<long long>(stats->targets));
  std::printf("records    %lld\n", static_cast<long long>(stats->records));
  for (const auto &[status, count] : stats->records_by_status)
    std::printf("  %-15s %lld\n", to_text(status), static_cast<long long>(count));
  // One row per target and machine signature: latencies compare within a row only.
  if (!stats->per_machine.empty()) {
    std::printf("\n%-32s %10s %10s %10s  %s\n", "target", "records", "ok", "workloads", "machine");
    for (const TargetStats &target : stats->per_machine)
      std::printf("%-32s %10lld %10lld %10lld  %s\n", target.target.c_str(), static_cast<long long>(target.records),
                  static_cast<long long>(target.ok_records), static_cast<long long>(target.workloads),
                  target.machine.c_str());
  }
  if (queue->queued + queue->claimed + queue->expired + queue->done > 0)
    std::printf("\nqueue      %lld queued, %lld claimed, %lld with expired leases, %lld done\n",
                static_cast<long long>(queue->queued), static_cast<long long>(queue->claimed),
                static_cast<long long>(queue->expired), static_cast<long long>(queue->done));
  return 0;
}

int print_best(const TuningDatabase &db, const DbOptions &options) {
  auto target = canonical_target(options.best_target);
  if (!target.ok()) return fail(target.error().message);
  auto fastest = db.top_k(options.workload_key, target.value(), options.top);
  if (!fastest.ok()) return fail(fastest.error().message);
  if (fastest->empty()) {
    std::string message = db.location() + ": no record of workload " + options.workload_key + " ran ok on target '" +
                          target.value() + "'";
    // A near miss is usually the target text: say which targets do have records.
    auto stats = db.stats();
    if (stats.ok() && !stats->per_target.empty()) {
      message += " (targets in the database:";
      for (const TargetStats &t : stats->per_target) message += " '" + t.target + "'";
      message += ")";
    }
    return fail(message);
  }
  auto workload_text = db.workload_text(options.workload_key);
  if (!workload_text.ok()) return fail(workload_text.error().message);
  for (const TuningRecord &record : fastest.value()) {
    if (options.json) {
      std::printf("%s\n", to_log_line(record, workload_text->value_or("")).c_str());
      continue;
    }
    std::printf("workload   %s\n", record.workload_key.c_str());
    std::printf("target     %s%s%s\n", record.target.c_str(), record.machine.empty() ? "" : "  on ",
                record.machine.c_str());
    std::printf("median     %s over %zu timed runs (compile %.2f s)\n", format_seconds(*record.median_seconds).c_str(),
                record.timings_seconds.size(), record.compile_seconds);
    std::printf("schedule   %s  (record %lld, %s, %s)\n", record.schedule_hash.c_str(),
                static_cast<long long>(record.id), record.created_at.c_str(), record.tool_version.c_str());
    std::printf("%s", record.schedule_text.c_str());
    if (!record.schedule_text.empty() && record.schedule_text.back() != '\n') std::printf("\n");
    if (fastest->size() > 1) std::printf("\n");
  }
  return 0;
}

int export_log(const TuningDatabase &db, const DbOptions &options) {
  ExportFilter filter;
  if (!options.export_target.empty()) {
    auto target = canonical_target(options.export_target);
    if (!target.ok()) return fail(target.error().message);
    filter.target = target.value();
  }
  filter.workload_key = options.export_workload;
  filter.ok_only = options.ok_only;
  if (options.output_path.empty() || options.output_path == "-") {
    auto written = db.export_jsonl(std::cout, filter);
    if (!written.ok()) return fail(written.error().message);
    std::fprintf(stderr, "exported %lld records\n", static_cast<long long>(written.value()));
    return 0;
  }
  auto count = export_log_file(db, filter, options.output_path);
  if (!count.ok()) return fail(count.error().message);
  std::printf("exported %lld records to %s\n", static_cast<long long>(count.value()), options.output_path.c_str());
  return 0;
}

int import_log(const DbOptions &options) {
  auto summary = import_log_file(options.db_path, options.log_path);
  if (!summary.ok()) return fail(summary.error().message);
  std::printf("imported %lld new records from %s into %s (%lld duplicates skipped, %lld new workloads)\n",
              static_cast<long long>(summary->inserted), options.log_path.c_str(),
              masked_location(options.db_path).c_str(),
              static_cast<long long>(summary->duplicates), static_cast<long long>(summary->new_workloads));
  return 0;
}

int prune_records(const DbOptions &options) {
  if (!options.prune_failed && options.keep_best <= 0)
    return fail("db prune: say what to delete: --failed and/or --keep-best N");
  if (!database_may_exist(options.db_path)) return fail(options.db_path + ": no such tuning database");
  auto db = TuningDatabase::open(options.db_path);
  if (!db.ok()) return fail(db.error().message);
  PruneOptions prune;
  prune.failed = options.prune_failed;
  prune.keep_best = options.keep_best;
  auto summary = db->prune(prune);
  if (!summary.ok()) return fail(summary.error().message);
  std::printf("removed %lld records from %s; %lld remain\n", static_cast<long long>(summary->removed),
              db->location().c_str(), static_cast<long long>(summary->remaining));
  return 0;
}

int copy_records(const DbOptions &options) {
  auto copied = copy_database(options.copy_from, options.copy_to);
  if (!copied.ok()) return fail(copied.error().message);
  std::printf("copied %lld records from %s into %s (%lld new, %lld duplicates skipped, %lld new workloads)\n",
              static_cast<long long>(copied->exported), copied->from.c_str(), copied->to.c_str(),
              static_cast<long long>(copied->imported.inserted), static_cast<long long>(copied->imported.duplicates),
              static_cast<long long>(copied->imported.new_workloads));
  return 0;
}

int train_model(const TuningDatabase &db, const DbOptions &options) {
  auto excluded = workloads_of_models(options.exclude_models);
  if (!excluded.ok()) return fail(excluded.error().message);
  auto trained = train_cost_model(db, options.model_target, excluded.value(), options.model_output,
                                  options.model_base);
  if (!trained.ok()) return fail(trained.error().message);
  std::printf("trained on %d samples of %d workloads (%d records of %s; %d samples of %zu held-out workloads left out); "
              "pairwise accuracy on the training set %.3f%s; wrote %s\n",
              trained->samples, trained->workloads, trained->records, options.model_target.c_str(), trained->excluded,
              excluded->size(), trained->train_pairwise_accuracy,
              options.model_base.empty() ? "" : (" (continued from " + options.model_base + ")").c_str(),
              options.model_output.c_str());
  return 0;
}

}  // namespace

int db_command(const DbOptions &options) {
  if (options.action == DbOptions::Action::Import) return import_log(options);
  if (options.action == DbOptions::Action::Prune) return prune_records(options);
  if (options.action == DbOptions::Action::Copy) return copy_records(options);
  if (options.action == DbOptions::Action::None) return fail("db: expected stats, best, export, import, prune, copy or train-model");
  auto db = open_existing_database(options.db_path);
  if (!db.ok()) return fail(db.error().message);
  switch (options.action) {
    case DbOptions::Action::Stats: return print_stats(db.value(), options.json);
    case DbOptions::Action::Best: return print_best(db.value(), options);
    case DbOptions::Action::Export: return export_log(db.value(), options);
    case DbOptions::Action::TrainModel: return train_model(db.value(), options);
    default: return fail("db: expected stats, best, export, import, prune, copy or train-model");
  }
}

}  // namespace tessel
