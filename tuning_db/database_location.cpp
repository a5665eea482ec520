#include "tuning_db/database_location.h"

#include <sys/stat.h>

namespace tessel {

namespace {

bool starts_with(const std::string &text, const char *prefix) { return text.rfind(prefix, 0) == 0; }

/// Replaces the value of every `password=` parameter in the URL's query part.
std::string mask_query_passwords(std::string url) {
  const size_t query = url.find('?');
  if (query == std::string::npos) return url;
  size_t at = query + 1;
  while (at < url.size()) {
    size_t end = url.find('&', at);
    if (end == std::string::npos) end = url.size();
    if (url.compare(at, 9, "password=") == 0 && end > at + 9) {
      url.replace(at + 9, end - at - 9, "***");
      end = at + 12;
    }
    at = end + 1;
  }
  return url;
}

}  // namespace

bool is_postgres_url(const std::string &location) {
  return starts_with(location, "postgresql://") || starts_with(location, "postgres://");
}

std::string masked_location(const std::string &location) {
  if (!is_postgres_url(location)) return location;
  std::string url = location;
  const size_t authority = url.find("://") + 3;
  // The authority ends at the first '/' or '?'; user:password@ sits at its start.
  size_t authority_end = url.find_first_of("/?", authority);
  if (authority_end == std::string::npos) authority_end = url.size();
  const size_t at_sign = url.rfind('@', authority_end);
  if (at_sign != std::string::npos && at_sign >= authority) {
    const size_t colon = url.find(':', authority);
    if (colon != std::string::npos && colon < at_sign) url.replace(colon + 1, at_sign - colon - 1, "***");
  }
  return mask_query_passwords(url);
}

bool database_may_exist(const std::string &location) {
  if (is_postgres_url(location)) return true;
  struct stat info;
  return ::stat(location.c_str(), &info) == 0;
}

}  // namespace tessel
