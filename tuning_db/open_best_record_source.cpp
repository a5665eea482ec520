#include "tuning_db/open_best_record_source.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "tuning_db/database_location.h"
#include "tuning_db/tuning_database.h"
#include "tuning_db/tuning_log.h"

namespace tessel {

Result<std::unique_ptr<BestRecordSource>> open_best_record_source(const std::string &path, RecordFileKind kind) {
  DatabaseOpenOptions read_only;
  read_only.read_only = true;
  if (is_postgres_url(path)) {
    auto db = TuningDatabase::open(path, read_only);
    if (!db.ok()) return db.error();
    return std::unique_ptr<BestRecordSource>(new TuningDatabase(std::move(db.value())));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorKind::NotFound, path + ": cannot open tuning records (" + std::strerror(errno) + ")");
  // Every SQLite database starts with these 16 bytes.
  static const char kSqliteMagic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f', 'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
  char head[16] = {};
  in.read(head, sizeof(head));
  const bool is_database = in.gcount() == sizeof(head) && std::memcmp(head, kSqliteMagic, sizeof(head)) == 0;
  if (is_database || kind == RecordFileKind::Database) {
    auto db = TuningDatabase::open(path, read_only);
    if (!db.ok()) return db.error();
    return std::unique_ptr<BestRecordSource>(new TuningDatabase(std::move(db.value())));
  }
  in.clear();
  in.seekg(0);
  auto log = read_tuning_log(in, path);
  if (!log.ok()) return log.error();
  return std::unique_ptr<BestRecordSource>(new TuningLog(std::move(log.value())));
}

}  // namespace tessel
