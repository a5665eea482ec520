#include "tests/support/postgres_test_database.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace tessel::testing {

namespace {

/// Runs one statement on the server's maintenance database.
void run_on_server(const std::string &server_url, const std::string &sql) {
  PGconn *connection = PQconnectdb(server_url.c_str());
  std::string failure;
  if (PQstatus(connection) != CONNECTION_OK) {
    failure = std::string("cannot connect to the test server: ") + PQerrorMessage(connection);
  } else {
    PQsetNoticeProcessor(connection, [](void *, const char *) {}, nullptr);  // "does not exist, skipping"
    PGresult *result = PQexec(connection, sql.c_str());
    if (PQresultStatus(result) != PGRES_COMMAND_OK) failure = sql + ": " + PQresultErrorMessage(result);
    PQclear(result);
  }
  PQfinish(connection);
  if (!failure.empty()) throw std::runtime_error(failure);
}

/// The server URL with its database part replaced.
std::string with_database(const std::string &server_url, const std::string &database) {
  const size_t authority = server_url.find("://") + 3;
  const size_t slash = server_url.find('/', authority);
  return server_url.substr(0, slash == std::string::npos ? server_url.size() : slash) + "/" + database;
}

}  // namespace

std::optional<std::string> postgres_test_server() {
  const char *file = std::getenv("TESSEL_TEST_POSTGRES_URL_FILE");
  if (!file || !*file) return std::nullopt;
  std::ifstream in(file);
  std::string url;
  if (!(in >> url) || url.empty())
    throw std::runtime_error(std::string("TESSEL_TEST_POSTGRES_URL_FILE=") + file +
                             " but no server URL in it: did the postgres fixture (scripts/pg_test_server.sh) start?");
  return url;
}

PostgresTestDatabase::PostgresTestDatabase(const std::string &server_url) : server_url_(server_url) {
  static std::atomic<int> counter{0};
  name_ = "tessel_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  run_on_server(server_url_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  run_on_server(server_url_, "CREATE DATABASE " + name_);
  url_ = with_database(server_url_, name_);
}

PostgresTestDatabase::~PostgresTestDatabase() {
  try {
    run_on_server(server_url_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (...) {
    // A server already gone takes the database with it.
  }
}

}  // namespace tessel::testing
