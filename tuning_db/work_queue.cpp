#include "tuning_db/work_queue.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "tuning_db/feature_blob.h"

namespace tessel {

namespace {

// The notification channels: new candidates for workers, completions for coordinators.
constexpr const char *kWorkChannel = "tessel_queue_work";
constexpr const char *kProgressChannel = "tessel_queue_progress";

QueuedCandidate read_candidate(const SqlQuery &row) {
  QueuedCandidate candidate;
  candidate.id = row.integer(0);
  candidate.batch = row.text(1);
  candidate.workload_key = row.text(2);
  candidate.target = row.text(3);
  candidate.schedule_text = row.text(4);
  candidate.schedule_hash = row.text(5);
  if (!row.is_null(6)) {
    // A damaged blob loses the features, not the candidate.
    if (auto features = decode_features(row.blob(6)); features.ok()) candidate.features = std::move(features.value());
  }
  candidate.attempts = static_cast<int>(row.integer(7));
  return candidate;
}

}  // namespace

Result<void> WorkQueue::enqueue(const std::string &batch, const std::vector<QueuedCandidate> &candidates) {
  SqlConnection &connection = *db_.connection_;
  auto transaction = SqlTransaction::begin(connection);
  if (!transaction.ok()) return transaction.error();
  const std::string created_at = utc_timestamp_now();
  for (const QueuedCandidate &candidate : candidates) {
    auto insert = connection.prepare(
        "INSERT INTO queue(batch, workload_key, target, schedule_text, schedule_hash, features, created_at) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(batch, workload_key, schedule_hash) DO NOTHING",
        "queue a candidate of workload " + candidate.workload_key);
    if (!insert.ok()) return insert.error();
    SqlQuery &query = *insert.value();
    query.bind(1, batch)
        .bind(2, candidate.workload_key)
        .bind(3, candidate.target)
        .bind(4, candidate.schedule_text)
        .bind(5, candidate.schedule_hash)
        .bind(7, created_at);
    if (candidate.features) query.bind_blob(6, encode_features(*candidate.features));
    else query.bind_null(6);
    if (auto ran = query.run(); !ran.ok()) return ran.error();
  }
  if (auto notified = connection.notify(kWorkChannel); !notified.ok()) return notified.error();
  return transaction->commit();
}

Result<std::vector<QueuedCandidate>> WorkQueue::claim(const std::string &target, const std::string &worker, int limit,
                                                      double lease_seconds) {
  SqlConnection &connection = *db_.connection_;
  const std::string now = connection.now_seconds_sql();
  // PostgreSQL: rows another worker is claiming at this moment are skipped, not waited for.
  const char *skip_locked = connection.backend() == SqlBackend::Postgres ? " FOR UPDATE SKIP LOCKED" : "";
  const std::string sql =
      "UPDATE queue SET state = 'claimed', worker = ?1, lease_until = " + now + " + ?2, attempts = attempts + 1 "
      "WHERE id IN (SELECT id FROM queue WHERE target = ?3 AND state != 'done' AND "
      "(state = 'queued' OR lease_until < " + now + ") ORDER BY id LIMIT ?4" + skip_locked + ") "
      "RETURNING id, batch, workload_key, target, schedule_text, schedule_hash, features, attempts";
  auto transaction = SqlTransaction::begin(connection);
  if (!transaction.ok()) return transaction.error();
  auto claim = connection.prepare(sql, "claim queued candidates");
  if (!claim.ok()) return claim.error();
  claim.value()->bind(1, worker).bind(2, lease_seconds).bind(3, target).bind(4, static_cast<int64_t>(limit));
  std::vector<QueuedCandidate> claimed;
  while (true) {
    auto row = claim.value()->next();
    if (!row.ok()) return row.error();
    if (!row.value()) break;
    claimed.push_back(read_candidate(*claim.value()));
  }
  claim.value().reset();  // SQLite: the statement must be finished before COMMIT
  if (auto committed = transaction->commit(); !committed.ok()) return committed.error();
  std::sort(claimed.begin(), claimed.end(),
            [](const QueuedCandidate &a, const QueuedCandidate &b) { return a.id < b.id; });
  return claimed;
}

Result<int64_t> WorkQueue::renew_leases(const std::string &worker, double lease_seconds) {
  SqlConnection &connection = *db_.connection_;
  auto renew = connection.prepare("UPDATE queue SET lease_until = " + connection.now_seconds_sql() +
                                      " + ?2 WHERE worker = ?1 AND state = 'claimed'",
                                  "renew the leases of worker " + worker);
  if (!renew.ok()) return renew.error();
  renew.value()->bind(1, worker).bind(2, lease_seconds);
  return renew.value()->run();
}

Result<bool> WorkQueue::complete(const QueuedCandidate &candidate, const TuningRecord &record) {
  SqlConnection &connection = *db_.connection_;
  auto transaction = SqlTransaction::begin(connection);
  if (!transaction.ok()) return transaction.error();
  auto inserted = db_.insert_record(record);
  if (!inserted.ok()) return inserted.error();
  auto done = connection.prepare("UPDATE queue SET state = 'done', lease_until = 0 WHERE id = ?1",
                                 "mark a queued candidate done");
  if (!done.ok()) return done.error();
  done.value()->bind(1, candidate.id);
  if (auto ran = done.value()->run(); !ran.ok()) return ran.error();
  done.value().reset();
  if (auto notified = connection.notify(kProgressChannel); !notified.ok()) return notified.error();
  if (auto committed = transaction->commit(); !committed.ok()) return committed.error();
  return inserted.value();
}

void WorkQueue::wait_for_work(double timeout_seconds) {
  db_.connection_->wait_for_notification(kWorkChannel, timeout_seconds);
}

void WorkQueue::wait_for_progress(double timeout_seconds) {
  db_.connection_->wait_for_notification(kProgressChannel, timeout_seconds);
}

Result<int64_t> WorkQueue::unfinished(const std::string &batch) {
  auto count = db_.connection_->prepare("SELECT count(*) FROM queue WHERE batch = ?1 AND state != 'done'",
                                        "count the batch's unfinished candidates");
  if (!count.ok()) return count.error();
  count.value()->bind(1, batch);
  auto row = count.value()->next();
  if (!row.ok()) return row.error();
  return row.value() ? count.value()->integer(0) : 0;
}

Result<void> WorkQueue::forget(const std::string &batch) {
  auto remove = db_.connection_->prepare("DELETE FROM queue WHERE batch = ?1", "remove a finished batch");
  if (!remove.ok()) return remove.error();
  remove.value()->bind(1, batch);
  auto ran = remove.value()->run();
  if (!ran.ok()) return ran.error();
  return {};
}

Result<QueueStats> WorkQueue::stats() {
  SqlConnection &connection = *db_.connection_;
  auto query = connection.prepare("SELECT CASE WHEN state = 'claimed' AND lease_until < " +
                                      connection.now_seconds_sql() +
                                      " THEN 'expired' ELSE state END AS s, count(*) FROM queue GROUP BY s",
                                  "count queued candidates");
  if (!query.ok()) return query.error();
  QueueStats stats;
  while (true) {
    auto row = query.value()->next();
    if (!row.ok()) return row.error();
    if (!row.value()) break;
    const std::string state = query.value()->text(0);
    const int64_t count = query.value()->integer(1);
    if (state == "queued") stats.queued = count;
    else if (state == "claimed") stats.claimed = count;
    else if (state == "expired") stats.expired = count;
    else if (state == "done") stats.done = count;
  }
  return stats;
}

std::string new_batch_name() {
  std::random_device entropy;
  std::mt19937_64 bits((static_cast<uint64_t>(entropy()) << 32) ^ entropy());
  char name[17];
  std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(bits()));
  return name;
}

}  // namespace tessel
