// `tessel report [--db tessel.db] [--model model.onnx] [--target llvm] -o report.html`: the
// tuning database as one self-contained HTML page (report/).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "codegen/target.h"
#include "report/report_data.h"
#include "report/report_html.h"
#include "tools/tessel/commands.h"
#include "tuning_db/database_location.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

namespace {

/// Writes through a temporary file in the same directory and renames it, so a reader (or a
/// browser reloading the page) never sees half a report, and a failure leaves the old one.
Result<void> write_atomically(const std::string &path, const std::string &content) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(ErrorKind::Io, path + ": cannot write: " + std::strerror(errno));
    out << content;
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return make_error(ErrorKind::Io, path + ": cannot write (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return make_error(ErrorKind::Io, path + ": cannot write: " + ec.message());
  }
  return {};
}

/// Opens a database only to read it: never creates one where a path was mistyped.
Result<TuningDatabase> open_for_reading(const std::string &location) {
  if (!database_may_exist(location)) return make_error(ErrorKind::NotFound, location + ": no such tuning database");
  DatabaseOpenOptions open_options;
  open_options.read_only = is_postgres_url(location) || ::access(location.c_str(), W_OK) != 0;
  return TuningDatabase::open(location, open_options);
}

/// "LABEL=DB" or "DB" (labelled by its path).
std::pair<std::string, std::string> split_compare_option(const std::string &option) {
  const size_t equals = option.find('=');
  // A PostgreSQL URL holds '=' in its query string, and a label never holds "://".
  if (equals == std::string::npos || option.find("://") < equals) return {"", option};
  return {option.substr(0, equals), option.substr(equals + 1)};
}

}  // namespace

int report_command(const ReportOptions &options) {
  auto target = parse_target(options.target);
  if (!target.ok()) return fail(target.error().message);
  if (options.output_path.empty()) return fail("-o needs a file name");
  // A report only reads: never create a database where the user mistyped a path.
  auto db = open_for_reading(options.db_path);
  if (!db.ok()) return fail(db.error().message);

  ReportDataOptions data_options;
  data_options.db_path = db->location();  // printed in the page: the password masked
  // Records are keyed by Target::to_string(), as `tessel tune` writes them ("llvm" and
  // "host" name the same target).
  data_options.target = target->to_string();
  if (!options.model_path.empty()) {
    OptimizeOptions optimize = options.optimize;
    optimize.target = options.target;
    auto graph = load_optimized_model(options.model_path, optimize);
    if (!graph.ok()) return fail(graph.error().message);
    data_options.model = std::make_shared<const Graph>(std::move(graph.value()));
    data_options.model_path = options.model_path;
  }
  auto data = collect_report_data(db.value(), data_options);
  if (!data.ok()) return fail(data.error().message);
  data->run_label = options.label.empty() ? data->db_path : options.label;
  for (const std::string &option : options.compare) {
    auto [label, location] = split_compare_option(option);
    auto other = open_for_reading(location);
    if (!other.ok()) return fail("--compare: " + other.error().message);
    auto records = other->records_for_target(data_options.target);
    if (!records.ok()) return fail("--compare " + location + ": " + records.error().message);
    ComparedCurve compared;
    compared.db_path = other->location();
    compared.label = label.empty() ? compared.db_path : label;
    compared.curve = model_curve(data->tasks, records.value());
    data->compared.push_back(std::move(compared));
  }
  const std::string html = render_report_html(data.value());
  if (auto written = write_atomically(options.output_path, html); !written.ok()) return fail(written.error().message);

  int64_t trials = 0;
  for (const ReportTask &t : data->tasks) trials += t.searched;
  std::printf("wrote %s (%.0f KB): %zu %s, %lld searched trials, %lld records of target %s\n",
              options.output_path.c_str(), html.size() / 1024.0, data->tasks.size(),
              options.model_path.empty() ? "workloads" : "tasks", static_cast<long long>(trials),
              static_cast<long long>(data->records), data_options.target.c_str());
  if (!data->prediction.available) std::printf("cost model: %s\n", data->prediction.note.c_str());
  return 0;
}

}  // namespace tessel
