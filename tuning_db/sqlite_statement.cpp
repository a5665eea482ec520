#include "tuning_db/sqlite_statement.h"

namespace tessel {

Error sqlite_error(sqlite3 *db, int code, const std::string &path, const std::string &doing) {
  const std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  switch (code & 0xFF) {  // primary code: extended codes keep it in the low byte
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return make_error(path + ": database is locked: another process held it longer than the busy timeout (while "
                        "trying to " + doing + "); try again when it finishes");
    case SQLITE_READONLY:
      return make_error(path + " is read-only: cannot " + doing + " (" + detail + ")");
    case SQLITE_NOTADB:
      return make_error(path + ": file is not a database (is it a tessel.db?)");
    case SQLITE_CORRUPT:
      return make_error(path + " is corrupt (" + detail + ") while trying to " + doing +
                        "; restore it from a backup or re-import an exported tuning log");
    case SQLITE_CANTOPEN:
      return make_error("cannot open " + path + " (" + detail + "): does its directory exist and is it writable?");
    case SQLITE_FULL:
      return make_error(path + ": disk full while trying to " + doing);
    case SQLITE_IOERR:
      return make_error(path + ": I/O error while trying to " + doing + " (" + detail + ")");
    default:
      return make_error(path + ": cannot " + doing + ": " + detail);
  }
}

Result<SqliteStatement> SqliteStatement::prepare(sqlite3 *db, const std::string &path, const char *sql) {
  sqlite3_stmt *stmt = nullptr;
  const int code = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (code != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return sqlite_error(db, code, path, "prepare a query");
  }
  return SqliteStatement(db, path, stmt);
}

SqliteStatement &SqliteStatement::operator=(SqliteStatement &&other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    path_ = std::move(other.path_);
    stmt_ = other.stmt_;
    other.stmt_ = nullptr;
  }
  return *this;
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

SqliteStatement &SqliteStatement::bind(int index, const std::string &text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement &SqliteStatement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

SqliteStatement &SqliteStatement::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

SqliteStatement &SqliteStatement::bind(int index, const std::optional<double> &value) {
  return value ? bind(index, *value) : bind_null(index);
}

SqliteStatement &SqliteStatement::bind_blob(int index, const std::vector<uint8_t> &bytes) {
  // A zero-length blob must stay a blob (an empty feature vector), not NULL.
  static const uint8_t empty = 0;
  sqlite3_bind_blob(stmt_, index, bytes.empty() ? &empty : bytes.data(), static_cast<int>(bytes.size()),
                    SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement &SqliteStatement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

int SqliteStatement::step() { return sqlite3_step(stmt_); }

Result<void> SqliteStatement::run(const std::string &doing) {
  const int code = step();
  if (code == SQLITE_DONE) return {};
  if (code == SQLITE_ROW) return make_error(path_ + ": internal error: " + doing + " returned rows");
  return sqlite_error(db_, code, path_, doing);
}

bool SqliteStatement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::string SqliteStatement::text(int column) const {
  const auto *chars = reinterpret_cast<const char *>(sqlite3_column_text(stmt_, column));
  return chars ? std::string(chars, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))) : std::string();
}

int64_t SqliteStatement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }

double SqliteStatement::real(int column) const { return sqlite3_column_double(stmt_, column); }

std::vector<uint8_t> SqliteStatement::blob(int column) const {
  const auto *bytes = static_cast<const uint8_t *>(sqlite3_column_blob(stmt_, column));
  const int size = sqlite3_column_bytes(stmt_, column);
  return bytes ? std::vector<uint8_t>(bytes, bytes + size) : std::vector<uint8_t>();
}

Result<void> sqlite_exec(sqlite3 *db, const std::string &path, const char *sql, const std::string &doing) {
  const int code = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (code != SQLITE_OK) return sqlite_error(db, code, path, doing);
  return {};
}

Result<WriteTransaction> WriteTransaction::begin(sqlite3 *db, const std::string &path) {
  auto begun = sqlite_exec(db, path, "BEGIN IMMEDIATE", "start a write transaction");
  if (!begun.ok()) return begun.error();
  return WriteTransaction(db, path);
}

WriteTransaction::~WriteTransaction() {
  if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

Result<void> WriteTransaction::commit() {
  auto committed = sqlite_exec(db_, path_, "COMMIT", "commit");
  if (!committed.ok()) return committed.error();  // still open_: the destructor rolls back
  open_ = false;
  return {};
}

}  // namespace tessel
