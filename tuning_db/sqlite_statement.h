#pragma once
// Thin RAII over the SQLite C API for tuning_db's own use (not a public header of the
// library's users): prepared statements, transactions, and errors that name the file.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace tessel {

/// An Error for a failed SQLite call: names the database file and says in plain words what
/// a busy (locked), read-only, corrupt or non-database file means. `doing` is what we tried.
Error sqlite_error(sqlite3 *db, int code, const std::string &path, const std::string &doing);

/// A prepared statement; binds are 1-based like SQLite's, columns 0-based.
class SqliteStatement {
 public:
  static Result<SqliteStatement> prepare(sqlite3 *db, const std::string &path, const char *sql);
  SqliteStatement(SqliteStatement &&other) noexcept
      : db_(other.db_), path_(std::move(other.path_)), stmt_(other.stmt_) {
    other.stmt_ = nullptr;
  }
  SqliteStatement &operator=(SqliteStatement &&other) noexcept;
  SqliteStatement(const SqliteStatement &) = delete;
  SqliteStatement &operator=(const SqliteStatement &) = delete;
  ~SqliteStatement();

  SqliteStatement &bind(int index, const std::string &text);
  SqliteStatement &bind(int index, int64_t value);
  SqliteStatement &bind(int index, double value);
  SqliteStatement &bind(int index, const std::optional<double> &value);
  SqliteStatement &bind_blob(int index, const std::vector<uint8_t> &bytes);
  SqliteStatement &bind_null(int index);

  /// SQLITE_ROW, SQLITE_DONE or an error code.
  int step();
  /// Steps once expecting no row (INSERT/UPDATE); an Error otherwise.
  Result<void> run(const std::string &doing);

  bool is_null(int column) const;
  std::string text(int column) const;
  int64_t integer(int column) const;
  double real(int column) const;
  std::vector<uint8_t> blob(int column) const;

 private:
  SqliteStatement(sqlite3 *db, std::string path, sqlite3_stmt *stmt) : db_(db), path_(std::move(path)), stmt_(stmt) {}
  sqlite3 *db_ = nullptr;
  std::string path_;
  sqlite3_stmt *stmt_ = nullptr;
};

/// Runs SQL without results (may hold several statements).
Result<void> sqlite_exec(sqlite3 *db, const std::string &path, const char *sql, const std::string &doing);

/// BEGIN IMMEDIATE ... COMMIT, rolled back when destroyed uncommitted. IMMEDIATE takes
/// the write lock up front, so a busy database waits busy_timeout at BEGIN instead of
/// failing halfway through a transaction that has already read.
class WriteTransaction {
 public:
  static Result<WriteTransaction> begin(sqlite3 *db, const std::string &path);
  WriteTransaction(WriteTransaction &&other) noexcept
      : db_(other.db_), path_(std::move(other.path_)), open_(other.open_) {
    other.open_ = false;
  }
  WriteTransaction &operator=(WriteTransaction &&) = delete;
  WriteTransaction(const WriteTransaction &) = delete;
  ~WriteTransaction();
  Result<void> commit();

 private:
  WriteTransaction(sqlite3 *db, std::string path) : db_(db), path_(std::move(path)), open_(true) {}
  sqlite3 *db_;
  std::string path_;
  bool open_;
};

}  // namespace tessel
