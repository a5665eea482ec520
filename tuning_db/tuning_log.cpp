#include "tuning_db/tuning_log.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace tessel {

/// Faster first; among equal times the earlier record, as the database orders them.
static bool runs_faster(const TuningRecord &a, const TuningRecord &b) {
  if (*a.median_seconds != *b.median_seconds) return *a.median_seconds < *b.median_seconds;
  return a.id < b.id;
}

Result<bool> TuningLog::add(TuningLogEntry entry) {
  TuningRecord &record = entry.record;
  auto valid = validate_record(record);
  if (!valid.ok()) return valid.error();
  auto [known, inserted_text] = workload_texts_.emplace(record.workload_key, entry.workload_text);
  if (!inserted_text && known->second != entry.workload_text)
    return make_error(ErrorKind::InvalidInput,
                      "workload " + record.workload_key + " appears with two different workload texts");
  if (!measured_.emplace(record.workload_key, record.target, record.schedule_hash).second) return false;
  records_.push_back(std::move(record));
  return true;
}

std::vector<TuningRecord> TuningLog::top_k(const std::string &workload_key, const std::string &target, int k) const {
  std::vector<TuningRecord> ok_records;
  for (const TuningRecord &record : records_)
    if (record.status == RecordStatus::Ok && record.workload_key == workload_key && record.target == target)
      ok_records.push_back(record);
  std::sort(ok_records.begin(), ok_records.end(), runs_faster);
  if (k < 0) k = 0;
  if (ok_records.size() > static_cast<size_t>(k)) ok_records.resize(static_cast<size_t>(k));
  return ok_records;
}

Result<std::optional<TuningRecord>> TuningLog::best(const std::string &workload_key, const std::string &target) const {
  const TuningRecord *fastest = nullptr;
  for (const TuningRecord &record : records_)
    if (record.status == RecordStatus::Ok && record.workload_key == workload_key && record.target == target &&
        (!fastest || runs_faster(record, *fastest)))
      fastest = &record;
  if (!fastest) return std::optional<TuningRecord>();
  return std::optional<TuningRecord>(*fastest);
}

std::optional<std::string> TuningLog::workload_text(const std::string &key) const {
  auto found = workload_texts_.find(key);
  if (found == workload_texts_.end()) return std::nullopt;
  return found->second;
}

Result<TuningLog> read_tuning_log(std::istream &in, const std::string &source_name) {
  TuningLog log;
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    auto entry = parse_log_line(line);
    if (!entry.ok())
      return make_error(entry.error().kind,
                        source_name + ":" + std::to_string(line_number) + ": " + entry.error().message);
    entry->record.id = line_number;
    auto added = log.add(std::move(entry.value()));
    if (!added.ok())
      return make_error(added.error().kind,
                        source_name + ":" + std::to_string(line_number) + ": " + added.error().message);
  }
  if (in.bad())
    return make_error(ErrorKind::Io, source_name + ": read error after line " + std::to_string(line_number));
  return log;
}

Result<TuningLog> read_tuning_log(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorKind::NotFound, path + ": cannot open tuning log (" + std::strerror(errno) + ")");
  return read_tuning_log(in, path);
}

}  // namespace tessel
