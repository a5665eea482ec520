#pragma once
// Fresh databases on the tests' PostgreSQL server (scripts/pg_test_server.sh, started by the
// CTest fixture `postgres`). CTest passes TESSEL_TEST_POSTGRES_URL_FILE, the file holding the
// server's URL; a test binary run by hand without it tests SQLite alone.
#include <optional>
#include <string>

namespace tessel::testing {

/// The server's URL (to its maintenance database). Throws when the variable is set but the
/// file cannot be read or the server does not answer: a fixture that failed must fail the
/// tests, not skip them.
std::optional<std::string> postgres_test_server();

/// A new, empty database on the test server, dropped (connections and all) when destroyed.
class PostgresTestDatabase {
 public:
  explicit PostgresTestDatabase(const std::string &server_url);
  ~PostgresTestDatabase();
  PostgresTestDatabase(const PostgresTestDatabase &) = delete;
  PostgresTestDatabase &operator=(const PostgresTestDatabase &) = delete;

  const std::string &url() const { return url_; }

 private:
  std::string server_url_;
  std::string name_;
  std::string url_;
};

}  // namespace tessel::testing
