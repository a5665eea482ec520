// The work queue of remote tuning (tuning_db/work_queue.h), on SQLite and on the test
// PostgreSQL server: claims, leases that run out, completion that records exactly once.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "tests/support/postgres_test_database.h"
#include "tests/support/temp_dir.h"
#include "tuning_db/work_queue.h"

using namespace tessel;

namespace {

std::vector<std::string> queue_backends() {
  std::vector<std::string> backends{"sqlite"};
  if (tessel::testing::postgres_test_server()) backends.push_back("postgres");
  return backends;
}

/// One fresh database of the backend, with one workload recorded.
struct QueueDatabase {
  explicit QueueDatabase(const std::string &backend) {
    if (backend == "sqlite") location = dir.file("queue.db");
    else {
      server.emplace(*tessel::testing::postgres_test_server());
      location = server->url();
    }
    REQUIRE(open().add_workload(kWorkload, "MatMul f32[8,8] f32[8,8] -> f32[8,8]").ok());
  }
  TuningDatabase open() const {
    auto db = TuningDatabase::open(location);
    INFO((db.ok() ? std::string() : db.error().message));
    REQUIRE(db.ok());
    return std::move(db.value());
  }
  static constexpr const char *kWorkload = "0123456789abcdef";
  tessel::testing::TempDir dir{"tessel_queue"};
  std::optional<tessel::testing::PostgresTestDatabase> server;
  std::string location;
};

QueuedCandidate candidate(const std::string &hash) {
  QueuedCandidate c;
  c.workload_key = QueueDatabase::kWorkload;
  c.target = "llvm";
  c.schedule_text = "tessel-schedule v1\n# " + hash + "\n";
  c.schedule_hash = hash;
  c.features = std::vector<float>{1.f, 2.f};
  return c;
}

TuningRecord record_of(const QueuedCandidate &c, double seconds, const std::string &machine) {
  TuningRecord r;
  r.workload_key = c.workload_key;
  r.target = c.target;
  r.machine = machine;
  r.schedule_text = c.schedule_text;
  r.schedule_hash = c.schedule_hash;
  r.median_seconds = seconds;
  r.timings_seconds = {seconds};
  r.features = c.features;
  return r;
}

std::vector<std::string> hashes(const std::vector<QueuedCandidate> &claimed) {
  std::vector<std::string> out;
  for (const QueuedCandidate &c : claimed) out.push_back(c.schedule_hash);
  return out;
}

}  // namespace

TEST_CASE("claims take queued candidates oldest first, each once while its lease runs", "[tuning_db][queue]") {
  QueueDatabase store(GENERATE(from_range(queue_backends())));
  TuningDatabase db = store.open();
  WorkQueue queue(db);
  REQUIRE(queue.enqueue("b1", {candidate("c1"), candidate("c2"), candidate("c3")}).ok());
  REQUIRE(queue.enqueue("b1", {candidate("c1")}).ok());  // the same candidate again is not added
  CHECK(queue.unfinished("b1").value() == 3);

  auto first = queue.claim("llvm", "w1", 2, 60);
  REQUIRE(first.ok());
  CHECK(hashes(first.value()) == std::vector<std::string>{"c1", "c2"});
  CHECK(first->front().attempts == 1);
  CHECK(first->front().features == std::optional<std::vector<float>>({1.f, 2.f}));
  auto second = queue.claim("llvm", "w2", 5, 60);
  REQUIRE(second.ok());
  CHECK(hashes(second.value()) == std::vector<std::string>{"c3"});
  CHECK(queue.claim("llvm", "w3", 5, 60).value().empty());
  CHECK(queue.claim("cuda", "w3", 5, 60).value().empty());  // other targets' candidates only

  auto stats = queue.stats();
  REQUIRE(stats.ok());
  CHECK(stats->claimed == 3);
  CHECK(stats->queued == 0);

  auto written = queue.complete(first->at(0), record_of(first->at(0), 1e-3, "machine A"));
  REQUIRE(written.ok());
  CHECK(written.value());
  CHECK(queue.unfinished("b1").value() == 2);
  auto record = db.find_record(QueueDatabase::kWorkload, "llvm", "c1");
  REQUIRE(record.ok());
  REQUIRE(record->has_value());
  CHECK((*record)->machine == "machine A");
  CHECK((*record)->features == std::optional<std::vector<float>>({1.f, 2.f}));
  REQUIRE(queue.forget("b1").ok());
  CHECK(queue.unfinished("b1").value() == 0);
}

TEST_CASE("a dead worker's lease runs out, its candidate is claimed again and recorded once", "[tuning_db][queue]") {
  QueueDatabase store(GENERATE(from_range(queue_backends())));
  TuningDatabase db = store.open();
  WorkQueue queue(db);
  REQUIRE(queue.enqueue("b2", {candidate("slow")}).ok());
  auto lost = queue.claim("llvm", "dead", 1, 0.3);
  REQUIRE(lost.ok());
  REQUIRE(lost->size() == 1);
  CHECK(queue.claim("llvm", "alive", 1, 60).value().empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  CHECK(queue.stats().value().expired == 1);
  auto again = queue.claim("llvm", "alive", 1, 60);
  REQUIRE(again.ok());
  REQUIRE(again->size() == 1);
  CHECK(again->front().attempts == 2);
  // Both finish: the record is written once, by whichever completes first.
  CHECK(queue.complete(again->front(), record_of(again->front(), 2e-3, "alive")).value());
  CHECK_FALSE(queue.complete(lost->front(), record_of(lost->front(), 9e-3, "dead")).value());
  auto record = db.find_record(QueueDatabase::kWorkload, "llvm", "slow");
  REQUIRE(record.ok());
  CHECK((*record)->median_seconds == 2e-3);
  CHECK(db.stats().value().records == 1);
}

TEST_CASE("the heartbeat keeps a lease from running out", "[tuning_db][queue]") {
  QueueDatabase store(GENERATE(from_range(queue_backends())));
  TuningDatabase db = store.open();
  WorkQueue queue(db);
  REQUIRE(queue.enqueue("b3", {candidate("kept")}).ok());
  REQUIRE(queue.claim("llvm", "busy", 1, 0.3).value().size() == 1);
  for (int beat = 0; beat < 4; ++beat) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    CHECK(queue.renew_leases("busy", 0.3).value() == 1);
  }
  CHECK(queue.claim("llvm", "thief", 1, 60).value().empty());
}

TEST_CASE("workers claiming at once never get the same candidate", "[tuning_db][queue]") {
  QueueDatabase store(GENERATE(from_range(queue_backends())));
  constexpr int kCandidates = 60;
  constexpr int kWorkers = 4;
  {
    TuningDatabase db = store.open();
    std::vector<QueuedCandidate> all;
    for (int i = 0; i < kCandidates; ++i) all.push_back(candidate("c" + std::to_string(i)));
    REQUIRE(WorkQueue(db).enqueue("b4", all).ok());
  }
  std::vector<pid_t> children;
  for (int w = 0; w < kWorkers; ++w) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      auto db = TuningDatabase::open(store.location);
      if (!db.ok()) ::_exit(2);
      WorkQueue queue(db.value());
      while (true) {
        auto claimed = queue.claim("llvm", "w" + std::to_string(w), 3, 60);
        if (!claimed.ok()) ::_exit(3);
        if (claimed->empty()) ::_exit(0);
        for (const QueuedCandidate &c : claimed.value()) {
          // false would mean another worker recorded a candidate this one holds a lease on.
          auto written = queue.complete(c, record_of(c, 1e-3, "w" + std::to_string(w)));
          if (!written.ok() || !written.value()) ::_exit(4);
        }
      }
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  TuningDatabase db = store.open();
  CHECK(db.stats().value().records == kCandidates);
  CHECK(WorkQueue(db).unfinished("b4").value() == 0);
}
