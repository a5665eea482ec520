#include "tuning_db/database_transfer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tuning_db/database_location.h"

namespace tessel {

Result<TuningDatabase> open_existing_database(const std::string &location) {
  DatabaseOpenOptions options;
  if (is_postgres_url(location)) {
    options.read_only = true;
    return TuningDatabase::open(location, options);
  }
  if (::access(location.c_str(), F_OK) != 0)
    return make_error(ErrorKind::NotFound, location + ": no such tuning database");
  options.read_only = ::access(location.c_str(), W_OK) != 0;
  return TuningDatabase::open(location, options);
}

Result<int64_t> export_log_file(const TuningDatabase &db, const ExportFilter &filter, const std::string &path) {
  const std::string partial = path + ".partial";
  int64_t count = 0;
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(ErrorKind::Io, path + ": cannot write the tuning log (" + std::strerror(errno) + ")");
    auto written = db.export_jsonl(out, filter);
    out.close();
    if (!written.ok() || !out) {
      std::remove(partial.c_str());
      if (!written.ok()) return std::move(written).error().with_context(path);
      return make_error(ErrorKind::Io, path + ": cannot write the tuning log");
    }
    count = written.value();
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(partial.c_str());
    return make_error(ErrorKind::Io, path + ": cannot write the tuning log (" + reason + ")");
  }
  return count;
}

Result<ImportSummary> import_log_file(const std::string &location, const std::string &log_path) {
  std::ifstream in(log_path, std::ios::binary);
  if (!in) return make_error(ErrorKind::NotFound, log_path + ": cannot open tuning log (" + std::strerror(errno) + ")");
  const bool existed = database_may_exist(location);
  Result<ImportSummary> summary = make_error("");
  {
    TESSEL_TRY(TuningDatabase db, TuningDatabase::open(location));
    summary = db.import_jsonl(in, log_path);
  }
  if (summary.ok()) return summary;
  if (!existed)
    for (const char *suffix : {"", "-wal", "-shm"}) std::remove((location + suffix).c_str());
  Error error = std::move(summary).error();
  error.message += " (nothing was imported)";
  return error;
}

Result<CopySummary> copy_database(const std::string &from, const std::string &to) {
  TESSEL_TRY(TuningDatabase source, open_existing_database(from));
  TESSEL_TRY(TuningDatabase destination, TuningDatabase::open(to));
  std::stringstream log;
  CopySummary summary;
  TESSEL_TRY(summary.exported, source.export_jsonl(log));
  auto imported = destination.import_jsonl(log, source.location());
  if (!imported.ok()) {
    Error error = std::move(imported).error();
    error.message += " (nothing was copied)";
    return error;
  }
  summary.imported = imported.value();
  summary.from = source.location();
  summary.to = destination.location();
  return summary;
}

}  // namespace tessel
