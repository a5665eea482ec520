#pragma once
// The tuning database's backends behind one small interface: SQLite (the embedded default,
// one machine) and PostgreSQL (a server that many tuners and workers share). TuningDatabase
// writes each query once, in SQL both accept, with ?1..?N placeholders; a backend only
// runs statements, keeps transactions and knows how its schema version is stored.
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "base/result.h"

namespace tessel {

enum class SqlBackend { Sqlite, Postgres };

/// A bound parameter: NULL, integer, real, text or blob.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string, std::vector<uint8_t>>;

/// One statement with its parameters; it runs at the first next(). Binds are 1-based,
/// columns 0-based. Column reads are valid while next() last returned true.
class SqlQuery {
 public:
  virtual ~SqlQuery() = default;

  SqlQuery &bind(int index, const std::string &text) { return set(index, text); }
  SqlQuery &bind(int index, int64_t value) { return set(index, value); }
  SqlQuery &bind(int index, double value) { return set(index, value); }
  SqlQuery &bind(int index, const std::optional<double> &value);
  SqlQuery &bind_blob(int index, const std::vector<uint8_t> &bytes) { return set(index, bytes); }
  SqlQuery &bind_null(int index) { return set(index, std::monostate{}); }

  /// Runs the statement on the first call; true while there is a row to read.
  virtual Result<bool> next() = 0;
  /// Runs the statement to its end; returns how many rows it inserted, updated or deleted.
  Result<int64_t> run();

  virtual bool is_null(int column) const = 0;
  virtual std::string text(int column) const = 0;
  virtual int64_t integer(int column) const = 0;
  virtual double real(int column) const = 0;
  virtual std::vector<uint8_t> blob(int column) const = 0;
  /// Rows the finished statement inserted, updated or deleted.
  virtual int64_t changes() const = 0;

 protected:
  /// Parameter i + 1; unbound ones are NULL.
  std::vector<SqlValue> parameters_;

 private:
  SqlQuery &set(int index, SqlValue value);
};

/// One connection to one database; use it from one thread at a time.
class SqlConnection {
 public:
  virtual ~SqlConnection() = default;

  virtual SqlBackend backend() const = 0;
  /// Where the database is, fit to print: a file path, or a URL with its password masked.
  virtual const std::string &location() const = 0;

  /// `doing` says what the statement is for; its errors name it and the database.
  virtual Result<std::unique_ptr<SqlQuery>> prepare(const std::string &sql, const std::string &doing) = 0;
  /// Runs SQL without results; it may hold several statements.
  virtual Result<void> execute(const std::string &sql, const std::string &doing) = 0;

  /// An SQL expression for the database's clock, in seconds since the epoch: leases are
  /// stamped and compared with the server's clock, not each worker's.
  virtual std::string now_seconds_sql() const = 0;

  /// Wakes every connection waiting on `channel` (PostgreSQL NOTIFY, delivered when the
  /// surrounding transaction commits); nothing on SQLite, whose waiters poll.
  virtual Result<void> notify(const std::string &channel) = 0;
  /// Waits until `channel` is notified or `timeout_seconds` pass (PostgreSQL LISTEN). SQLite
  /// has no notifications: it sleeps a short poll interval (at most the timeout) instead.
  virtual void wait_for_notification(const std::string &channel, double timeout_seconds) = 0;

  /// Whether a transaction is open on this connection.
  virtual bool in_transaction() const = 0;

  /// Starts a transaction that will write. SQLite takes the write lock up front (BEGIN
  /// IMMEDIATE), so a busy file waits at the start instead of failing half-way through.
  virtual Result<void> begin_write() = 0;

  /// The schema version stamped in the database: 0 for one tessel never wrote.
  virtual Result<int> schema_version() = 0;
  /// Stamps the version; inside the migration's transaction.
  virtual Result<void> set_schema_version(int version) = 0;
  /// Whether a database without tessel's schema holds other tables (someone else's data).
  virtual Result<bool> has_foreign_tables() = 0;
  /// Around the migration's transaction (taken before it begins, released after it ends):
  /// makes a second process that migrates at the same time wait for this one. SQLite's
  /// write lock already does; PostgreSQL takes a session advisory lock. Before, not inside:
  /// a PostgreSQL transaction that began before another's schema change committed may
  /// still resolve table names from its stale catalog cache.
  virtual Result<void> lock_migrations() = 0;
  virtual void unlock_migrations() = 0;
};

/// A write transaction, rolled back when destroyed uncommitted.
class SqlTransaction {
 public:
  static Result<SqlTransaction> begin(SqlConnection &connection);
  SqlTransaction(SqlTransaction &&other) noexcept : connection_(other.connection_) { other.connection_ = nullptr; }
  SqlTransaction &operator=(SqlTransaction &&) = delete;
  SqlTransaction(const SqlTransaction &) = delete;
  SqlTransaction &operator=(const SqlTransaction &) = delete;
  ~SqlTransaction();
  Result<void> commit();

 private:
  explicit SqlTransaction(SqlConnection *connection) : connection_(connection) {}
  SqlConnection *connection_;  // null once committed or moved from
};

}  // namespace tessel
