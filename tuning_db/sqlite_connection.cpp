#include "tuning_db/sqlite_connection.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tuning_db/schema.h"

namespace tessel {

namespace {

/// An Error for a failed SQLite call: names the database file and says in plain words what
/// a busy (locked), read-only, corrupt or non-database file means. `doing` is what we tried.
Error sqlite_error(sqlite3 *db, int code, const std::string &path, const std::string &doing) {
  const std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  switch (code & 0xFF) {  // primary code: extended codes keep it in the low byte
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return make_error(ErrorKind::Timeout,
                        path + ": database is locked: another process held it longer than the busy timeout (while "
                        "trying to " + doing + "); try again when it finishes");
    case SQLITE_READONLY:
      return make_error(path + " is read-only: cannot " + doing + " (" + detail + ")");
    case SQLITE_NOTADB:
      return make_error(ErrorKind::InvalidInput, path + ": file is not a database (is it a tessel.db?)");
    case SQLITE_CORRUPT:
      return make_error(ErrorKind::InvalidInput, path + " is corrupt (" + detail + ") while trying to " + doing +
                                                 "; restore it from a backup or re-import an exported tuning log");
    case SQLITE_CANTOPEN:
      return make_error(ErrorKind::NotFound,
                        "cannot open " + path + " (" + detail + "): does its directory exist and is it writable?");
    case SQLITE_FULL:
      return make_error(ErrorKind::Io, path + ": disk full while trying to " + doing);
    case SQLITE_IOERR:
      return make_error(ErrorKind::Io, path + ": I/O error while trying to " + doing + " (" + detail + ")");
    default:
      return make_error(path + ": cannot " + doing + ": " + detail);
  }
}

class SqliteQuery : public SqlQuery {
 public:
  SqliteQuery(sqlite3 *db, const std::string &path, sqlite3_stmt *statement, std::string doing)
      : db_(db), path_(path), statement_(statement), doing_(std::move(doing)) {}
  SqliteQuery(const SqliteQuery &) = delete;
  SqliteQuery &operator=(const SqliteQuery &) = delete;
  ~SqliteQuery() override { sqlite3_finalize(statement_); }

  Result<bool> next() override {
    if (!started_) {
      started_ = true;
      bind_parameters();
    }
    if (done_) return false;
    const int code = sqlite3_step(statement_);
    if (code == SQLITE_ROW) return true;
    if (code == SQLITE_DONE) {
      done_ = true;
      changes_ = sqlite3_changes(db_);
      return false;
    }
    return sqlite_error(db_, code, path_, doing_);
  }

  bool is_null(int column) const override { return sqlite3_column_type(statement_, column) == SQLITE_NULL; }
  std::string text(int column) const override {
    const auto *chars = reinterpret_cast<const char *>(sqlite3_column_text(statement_, column));
    return chars ? std::string(chars, static_cast<size_t>(sqlite3_column_bytes(statement_, column))) : std::string();
  }
  int64_t integer(int column) const override { return sqlite3_column_int64(statement_, column); }
  double real(int column) const override { return sqlite3_column_double(statement_, column); }
  std::vector<uint8_t> blob(int column) const override {
    const auto *bytes = static_cast<const uint8_t *>(sqlite3_column_blob(statement_, column));
    const int size = sqlite3_column_bytes(statement_, column);
    return bytes ? std::vector<uint8_t>(bytes, bytes + size) : std::vector<uint8_t>();
  }
  int64_t changes() const override { return changes_; }

 private:
  void bind_parameters() {
    for (size_t i = 0; i < parameters_.size(); ++i) {
      const int index = static_cast<int>(i) + 1;
      const SqlValue &value = parameters_[i];
      if (const auto *integer = std::get_if<int64_t>(&value)) {
        sqlite3_bind_int64(statement_, index, *integer);
      } else if (const auto *real = std::get_if<double>(&value)) {
        sqlite3_bind_double(statement_, index, *real);
      } else if (const auto *text = std::get_if<std::string>(&value)) {
        sqlite3_bind_text(statement_, index, text->data(), static_cast<int>(text->size()), SQLITE_TRANSIENT);
      } else if (const auto *bytes = std::get_if<std::vector<uint8_t>>(&value)) {
        // A zero-length blob must stay a blob (an empty feature vector), not NULL.
        static const uint8_t empty = 0;
        sqlite3_bind_blob(statement_, index, bytes->empty() ? &empty : bytes->data(),
                          static_cast<int>(bytes->size()), SQLITE_TRANSIENT);
      } else {
        sqlite3_bind_null(statement_, index);
      }
    }
  }

  sqlite3 *db_;
  const std::string &path_;  // the connection's, which outlives its queries
  sqlite3_stmt *statement_;
  std::string doing_;
  bool started_ = false;
  bool done_ = false;
  int64_t changes_ = 0;
};

class SqliteConnection : public SqlConnection {
 public:
  /// How often a waiter on SQLite looks again (the file has no notifications).
  static constexpr double kPollSeconds = 0.05;

  SqliteConnection(sqlite3 *db, std::string path) : db_(db), path_(std::move(path)) {}
  SqliteConnection(const SqliteConnection &) = delete;
  SqliteConnection &operator=(const SqliteConnection &) = delete;
  ~SqliteConnection() override { sqlite3_close_v2(db_); }

  SqlBackend backend() const override { return SqlBackend::Sqlite; }
  const std::string &location() const override { return path_; }

  Result<std::unique_ptr<SqlQuery>> prepare(const std::string &sql, const std::string &doing) override {
    sqlite3_stmt *statement = nullptr;
    const int code = sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr);
    if (code != SQLITE_OK) {
      sqlite3_finalize(statement);
      return sqlite_error(db_, code, path_, doing);
    }
    return std::unique_ptr<SqlQuery>(new SqliteQuery(db_, path_, statement, doing));
  }

  Result<void> execute(const std::string &sql, const std::string &doing) override {
    const int code = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    if (code != SQLITE_OK) return sqlite_error(db_, code, path_, doing);
    return {};
  }

  std::string now_seconds_sql() const override { return "((julianday('now') - 2440587.5) * 86400.0)"; }

  bool in_transaction() const override { return sqlite3_get_autocommit(db_) == 0; }

  Result<void> notify(const std::string &) override { return {}; }
  void wait_for_notification(const std::string &, double timeout_seconds) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(timeout_seconds, kPollSeconds)));
  }

  Result<void> begin_write() override { return execute("BEGIN IMMEDIATE", "start a write transaction"); }

  Result<int> schema_version() override {
    auto query = prepare("PRAGMA user_version", "read the schema version");
    if (!query.ok()) return query.error();
    auto row = query.value()->next();
    if (!row.ok()) return row.error();
    return row.value() ? static_cast<int>(query.value()->integer(0)) : 0;
  }

  Result<void> set_schema_version(int version) override {
    return execute("PRAGMA user_version = " + std::to_string(version), "record the schema version");
  }

  Result<bool> has_foreign_tables() override {
    auto query = prepare("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'", "read the schema");
    if (!query.ok()) return query.error();
    auto row = query.value()->next();
    if (!row.ok()) return row.error();
    return row.value() && query.value()->integer(0) > 0;
  }

  Result<void> lock_migrations() override { return {}; }  // BEGIN IMMEDIATE holds the file's write lock
  void unlock_migrations() override {}

  sqlite3 *handle() { return db_; }

 private:
  sqlite3 *db_;
  std::string path_;
};

/// WAL: readers never block the writer and several processes can append records at once.
/// Switching a new file to WAL can report busy at once, without the busy handler (SQLite
/// avoids a deadlock when two connections convert it together), so it is retried here.
Result<void> enable_wal(SqliteConnection &connection, int busy_timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  while (true) {
    sqlite3_stmt *statement = nullptr;
    int code = sqlite3_prepare_v2(connection.handle(), "PRAGMA journal_mode = WAL", -1, &statement, nullptr);
    std::string mode;
    if (code == SQLITE_OK) {
      code = sqlite3_step(statement);
      if (code == SQLITE_ROW) mode = reinterpret_cast<const char *>(sqlite3_column_text(statement, 0));
    }
    sqlite3_finalize(statement);
    if (code == SQLITE_ROW) {
      if (mode != "wal")
        return make_error(ErrorKind::Unsupported,
                          connection.location() + ": cannot use WAL mode (the journal mode stays " + mode + ")");
      return {};
    }
    const bool busy = (code & 0xFF) == SQLITE_BUSY || (code & 0xFF) == SQLITE_LOCKED;
    if (!busy || std::chrono::steady_clock::now() >= deadline)
      return sqlite_error(connection.handle(), code, connection.location(), "switch to WAL mode");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

/// A path as the path part of an SQLite file: URI (every byte but [A-Za-z0-9/._~-] escaped).
std::string uri_escape(const std::string &path) {
  std::string escaped;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '~' || c == '-') {
      escaped += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      escaped += hex;
    }
  }
  return escaped;
}

bool file_exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

Result<std::unique_ptr<SqlConnection>> connect(const std::string &path, const SqliteOpenOptions &options,
                                               bool immutable) {
  const int flags = options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  sqlite3 *handle = nullptr;
  const int code = immutable ? sqlite3_open_v2(("file:" + uri_escape(path) + "?immutable=1").c_str(), &handle,
                                               flags | SQLITE_OPEN_URI, nullptr)
                             : sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  if (code != SQLITE_OK) {
    Error error = sqlite_error(handle, code, path, "open the database");
    sqlite3_close_v2(handle);
    return error;
  }
  auto connection = std::make_unique<SqliteConnection>(handle, path);  // closes the handle on every early return
  sqlite3_busy_timeout(handle, std::max(0, options.busy_timeout_ms));
  // SQLite opens a file it may not write read-only without saying so; a tuner must know now.
  if (!options.read_only && sqlite3_db_readonly(handle, "main") == 1)
    return make_error(path + " is read-only: cannot record measurements in it (no write permission?)");
  auto version = connection->schema_version();  // the first read: finds non-databases
  if (!version.ok()) return version.error();
  // Refused before WAL mode is switched on: a newer tessel's file is not touched.
  if (version.value() > kTuningSchemaVersion) return newer_schema_error(path, version.value());
  auto foreign_keys = connection->execute("PRAGMA foreign_keys = ON", "enable foreign keys");
  if (!foreign_keys.ok()) return foreign_keys.error();
  if (!options.read_only) {
    auto wal = enable_wal(*connection, std::max(0, options.busy_timeout_ms));
    if (!wal.ok()) return wal.error();
  }
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

}  // namespace

Result<std::unique_ptr<SqlConnection>> open_sqlite(const std::string &path, const SqliteOpenOptions &options) {
  if (options.read_only && !file_exists(path))
    return make_error(ErrorKind::NotFound, path + ": no such tuning database");
  auto connection = connect(path, options, false);
  // Reading a WAL file needs its -shm file, which a user who may not write the directory
  // cannot create. With no -wal file every committed record is in the main file, so it can
  // be read as immutable; if that fails too, the first error says more.
  if (!connection.ok() && options.read_only && !file_exists(path + "-wal")) {
    auto immutable = connect(path, options, true);
    if (immutable.ok()) return immutable;
  }
  return connection;
}

}  // namespace tessel
