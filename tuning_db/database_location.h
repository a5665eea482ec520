#pragma once
// What `--db` names: an SQLite file path, or a PostgreSQL server as a libpq URL
// (postgresql://user:password@host:port/dbname?sslmode=require). URLs can carry passwords,
// so anything printed goes through masked_location().
#include <string>

namespace tessel {

/// True for "postgresql://..." and "postgres://..." (what libpq takes as a URI).
bool is_postgres_url(const std::string &location);

/// The location fit to print: a URL's password (user:PASSWORD@ and ?password=...) becomes
/// "***". File paths come back unchanged.
std::string masked_location(const std::string &location);

/// Whether the database exists: a file that exists, or any server URL (a server is asked
/// when it is opened, not here).
bool database_may_exist(const std::string &location);

}  // namespace tessel
