#include "tuning_db/postgres_connection.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <set>
#include <thread>

#include "tuning_db/database_location.h"

namespace tessel {

namespace {

/// libpq's messages end in a newline and may span lines; one line reads better after ours.
std::string one_line(const char *message) {
  std::string text = message ? message : "";
  for (char &c : text)
    if (c == '\n' || c == '\t') c = ' ';
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

/// Whether a failed statement may succeed when tried again: the connection broke (class 08),
/// the server is shutting down or starting (57P), or a deadlock or serialization failure
/// rolled the transaction back (40). Those are ErrorKind::Unreachable, which callers retry;
/// any other server error is the statement's own.
ErrorKind kind_of_failure(const PGresult *result) {
  const char *state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  if (!state) return ErrorKind::Unreachable;  // no answer from the server at all
  const std::string code = state;
  if (code.rfind("08", 0) == 0 || code.rfind("57P", 0) == 0 || code.rfind("40", 0) == 0)
    return ErrorKind::Unreachable;
  return ErrorKind::Unspecified;
}

std::string hex_bytea(const std::vector<uint8_t> &bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string text = "\\x";
  text.reserve(2 + bytes.size() * 2);
  for (uint8_t byte : bytes) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 15];
  }
  return text;
}

/// Doubles as text that reads back exactly.
std::string exact_text(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

class PostgresQuery : public SqlQuery {
 public:
  PostgresQuery(PGconn *connection, const std::string &location, std::string sql, std::string doing)
      : connection_(connection), location_(location), sql_(std::move(sql)), doing_(std::move(doing)) {}
  PostgresQuery(const PostgresQuery &) = delete;
  PostgresQuery &operator=(const PostgresQuery &) = delete;
  ~PostgresQuery() override { PQclear(result_); }

  Result<bool> next() override {
    if (!result_) {
      auto ran = execute();
      if (!ran.ok()) return ran.error();
      row_ = -1;
    }
    if (row_ + 1 >= PQntuples(result_)) return false;
    ++row_;
    return true;
  }

  bool is_null(int column) const override { return PQgetisnull(result_, row_, column) == 1; }
  std::string text(int column) const override {
    return std::string(PQgetvalue(result_, row_, column), static_cast<size_t>(PQgetlength(result_, row_, column)));
  }
  int64_t integer(int column) const override { return std::strtoll(PQgetvalue(result_, row_, column), nullptr, 10); }
  double real(int column) const override { return std::strtod(PQgetvalue(result_, row_, column), nullptr); }
  std::vector<uint8_t> blob(int column) const override {
    size_t size = 0;
    unsigned char *bytes =
        PQunescapeBytea(reinterpret_cast<const unsigned char *>(PQgetvalue(result_, row_, column)), &size);
    if (!bytes) return {};
    std::vector<uint8_t> copy(bytes, bytes + size);
    PQfreemem(bytes);
    return copy;
  }
  int64_t changes() const override {
    const char *count = result_ ? PQcmdTuples(result_) : "";
    return *count ? std::strtoll(count, nullptr, 10) : 0;
  }

 private:
  Result<void> execute() {
    std::vector<std::string> texts(parameters_.size());
    std::vector<const char *> values(parameters_.size(), nullptr);
    for (size_t i = 0; i < parameters_.size(); ++i) {
      const SqlValue &value = parameters_[i];
      if (std::holds_alternative<std::monostate>(value)) continue;
      if (const auto *integer = std::get_if<int64_t>(&value)) texts[i] = std::to_string(*integer);
      else if (const auto *real = std::get_if<double>(&value)) texts[i] = exact_text(*real);
      else if (const auto *text = std::get_if<std::string>(&value)) texts[i] = *text;
      else texts[i] = hex_bytea(std::get<std::vector<uint8_t>>(value));
      values[i] = texts[i].c_str();
    }
    result_ = PQexecParams(connection_, sql_.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                           nullptr, nullptr, 0);
    const ExecStatusType status = result_ ? PQresultStatus(result_) : PGRES_FATAL_ERROR;
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) return {};
    const std::string detail = one_line(result_ ? PQresultErrorMessage(result_) : PQerrorMessage(connection_));
    const ErrorKind kind = kind_of_failure(result_);
    PQclear(result_);
    result_ = nullptr;
    if (PQstatus(connection_) != CONNECTION_OK)
      return Error{location_ + ": lost the connection to the server while trying to " + doing_ + " (" + detail + ")",
                   ErrorKind::Unreachable};
    return Error{location_ + ": cannot " + doing_ + ": " + detail, kind};
  }

  PGconn *connection_;
  const std::string &location_;  // the connection's, which outlives its queries
  std::string sql_;
  std::string doing_;
  PGresult *result_ = nullptr;
  int row_ = -1;
};

void ignore_notice(void *, const char *) {}  // "relation already exists, skipping" and the like

class PostgresConnection : public SqlConnection {
 public:
  PostgresConnection(PGconn *connection, std::string location, bool read_only)
      : connection_(connection), location_(std::move(location)), read_only_(read_only) {}
  PostgresConnection(const PostgresConnection &) = delete;
  PostgresConnection &operator=(const PostgresConnection &) = delete;
  ~PostgresConnection() override { PQfinish(connection_); }

  SqlBackend backend() const override { return SqlBackend::Postgres; }
  const std::string &location() const override { return location_; }

  /// Settings every session of this connection carries (again after a reconnect).
  Result<void> start_session() {
    PQsetNoticeProcessor(connection_, ignore_notice, nullptr);
    if (read_only_) return run_plain("SET default_transaction_read_only = on", "open the database read-only");
    return {};
  }

  Result<std::unique_ptr<SqlQuery>> prepare(const std::string &sql, const std::string &doing) override {
    auto usable = reconnect_if_lost();
    if (!usable.ok()) return usable.error();
    return std::unique_ptr<SqlQuery>(new PostgresQuery(connection_, location_, postgres_placeholders(sql), doing));
  }

  Result<void> execute(const std::string &sql, const std::string &doing) override {
    const bool ends_transaction = sql == "COMMIT" || sql == "ROLLBACK";
    if (ends_transaction && PQstatus(connection_) != CONNECTION_OK) {
      in_transaction_ = false;  // the server rolled it back when the session ended
      return Error{location_ + ": lost the connection to the server before the transaction committed", ErrorKind::Unreachable};
    }
    auto usable = reconnect_if_lost();
    if (!usable.ok()) return usable.error();
    auto ran = run_plain(sql, doing);
    if (ends_transaction) in_transaction_ = false;
    return ran;
  }

  std::string now_seconds_sql() const override { return "extract(epoch from clock_timestamp())::double precision"; }

  bool in_transaction() const override { return in_transaction_; }

  Result<void> notify(const std::string &channel) override {
    return execute("NOTIFY " + channel, "notify " + channel);
  }

  void wait_for_notification(const std::string &channel, double timeout_seconds) override {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
    // LISTEN once per session (a reconnect starts a new one).
    if (listening_.count(channel) == 0 || PQstatus(connection_) != CONNECTION_OK) {
      if (!reconnect_if_lost().ok() || !run_plain("LISTEN " + channel, "listen on " + channel).ok()) {
        std::this_thread::sleep_for(std::chrono::duration<double>(timeout_seconds));
        return;
      }
      listening_.insert(channel);
    }
    while (true) {
      PQconsumeInput(connection_);
      bool notified = false;
      while (PGnotify *notification = PQnotifies(connection_)) {
        notified |= channel == notification->relname;
        PQfreemem(notification);
      }
      if (notified) return;
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return;
      pollfd socket{PQsocket(connection_), POLLIN, 0};
      if (socket.fd < 0) {
        std::this_thread::sleep_for(std::chrono::duration<double>(left));
        return;
      }
      ::poll(&socket, 1, static_cast<int>(left * 1000) + 1);
    }
  }

  Result<void> begin_write() override {
    auto begun = execute("BEGIN", "start a write transaction");
    if (begun.ok()) in_transaction_ = true;
    return begun;
  }

  Result<int> schema_version() override {
    auto exists = single_integer(
        "SELECT CASE WHEN to_regclass('tessel_schema_version') IS NULL THEN 0 ELSE 1 END", "read the schema");
    if (!exists.ok()) return exists.error();
    if (exists.value() == 0) return 0;
    auto version = single_integer("SELECT coalesce(max(version), 0) FROM tessel_schema_version",
                                  "read the schema version");
    if (!version.ok()) return version.error();
    return static_cast<int>(version.value());
  }

  Result<void> set_schema_version(int version) override {
    return execute("CREATE TABLE IF NOT EXISTS tessel_schema_version(version INTEGER NOT NULL);"
                   "DELETE FROM tessel_schema_version;"
                   "INSERT INTO tessel_schema_version(version) VALUES(" + std::to_string(version) + ")",
                   "record the schema version");
  }

  Result<bool> has_foreign_tables() override {
    auto tables = single_integer("SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
                                 "read the schema");
    if (!tables.ok()) return tables.error();
    return tables.value() > 0;
  }

  /// A session advisory lock: a second migrating process waits at this line. The server
  /// drops it with the session if this process dies.
  Result<void> lock_migrations() override {
    return execute("SELECT pg_advisory_lock(7419810315)", "wait for another process's schema migration");
  }
  void unlock_migrations() override {
    (void)execute("SELECT pg_advisory_unlock(7419810315)", "end the schema migration");
  }

 private:
  Result<void> run_plain(const std::string &sql, const std::string &doing) {
    PGresult *result = PQexec(connection_, sql.c_str());
    const ExecStatusType status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
    const std::string detail = one_line(result ? PQresultErrorMessage(result) : PQerrorMessage(connection_));
    const ErrorKind kind = PQstatus(connection_) != CONNECTION_OK ? ErrorKind::Unreachable : kind_of_failure(result);
    PQclear(result);
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) return {};
    return Error{location_ + ": cannot " + doing + ": " + detail, kind};
  }

  Result<int64_t> single_integer(const std::string &sql, const std::string &doing) {
    auto query = prepare(sql, doing);
    if (!query.ok()) return query.error();
    auto row = query.value()->next();
    if (!row.ok()) return row.error();
    if (!row.value()) return make_error(ErrorKind::Internal, location_ + ": cannot " + doing + ": no row");
    return query.value()->integer(0);
  }

  /// A server restart or a network cut ends the session; outside a transaction nothing is
  /// lost by starting a new one. Inside one, the server has rolled it back: say so instead.
  Result<void> reconnect_if_lost() {
    if (PQstatus(connection_) == CONNECTION_OK) return {};
    if (in_transaction_)
      return Error{location_ + ": lost the connection to the server in the middle of a transaction", ErrorKind::Unreachable};
    PQreset(connection_);
    if (PQstatus(connection_) != CONNECTION_OK)
      return Error{location_ + ": lost the connection to the server and cannot reconnect (" +
                       one_line(PQerrorMessage(connection_)) + ")",
                   ErrorKind::Unreachable};
    listening_.clear();  // a new session listens to nothing yet
    return start_session();
  }

  PGconn *connection_;
  std::string location_;
  bool read_only_;
  bool in_transaction_ = false;
  std::set<std::string> listening_;  // channels this session LISTENs on
};

}  // namespace

std::string postgres_placeholders(const std::string &sql) {
  std::string converted;
  converted.reserve(sql.size() + 8);
  bool in_quotes = false;
  int bare = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '\'') in_quotes = !in_quotes;
    if (c != '?' || in_quotes) {
      converted += c;
      continue;
    }
    converted += '$';
    if (i + 1 < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + 1]))) continue;  // ?N keeps its N
    converted += std::to_string(++bare);
  }
  return converted;
}

Result<std::unique_ptr<SqlConnection>> open_postgres(const std::string &url, const PostgresOpenOptions &options) {
  const std::string location = masked_location(url);
  // Later keywords override earlier ones: the URL's own settings (and libpq's environment
  // variables, which fill what is left) win over tessel's defaults.
  std::vector<const char *> keywords = {"application_name"};
  std::vector<const char *> values = {"tessel"};
  const std::string timeout = std::to_string(options.connect_timeout_s);
  if (!std::getenv("PGCONNECT_TIMEOUT")) {
    keywords.push_back("connect_timeout");
    values.push_back(timeout.c_str());
  }
  keywords.push_back("dbname");
  values.push_back(url.c_str());
  keywords.push_back(nullptr);
  values.push_back(nullptr);
  PGconn *handle = PQconnectdbParams(keywords.data(), values.data(), 1);
  if (!handle) return Error{location + ": cannot connect (out of memory)", ErrorKind::Unreachable};
  if (PQstatus(handle) != CONNECTION_OK) {
    Error error{"cannot connect to the tuning database " + location + ": " + one_line(PQerrorMessage(handle)),
                ErrorKind::Unreachable};
    PQfinish(handle);
    return error;
  }
  auto connection = std::make_unique<PostgresConnection>(handle, location, options.read_only);
  auto started = connection->start_session();
  if (!started.ok()) return started.error();
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

}  // namespace tessel
