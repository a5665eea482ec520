#pragma once
// The PostgreSQL backend of the tuning database: a server that tuners and workers on many
// machines share. libpq directly (not libpqxx): tessel's errors are values, not exceptions,
// libpq's C API is the one every PostgreSQL release ships and keeps stable, and its URL
// parsing, environment variables (PGHOST, PGPASSWORD, ...) and TLS settings (sslmode) then
// reach users unchanged.
#include <memory>
#include <string>

#include "base/result.h"
#include "tuning_db/sql_connection.h"

namespace tessel {

struct PostgresOpenOptions {
  /// The session refuses writes (default_transaction_read_only).
  bool read_only = false;
  /// Seconds to wait for the server when neither the URL nor PGCONNECT_TIMEOUT says.
  int connect_timeout_s = 10;
};

/// Connects to the server the libpq URL names. Errors name the URL with its password masked.
Result<std::unique_ptr<SqlConnection>> open_postgres(const std::string &url, const PostgresOpenOptions &options);

/// The URL's placeholders ?N (and bare ?, numbered in order) as PostgreSQL's $N; text in
/// single quotes is left alone.
std::string postgres_placeholders(const std::string &sql);

}  // namespace tessel
