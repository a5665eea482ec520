// The tuning database and tuning log: records round-trip, best/top-k order, duplicates,
// schema migration, export/import, malformed logs, and files that are corrupt, locked,
// read-only or written by several processes at once.
#include <catch2/catch.hpp>

#include "tests/support/postgres_test_database.h"
#include "tests/support/temp_dir.h"
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "tuning_db/open_best_record_source.h"
#include "tuning_db/tuning_database.h"
#include "tuning_db/tuning_log.h"
#include "tuning_db/tuning_log_line.h"

using namespace tessel;
namespace fs = std::filesystem;

namespace {

/// A fresh directory for each test.
struct TempDir : tessel::testing::TempDir {
  TempDir() : tessel::testing::TempDir("tessel_db") {}
};

/// The backends the store's query tests run on: SQLite always, PostgreSQL when the test
/// server is there (CTest's `postgres` fixture).
std::vector<std::string> test_backends() {
  std::vector<std::string> backends{"sqlite"};
  if (tessel::testing::postgres_test_server()) backends.push_back("postgres");
  return backends;
}

/// Where one test's databases live: files in a fresh directory, or fresh databases on the
/// test server; `dir` also holds the test's other files (logs).
struct TestStore {
  explicit TestStore(std::string backend_name) : backend(std::move(backend_name)) {}

  /// The database called `name`: the same location each time it is asked for.
  std::string location(const std::string &name = "tessel.db") {
    if (backend == "sqlite") return dir.file(name);
    auto &database = databases[name];
    if (!database) database = std::make_unique<tessel::testing::PostgresTestDatabase>(*tessel::testing::postgres_test_server());
    return database->url();
  }

  std::string backend;
  TempDir dir;
  std::map<std::string, std::unique_ptr<tessel::testing::PostgresTestDatabase>> databases;
};

const std::string kWorkload = "00c0ffee00c0ffee";
const std::string kWorkloadText = "MatMul f32[64,64] f32[64,64] -> f32[64,64]";

TuningRecord make_record(const std::string &hash, std::optional<double> median,
                         RecordStatus status = RecordStatus::Ok, const std::string &target = "llvm",
                         const std::string &workload = kWorkload) {
  TuningRecord record;
  record.workload_key = workload;
  record.target = target;
  record.schedule_hash = hash;
  record.schedule_text = "tessel-schedule v1\nvectorize out x 16\n# " + hash + "\n";
  record.status = status;
  record.median_seconds = median;
  if (median) record.timings_seconds = {*median * 1.1, *median, *median * 0.9};
  if (status != RecordStatus::Ok) record.error_message = "failed: " + hash;
  record.compile_seconds = 0.25;
  return record;
}

TuningDatabase open_db(const std::string &path) {
  auto db = TuningDatabase::open(path);
  INFO((db.ok() ? std::string() : db.error().message));
  REQUIRE(db.ok());
  return std::move(db.value());
}

/// A database with one workload and the given records.
TuningDatabase db_with(const std::string &path, const std::vector<TuningRecord> &records) {
  TuningDatabase db = open_db(path);
  REQUIRE(db.add_workload(kWorkload, kWorkloadText).ok());
  for (const TuningRecord &record : records) {
    auto added = db.add_record(record);
    INFO((added.ok() ? std::string() : added.error().message));
    REQUIRE(added.ok());
  }
  return db;
}

std::vector<std::string> hashes_of(const std::vector<TuningRecord> &records) {
  std::vector<std::string> hashes;
  for (const TuningRecord &record : records) hashes.push_back(record.schedule_hash);
  return hashes;
}

int64_t record_count(const TuningDatabase &db) {
  auto stats = db.stats();
  REQUIRE(stats.ok());
  return stats->records;
}

/// Raw SQL on a file, for building what tessel itself would never write.
void raw_sql(const std::string &path, const char *sql) {
  sqlite3 *db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char *message = nullptr;
  const int code = sqlite3_exec(db, sql, nullptr, nullptr, &message);
  INFO((message ? message : ""));
  sqlite3_free(message);
  sqlite3_close(db);
  REQUIRE(code == SQLITE_OK);
}

/// Waits for a forked child and returns its exit status (or -1 if it did not exit).
int wait_child(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("a log line keeps odd text exactly, on one line", "[tuning_db]") {
  const std::string nasty = std::string("quote \" backslash \\ slash / newline \n tab \t cr \r nul ") +
                            std::string(1, '\0') + " bell \x07 del \x7f unicode \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  TuningRecord record = make_record("odd", 1e-3);
  record.schedule_text = nasty;
  const std::string line = to_log_line(record, nasty);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("\\u0000") != std::string::npos);
  auto back = parse_log_line(line);
  REQUIRE(back.ok());
  CHECK(back->record.schedule_text == nasty);
  CHECK(back->workload_text == nasty);

  // Bytes that are not UTF-8 cannot be JSON: they become U+FFFD, never an unreadable line.
  record.schedule_text = "bad \xff byte, cut \xe2\x82";
  auto replaced = parse_log_line(to_log_line(record, kWorkloadText));
  REQUIRE(replaced.ok());
  CHECK_THAT(replaced->record.schedule_text, Catch::StartsWith("bad \xef\xbf\xbd byte, cut \xef\xbf\xbd"));

  // \u escapes, surrogate pairs included, decode to UTF-8.
  std::string escaped = to_log_line(make_record("esc", 1e-3), kWorkloadText);
  escaped.replace(escaped.find("\"target\":\"llvm\""), std::strlen("\"target\":\"llvm\""),
                  R"("target":"\u00e9\u20AC\ud83d\ude00\/")");
  auto decoded = parse_log_line(escaped);
  REQUIRE(decoded.ok());
  CHECK(decoded->record.target == "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/");
}

TEST_CASE("the log line reader is strict and says where", "[tuning_db]") {
  const auto error_of = [](const std::string &line) {
    auto parsed = parse_log_line(line);
    return parsed.ok() ? std::string("parsed") : parsed.error().message;
  };
  const std::string good = to_log_line(make_record("s1", 1e-3), kWorkloadText);
  const auto with = [&](const std::string &from, const std::string &to) {
    std::string line = good;
    const size_t at = line.find(from);
    REQUIRE(at != std::string::npos);
    return line.replace(at, from.size(), to);
  };
  REQUIRE(error_of(good) == "parsed");
  CHECK_THAT(error_of(R"({"a":1,})"), Catch::StartsWith("column 8: ") && Catch::Contains("object key"));
  CHECK_THAT(error_of(with("\"target\":\"llvm\"", "\"target\":\"llvm\",\"target\":\"cuda\"")),
             Catch::Contains("key \"target\" appears twice"));
  CHECK(error_of(with("\"compile_seconds\":0.25", "\"compile_seconds\":{\"b\":1}")) ==
        "\"compile_seconds\" must be a number, not an object");
  CHECK(error_of(with("\"timings_seconds\":[", "\"timings_seconds\":[\"x\",")) ==
        "\"timings_seconds\" must be an array of numbers, not an array holding a string");
  CHECK_THAT(error_of(with("\"compile_seconds\":0.25", "\"compile_seconds\":1e999")), Catch::Contains("overflow"));
  CHECK_THAT(error_of(with("\"target\":\"llvm\"", "\"target\":\"ll\xffvm\"")), Catch::Contains("UTF-8"));
  CHECK_THAT(error_of(with("\"target\":\"llvm\"", "\"target\":\"ll\tvm\"")), Catch::Contains("control character"));
  CHECK_THAT(error_of(good + " x"), Catch::StartsWith("column " + std::to_string(good.size() + 2) + ": "));
  CHECK(error_of("[1, 2]") == "a log line must be an object, not an array");
  CHECK_THAT(error_of(""), Catch::StartsWith("column 1: "));
}

TEST_CASE("log numbers are the shortest text that reads back exactly", "[tuning_db]") {
  TuningRecord record = make_record("n1", 0.1);
  record.compile_seconds = 1e-7;
  record.features = std::vector<float>{0.1f, 1.5f, -2.25f};
  const std::string line = to_log_line(record, kWorkloadText);
  CHECK_THAT(line, Catch::Contains("\"median_seconds\":0.1,"));
  CHECK_THAT(line, Catch::Contains("\"compile_seconds\":1e-07,"));
  // A float feature is written as the shortest text that reads back as that float.
  CHECK_THAT(line, Catch::Contains("\"features\":[0.1,1.5,-2.25]"));

  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> exponent(-12, 3);
  record.features.emplace();
  record.timings_seconds.clear();
  for (int i = 0; i < 2000; ++i) {
    const double d = std::pow(10.0, exponent(random));
    record.timings_seconds.push_back(d);
    record.features->push_back(static_cast<float>(d));
  }
  auto back = parse_log_line(to_log_line(record, kWorkloadText));
  REQUIRE(back.ok());
  // The log reads floats through a double: that path must be exact too.
  CHECK(back->record.timings_seconds == record.timings_seconds);
  CHECK(back->record.features == record.features);
}

TEST_CASE("records round-trip through the database with every field", "[tuning_db]") {
  TestStore store(GENERATE(from_range(test_backends())));
  CAPTURE(store.backend);
  TuningRecord record = make_record("aaaa000000000001", 1.5e-3);
  record.machine = "AMD EPYC 9B45 (2 cores)";
  record.target = "llvm -mcpu=znver4";
  record.schedule_text = "tessel-schedule v1\nsplit out x xo xi 16 guard\n\"quoted\" \\ back\n";
  record.timings_seconds = {1.6e-3, 1.5e-3, 1.4e-3, 0.1};
  record.compile_seconds = 0.375;
  record.tool_version = "tessel 9.9.9";
  record.created_at = "2024-05-01T12:34:56Z";
  record.features = std::vector<float>{0.f, 1.5f, -2.25f, 3.1415927f, 1e-20f};
  TuningRecord failed = make_record("aaaa000000000002", std::nullopt, RecordStatus::CompileError);
  failed.error_message = "Halide: Func out has no\nupdate definition 'x'";

  TuningDatabase db = db_with(store.location("tessel.db"), {record, failed});
  auto all = db.records_for_target("llvm -mcpu=znver4");
  REQUIRE(all.ok());
  REQUIRE(all->size() == 1);
  const TuningRecord &back = all->front();
  CHECK(back.id > 0);
  CHECK(back.workload_key == record.workload_key);
  CHECK(back.target == record.target);
  CHECK(back.machine == record.machine);
  CHECK(back.schedule_text == record.schedule_text);
  CHECK(back.schedule_hash == record.schedule_hash);
  CHECK(back.status == RecordStatus::Ok);
  CHECK(back.median_seconds == record.median_seconds);
  CHECK(back.timings_seconds == record.timings_seconds);
  CHECK(back.compile_seconds == record.compile_seconds);
  CHECK(back.tool_version == "tessel 9.9.9");
  CHECK(back.created_at == "2024-05-01T12:34:56Z");
  REQUIRE(back.features);
  CHECK(*back.features == *record.features);

  auto llvm = db.records_for_target("llvm");
  REQUIRE(llvm.ok());
  REQUIRE(llvm->size() == 1);
  CHECK(llvm->front().status == RecordStatus::CompileError);
  CHECK(llvm->front().error_message == failed.error_message);
  CHECK_FALSE(llvm->front().median_seconds);
  CHECK_FALSE(llvm->front().features);
  // Stamped on insert when the tuner left them empty.
  CHECK(llvm->front().tool_version.rfind("tessel ", 0) == 0);
  CHECK(llvm->front().created_at.size() == 20);

  auto text = db.workload_text(kWorkload);
  REQUIRE(text.ok());
  CHECK(text->value_or("") == kWorkloadText);
  auto missing = db.workload_text("ffffffffffffffff");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());
}

TEST_CASE("best and top-k take the fastest ok records of the workload and target", "[tuning_db]") {
  TestStore store(GENERATE(from_range(test_backends())));
  CAPTURE(store.backend);
  const std::string other_workload = "1111222233334444";
  TuningDatabase db = db_with(store.location("tessel.db"),
                              {
                                  make_record("h3", 3e-3),
                                  make_record("h1", 1e-3),
                                  make_record("crash", std::nullopt, RecordStatus::Crash),
                                  make_record("wrong_but_fast", 1e-6, RecordStatus::WrongResult),
                                  make_record("h2", 2e-3),
                                  make_record("tie_later", 1e-3),
                                  make_record("cuda_fast", 1e-5, RecordStatus::Ok, "cuda"),
                              });
  REQUIRE(db.add_workload(other_workload, "other").ok());
  REQUIRE(db.add_record(make_record("other_fast", 1e-7, RecordStatus::Ok, "llvm", other_workload)).ok());

  auto best = db.best(kWorkload, "llvm");
  REQUIRE(best.ok());
  REQUIRE(best->has_value());
  CHECK((*best)->schedule_hash == "h1");  // ties go to the earlier record

  auto top = db.top_k(kWorkload, "llvm", 3);
  REQUIRE(top.ok());
  CHECK(hashes_of(top.value()) == std::vector<std::string>{"h1", "tie_later", "h2"});
  auto all = db.top_k(kWorkload, "llvm", 100);
  REQUIRE(all.ok());
  CHECK(hashes_of(all.value()) == std::vector<std::string>{"h1", "tie_later", "h2", "h3"});
  auto none = db.top_k(kWorkload, "llvm", 0);
  REQUIRE(none.ok());
  CHECK(none->empty());

  auto cuda = db.best(kWorkload, "cuda");
  REQUIRE(cuda.ok());
  CHECK((*cuda)->schedule_hash == "cuda_fast");
  auto unknown_target = db.best(kWorkload, "llvm -mcpu=none");
  REQUIRE(unknown_target.ok());
  CHECK_FALSE(unknown_target->has_value());
  auto unknown_workload = db.best("0000000000000000", "llvm");
  REQUIRE(unknown_workload.ok());
  CHECK_FALSE(unknown_workload->has_value());

  // The cost model's training set: every status, oldest first; a limit keeps the newest.
  auto training = db.records_for_target("llvm");
  REQUIRE(training.ok());
  CHECK(hashes_of(training.value()) ==
        std::vector<std::string>{"h3", "h1", "crash", "wrong_but_fast", "h2", "tie_later", "other_fast"});
  auto newest = db.records_for_target("llvm", 2);
  REQUIRE(newest.ok());
  CHECK(hashes_of(newest.value()) == std::vector<std::string>{"tie_later", "other_fast"});

  auto stats = db.stats();
  REQUIRE(stats.ok());
  CHECK(stats->schema_version == 3);
  CHECK(stats->workloads == 2);
  CHECK(stats->targets == 2);
  CHECK(stats->records == 8);
  CHECK(stats->records_by_status.at(RecordStatus::Ok) == 6);
  CHECK(stats->records_by_status.at(RecordStatus::Crash) == 1);
  CHECK(stats->records_by_status.at(RecordStatus::WrongResult) == 1);
  CHECK(stats->records_by_status.at(RecordStatus::Timeout) == 0);
  REQUIRE(stats->per_target.size() == 2);
  CHECK(stats->per_target[0].target == "cuda");
  CHECK(stats->per_target[1].target == "llvm");
  CHECK(stats->per_target[1].records == 7);
  CHECK(stats->per_target[1].ok_records == 5);
  CHECK(stats->per_target[1].workloads == 2);
}

TEST_CASE("records timed with cold weights deploy before warm ones of the workload", "[tuning_db]") {
  TestStore store(GENERATE(from_range(test_backends())));
  CAPTURE(store.backend);
  auto on = [](TuningRecord record, const std::string &machine) {
    record.machine = machine;
    return record;
  };
  const std::string host = "AMD EPYC (2 cpus, avx2 fma)";
  const std::string cold = host + kColdWeightsMachineSuffix;
  TuningDatabase db = db_with(store.location("tessel.db"), {on(make_record("warm_fast", 1e-4), host),
                                                            on(make_record("cold_slow", 3e-4), cold),
                                                            on(make_record("cold_fast", 2e-4), cold)});
  // A warm time is no match for a cold one: the cold records come first, fastest first.
  auto top = db.top_k(kWorkload, "llvm", 3);
  REQUIRE(top.ok());
  CHECK(hashes_of(top.value()) == std::vector<std::string>{"cold_fast", "cold_slow", "warm_fast"});
  auto best = db.best(kWorkload, "llvm");
  REQUIRE(best.ok());
  REQUIRE(best->has_value());
  CHECK((*best)->schedule_hash == "cold_fast");
  CHECK(timed_cold((*best).value()));
  CHECK_FALSE(timed_cold(top->back()));
  // A machine that merely mentions the words is not cold.
  TuningRecord named;
  named.machine = std::string(kColdWeightsMachineSuffix) + " lab box";
  CHECK_FALSE(timed_cold(named));
}

TEST_CASE("the best query uses the partial index", "[tuning_db]") {
  TempDir dir;
  { db_with(dir.file("tessel.db"), {make_record("h1", 1e-3)}); }
  sqlite3 *raw = nullptr;
  REQUIRE(sqlite3_open(dir.file("tessel.db").c_str(), &raw) == SQLITE_OK);
  sqlite3_stmt *plan = nullptr;
  REQUIRE(sqlite3_prepare_v2(raw,
                             "EXPLAIN QUERY PLAN SELECT r.id FROM records r JOIN targets t ON t.id = r.target_id "
                             "WHERE r.workload_key = ?1 AND r.target_id = ?2 AND r.status = 'ok' "
                             "ORDER BY (CASE WHEN r.machine LIKE '%" TESSEL_COLD_WEIGHTS_SUFFIX "' THEN 0 ELSE 1 END), "
                             "r.median_seconds, r.id LIMIT 1",
                             -1, &plan, nullptr) == SQLITE_OK);
  std::string details;
  while (sqlite3_step(plan) == SQLITE_ROW) details += std::string(reinterpret_cast<const char *>(sqlite3_column_text(plan, 3))) + "\n";
  sqlite3_finalize(plan);
  sqlite3_close(raw);
  INFO(details);
  CHECK(details.find("records_best") != std::string::npos);
}

TEST_CASE("a schedule is recorded once per workload and target", "[tuning_db]") {
  TestStore store(GENERATE(from_range(test_backends())));
  CAPTURE(store.backend);
  TuningDatabase db = db_with(store.location("tessel.db"), {make_record("h1", 1e-3)});
  auto again = db.add_record(make_record("h1", 5e-4));  // a second measurement must not replace the first
  REQUIRE(again.ok());
  CHECK_FALSE(again.value());
  auto on_cuda = db.add_record(make_record("h1", 5e-4, RecordStatus::Ok, "cuda"));
  REQUIRE(on_cuda.ok());
  CHECK(on_cuda.value());
  CHECK(record_count(db) == 2);
  auto best = db.best(kWorkload, "llvm");
  REQUIRE(best.ok());
  CHECK((*best)->median_seconds == 1e-3);

  CHECK(db.has_record(kWorkload, "llvm", "h1").value());
  CHECK_FALSE(db.has_record(kWorkload, "llvm", "h2").value());
  CHECK_FALSE(db.has_record(kWorkload, "nowhere", "h1").value());
  REQUIRE(db.add_record(make_record("h2", std::nullopt, RecordStatus::Timeout)).ok());
  auto hashes = db.measured_hashes(kWorkload, "llvm");
  REQUIRE(hashes.ok());
  CHECK(hashes.value() == std::set<std::string>{"h1", "h2"});
}

TEST_CASE("invalid records and workloads are refused with the reason", "[tuning_db]") {
  TestStore store(GENERATE(from_range(test_backends())));
  CAPTURE(store.backend);
  TuningDatabase db = db_with(store.location("tessel.db"), {});
  auto no_workload = db.add_record(make_record("h1", 1e-3, RecordStatus::Ok, "llvm", "feedfacefeedface"));
  REQUIRE_FALSE(no_workload.ok());
  CHECK_THAT(no_workload.error().message, Catch::Contains("feedfacefeedface") && Catch::Contains("add_workload"));
  auto untimed = db.add_record(make_record("h1", std::nullopt, RecordStatus::Ok));
  REQUIRE_FALSE(untimed.ok());
  CHECK_THAT(untimed.error().message, Catch::Contains("no median_seconds"));
  auto negative = db.add_record(make_record("h1", -1.0));
  REQUIRE_FALSE(negative.ok());
  CHECK_THAT(negative.error().message, Catch::Contains("median_seconds"));
  TuningRecord nan_timing = make_record("h1", 1e-3);
  nan_timing.timings_seconds.push_back(std::nan(""));
  CHECK_FALSE(db.add_record(nan_timing).ok());
  CHECK_FALSE(db.add_record(make_record("", 1e-3)).ok());
  auto conflict = db.add_workload(kWorkload, "a different text");
  REQUIRE_FALSE(conflict.ok());
  CHECK_THAT(conflict.error().message, Catch::Contains(kWorkload) && Catch::Contains("different workload text"));
  CHECK(db.add_workload(kWorkload, kWorkloadText).ok());  // the same text again is fine
  CHECK(record_count(db) == 0);
}

TEST_CASE("an older schema is migrated when opened", "[tuning_db]") {
  TempDir dir;
  const std::string path = dir.file("old.db");
  // Schema version 1 as the first tessel wrote it: no features column, one combined index.
  raw_sql(path, R"sql(
CREATE TABLE workloads(key TEXT PRIMARY KEY, workload_text TEXT NOT NULL, first_seen TEXT NOT NULL);
CREATE TABLE targets(id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE, machine TEXT NOT NULL DEFAULT '');
CREATE TABLE records(
  id INTEGER PRIMARY KEY,
  workload_key TEXT NOT NULL REFERENCES workloads(key),
  target_id INTEGER NOT NULL REFERENCES targets(id),
  schedule_text TEXT NOT NULL, schedule_hash TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('ok', 'compile_error', 'runtime_error', 'wrong_result', 'timeout', 'crash')),
  error_message TEXT NOT NULL DEFAULT '', median_seconds REAL, timings TEXT NOT NULL DEFAULT '[]',
  compile_seconds REAL NOT NULL DEFAULT 0, tool_version TEXT NOT NULL, created_at TEXT NOT NULL,
  UNIQUE(workload_key, target_id, schedule_hash));
CREATE INDEX records_by_time ON records(workload_key, target_id, status, median_seconds);
INSERT INTO workloads VALUES('00c0ffee00c0ffee', 'old workload', '2023-01-01T00:00:00Z');
INSERT INTO targets(text, machine) VALUES('llvm', 'old box');
INSERT INTO records(workload_key, target_id, schedule_text, schedule_hash, status, median_seconds, timings,
                    compile_seconds, tool_version, created_at)
  VALUES('00c0ffee00c0ffee', 1, 'tessel-schedule v1\n', 'old1', 'ok', 0.002, '[0.002,0.0021]', 0.3,
         'tessel 0.0.1', '2023-01-01T00:00:01Z');
PRAGMA user_version = 1;
)sql");

  TuningDatabase db = open_db(path);
  auto stats = db.stats();
  REQUIRE(stats.ok());
  CHECK(stats->schema_version == 3);
  auto best = db.best(kWorkload, "llvm");
  REQUIRE(best.ok());
  REQUIRE(best->has_value());
  CHECK((*best)->schedule_hash == "old1");
  CHECK((*best)->machine == "old box");
  CHECK((*best)->timings_seconds == std::vector<double>{0.002, 0.0021});
  CHECK_FALSE((*best)->features);

  TuningRecord with_features = make_record("new1", 1e-3);
  with_features.features = std::vector<float>{1, 2, 3};
  REQUIRE(db.add_record(with_features).value());
  best = db.best(kWorkload, "llvm");
  REQUIRE(best.ok());
  CHECK((*best)->schedule_hash == "new1");
  CHECK((*best)->features == with_features.features);
}

TEST_CASE("a database from a newer tessel is refused, not touched", "[tuning_db]") {
  TempDir dir;
  const std::string path = dir.file("future.db");
  { db_with(path, {make_record("h1", 1e-3)}); }
  raw_sql(path, "PRAGMA user_version = 7");
  auto db = TuningDatabase::open(path);
  REQUIRE_FALSE(db.ok());
  CHECK(db.error().message == path + " was written by a newer tessel (schema 7; this tessel reads up to schema 3)");
  DatabaseOpenOptions read_only;
  read_only.read_only = true;
  CHECK_FALSE(TuningDatabase::open(path, read_only).ok());

  // Someone else's SQLite file does not get tessel's tables added to it.
  const std::string foreign = dir.file("foreign.db");
  raw_sql(foreign, "CREATE TABLE photos(id INTEGER PRIMARY KEY)");
  auto other = TuningDatabase::open(foreign);
  REQUIRE_FALSE(other.ok());
  CHECK_THAT(other.error().message, Catch::Contains(foreign) && Catch::Contains("not a tessel tuning database"));
}

TEST_CASE("export then import into a fresh database gives the same best records", "[tuning_db]") {
  TestStore store(GENERATE(from_range(test_backends())));
  CAPTURE(store.backend);
  const std::string second_workload = "2222333344445555";
  TuningRecord featured = make_record("f1", 4e-4, RecordStatus::Ok, "cuda");
  featured.features = std::vector<float>{0.25f, 1e-3f, 123456.789f};
  featured.machine = "NVIDIA H100";
  std::string exported;
  {
    TuningDatabase source = db_with(store.location("source.db"),
                                    {make_record("h2", 2e-3), make_record("h1", 1e-3),
                                     make_record("bad", std::nullopt, RecordStatus::RuntimeError), featured});
    REQUIRE(source.add_workload(second_workload, "Conv \"quoted\"\ttext\n").ok());
    REQUIRE(source.add_record(make_record("c1", 7e-3, RecordStatus::Ok, "llvm", second_workload)).ok());

    std::ostringstream log;
    auto written = source.export_jsonl(log);
    REQUIRE(written.ok());
    CHECK(written.value() == 5);
    exported = log.str();
    CHECK(std::count(exported.begin(), exported.end(), '\n') == 5);

    std::ostringstream cuda_only;
    ExportFilter filter;
    filter.target = "cuda";
    REQUIRE(source.export_jsonl(cuda_only, filter).value() == 1);
    ExportFilter ok_llvm;
    ok_llvm.target = "llvm";
    ok_llvm.ok_only = true;
    std::ostringstream ok_log;
    CHECK(source.export_jsonl(ok_log, ok_llvm).value() == 3);
  }

  TuningDatabase copy = open_db(store.location("copy.db"));
  std::istringstream in(exported);
  auto summary = copy.import_jsonl(in, "shared.jsonl");
  REQUIRE(summary.ok());
  CHECK(summary->lines == 5);
  CHECK(summary->inserted == 5);
  CHECK(summary->duplicates == 0);
  CHECK(summary->new_workloads == 2);

  TuningDatabase source = open_db(store.location("source.db"));
  for (const auto &[workload, target] : std::vector<std::pair<std::string, std::string>>{
           {kWorkload, "llvm"}, {kWorkload, "cuda"}, {second_workload, "llvm"}}) {
    auto want = source.best(workload, target);
    auto got = copy.best(workload, target);
    REQUIRE(want.ok());
    REQUIRE(got.ok());
    REQUIRE(want->has_value());
    REQUIRE(got->has_value());
    CHECK((*got)->schedule_hash == (*want)->schedule_hash);
    CHECK((*got)->schedule_text == (*want)->schedule_text);
    CHECK((*got)->median_seconds == (*want)->median_seconds);
    CHECK((*got)->timings_seconds == (*want)->timings_seconds);
    CHECK((*got)->features == (*want)->features);
    CHECK((*got)->machine == (*want)->machine);
    CHECK((*got)->created_at == (*want)->created_at);
    CHECK((*got)->tool_version == (*want)->tool_version);
  }
  CHECK(copy.workload_text(second_workload).value() == std::optional<std::string>("Conv \"quoted\"\ttext\n"));

  // Importing the same log again adds nothing.
  std::istringstream again(exported);
  auto repeat = copy.import_jsonl(again);
  REQUIRE(repeat.ok());
  CHECK(repeat->inserted == 0);
  CHECK(repeat->duplicates == 5);
  CHECK(record_count(copy) == 5);

  // The same log read into memory answers best() like the database.
  std::istringstream log_in(exported);
  auto log = read_tuning_log(log_in, "shared.jsonl");
  REQUIRE(log.ok());
  CHECK(log->records().size() == 5);
  const BestRecordSource &from_log = log.value();
  auto log_best = from_log.best(kWorkload, "llvm");
  REQUIRE(log_best.ok());
  CHECK((*log_best)->schedule_hash == "h1");
  CHECK(log->top_k(kWorkload, "llvm", 5).size() == 2);
  CHECK(log->best(kWorkload, "cuda").value()->features == featured.features);
  CHECK(log->workload_text(second_workload) == std::optional<std::string>("Conv \"quoted\"\ttext\n"));
}

TEST_CASE("a malformed log line is an error naming the line, and nothing is imported", "[tuning_db]") {
  TempDir dir;
  std::string good_lines;
  for (const char *hash : {"g1", "g2"}) good_lines += to_log_line(make_record(hash, 1e-3), kWorkloadText) + "\n";
  const std::string third = to_log_line(make_record("g3", 1e-3), kWorkloadText);

  const auto import_error = [&](const std::string &bad_line) {
    TuningDatabase db = open_db(dir.file("target.db"));
    std::istringstream in(good_lines + "\n" + bad_line + "\n" + third + "\n");
    auto summary = db.import_jsonl(in, "team.jsonl");
    CHECK(record_count(db) == 0);  // one transaction: the good lines before it are rolled back too
    return summary.ok() ? std::string("imported") : summary.error().message;
  };
  CHECK_THAT(import_error("{\"log_version\":1,"), Catch::StartsWith("team.jsonl:4: column"));
  CHECK_THAT(import_error("not json"), Catch::StartsWith("team.jsonl:4:"));
  std::string no_status = third;
  no_status.replace(no_status.find("\"status\":\"ok\","), std::strlen("\"status\":\"ok\","), "");
  CHECK(import_error(no_status) == "team.jsonl:4: missing \"status\"");
  std::string bad_status = third;
  bad_status.replace(bad_status.find("\"status\":\"ok\""), std::strlen("\"status\":\"ok\""), "\"status\":\"slow\"");
  CHECK_THAT(import_error(bad_status), Catch::StartsWith("team.jsonl:4: unknown record status 'slow'"));
  std::string extra_key = third;
  extra_key.insert(1, "\"colour\":\"red\",");
  CHECK(import_error(extra_key) == "team.jsonl:4: unknown key \"colour\"");
  std::string wrong_type = third;
  wrong_type.replace(wrong_type.find("\"compile_seconds\":0.25"), std::strlen("\"compile_seconds\":0.25"),
                     "\"compile_seconds\":\"0.25\"");
  CHECK(import_error(wrong_type) == "team.jsonl:4: \"compile_seconds\" must be a number, not a string");
  std::string newer = third;
  newer.replace(newer.find("\"log_version\":1"), std::strlen("\"log_version\":1"), "\"log_version\":2");
  CHECK_THAT(import_error(newer), Catch::Contains("newer tessel"));
  std::string untimed_ok = third;
  untimed_ok.replace(untimed_ok.find("\"median_seconds\":0.001"), std::strlen("\"median_seconds\":0.001"),
                     "\"median_seconds\":null");
  CHECK_THAT(import_error(untimed_ok), Catch::Contains("no median_seconds"));
  CHECK_THAT(import_error(to_log_line(make_record("g9", 1e-3), "another text for the same key")),
             Catch::StartsWith("team.jsonl:4:") && Catch::Contains("different workload text"));

  // The in-memory reader names the line as well.
  std::istringstream in(good_lines + "garbage\n");
  auto log = read_tuning_log(in, "team.jsonl");
  REQUIRE_FALSE(log.ok());
  CHECK_THAT(log.error().message, Catch::StartsWith("team.jsonl:3:"));
  auto missing = read_tuning_log(dir.file("absent.jsonl"));
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("absent.jsonl") && Catch::Contains("cannot open"));
}

TEST_CASE("a corrupt copy gives a clear error and the original still reads", "[tuning_db]") {
  TempDir dir;
  const std::string original = dir.file("tessel.db");
  { db_with(original, {make_record("h1", 1e-3), make_record("h2", 2e-3)}); }  // closed: WAL folded into the file

  const std::string header_copy = dir.file("header.db");
  fs::copy_file(original, header_copy);
  {
    std::fstream file(header_copy, std::ios::in | std::ios::out | std::ios::binary);
    file.write("this is no sqlite file at all, just bytes", 40);
  }
  auto not_db = TuningDatabase::open(header_copy);
  REQUIRE_FALSE(not_db.ok());
  CHECK(not_db.error().message == header_copy + ": file is not a database (is it a tessel.db?)");

  const std::string pages_copy = dir.file("pages.db");
  fs::copy_file(original, pages_copy);
  {
    const auto size = fs::file_size(pages_copy);
    std::fstream file(pages_copy, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(4096);  // keep page 1 (the header and schema), scribble over the tables
    const std::string junk(size - 4096, '\xA5');
    file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto damaged = TuningDatabase::open(pages_copy);
  if (damaged.ok()) {
    auto best = damaged->best(kWorkload, "llvm");
    REQUIRE_FALSE(best.ok());
    CHECK_THAT(best.error().message, Catch::Contains(pages_copy) && Catch::Contains("corrupt"));
  } else {
    CHECK_THAT(damaged.error().message, Catch::Contains(pages_copy));
  }

  TuningDatabase db = open_db(original);
  auto best = db.best(kWorkload, "llvm");
  REQUIRE(best.ok());
  CHECK((*best)->schedule_hash == "h1");
  CHECK(record_count(db) == 2);
}

TEST_CASE("a database locked by another process longer than busy_timeout is an error naming it", "[tuning_db]") {
  TempDir dir;
  const std::string path = dir.file("tessel.db");
  { db_with(path, {make_record("h1", 1e-3)}); }

  int ready[2], release[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(release) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Holds the write lock until the parent says so.
    sqlite3 *db = nullptr;
    int code = sqlite3_open(path.c_str(), &db);
    if (code == SQLITE_OK) code = sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr);
    const char signal = code == SQLITE_OK ? 'L' : 'E';
    if (::write(ready[1], &signal, 1) != 1) ::_exit(3);
    char done;
    if (::read(release[0], &done, 1) != 1) ::_exit(4);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    ::_exit(code == SQLITE_OK ? 0 : 2);
  }
  char signal = 0;
  REQUIRE(::read(ready[0], &signal, 1) == 1);
  REQUIRE(signal == 'L');

  DatabaseOpenOptions quick;
  quick.busy_timeout_ms = 200;
  {
    auto db = TuningDatabase::open(path, quick);
    REQUIRE(db.ok());  // WAL: opening and reading do not wait for the writer
    CHECK(db->best(kWorkload, "llvm").ok());
    auto blocked = db->add_record(make_record("h2", 2e-3));
    REQUIRE_FALSE(blocked.ok());
    CHECK_THAT(blocked.error().message, Catch::StartsWith(path + ": database is locked"));

    const char go = 'G';
    REQUIRE(::write(release[1], &go, 1) == 1);
    CHECK(wait_child(child) == 0);
    auto after = db->add_record(make_record("h2", 2e-3));  // nothing was lost or left half-written
    REQUIRE(after.ok());
    CHECK(after.value());
    CHECK(record_count(db.value()) == 2);
  }
  for (int fd : {ready[0], ready[1], release[0], release[1]}) ::close(fd);
}

TEST_CASE("paths that cannot be written give errors naming the file", "[tuning_db]") {
  TempDir dir;
  const std::string nowhere = dir.file("no/such/dir/tessel.db");
  auto missing_dir = TuningDatabase::open(nowhere);
  REQUIRE_FALSE(missing_dir.ok());
  CHECK_THAT(missing_dir.error().message, Catch::Contains(nowhere) && Catch::Contains("cannot open"));

  DatabaseOpenOptions read_only;
  read_only.read_only = true;
  auto absent = TuningDatabase::open(dir.file("absent.db"), read_only);
  REQUIRE_FALSE(absent.ok());
  CHECK_THAT(absent.error().message, Catch::Contains("absent.db") && Catch::Contains("no such tuning database"));

  const std::string path = dir.file("tessel.db");
  { db_with(path, {make_record("h1", 1e-3)}); }
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);

  // root writes any file, so the check runs as an unprivileged user in a child process.
  int report[2];
  REQUIRE(::pipe(report) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(5);
    std::string result;
    auto writable = TuningDatabase::open(path);
    result += writable.ok() ? std::string("opened") : writable.error().message;
    result += '\n';
    auto reader = TuningDatabase::open(path, read_only);
    if (!reader.ok()) result += "read-only open failed: " + reader.error().message;
    else {
      auto best = reader->best(kWorkload, "llvm");
      result += best.ok() && best->has_value() ? "read " + (*best)->schedule_hash : "no read";
      auto add = reader->add_record(make_record("h2", 2e-3));
      result += add.ok() ? std::string("\nadded") : "\n" + add.error().message;
    }
    const bool sent = ::write(report[1], result.data(), result.size()) == static_cast<ssize_t>(result.size());
    ::_exit(sent ? 0 : 6);
  }
  ::close(report[1]);
  std::string result;
  char buffer[512];
  for (ssize_t n; (n = ::read(report[0], buffer, sizeof(buffer))) > 0;) result.append(buffer, n);
  ::close(report[0]);
  REQUIRE(wait_child(child) == 0);
  INFO(result);
  std::istringstream lines(result);
  std::string open_error, read_line, add_error;
  std::getline(lines, open_error);
  std::getline(lines, read_line);
  std::getline(lines, add_error);
  CHECK(open_error == path + " is read-only: cannot record measurements in it (no write permission?)");
  CHECK(read_line == "read h1");
  CHECK_THAT(add_error, Catch::StartsWith(path + " is read-only"));

  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  TuningDatabase db = open_db(path);
  CHECK(record_count(db) == 1);
}

TEST_CASE("several processes write at once and every record lands", "[tuning_db]") {
  TestStore store(GENERATE(from_range(test_backends())));
  CAPTURE(store.backend);
  const std::string path = store.location("tessel.db");
  { db_with(path, {}); }
  constexpr int kWriters = 4;
  constexpr int kRecordsEach = 40;
  std::vector<pid_t> children;
  for (int writer = 0; writer < kWriters; ++writer) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      auto db = TuningDatabase::open(path);
      if (!db.ok()) ::_exit(2);
      for (int i = 0; i < kRecordsEach; ++i) {
        const std::string hash = "w" + std::to_string(writer) + "_" + std::to_string(i);
        auto added = db->add_record(make_record(hash, 1e-3 * (1 + i + writer)));
        if (!added.ok() || !added.value()) ::_exit(3);
        // Every writer also tries one schedule the others measure: exactly one copy stays.
        auto shared = db->add_record(make_record("shared" + std::to_string(i), 5e-3));
        if (!shared.ok()) ::_exit(4);
      }
      ::_exit(0);
    }
    children.push_back(child);
  }
  for (pid_t child : children) CHECK(wait_child(child) == 0);
  TuningDatabase db = open_db(path);
  CHECK(record_count(db) == kWriters * kRecordsEach + kRecordsEach);
  auto hashes = db.measured_hashes(kWorkload, "llvm");
  REQUIRE(hashes.ok());
  CHECK(hashes->size() == static_cast<size_t>(kWriters * kRecordsEach + kRecordsEach));
  CHECK(db.best(kWorkload, "llvm").value()->median_seconds == 1e-3);
}

TEST_CASE("two processes creating the same new database migrate it once", "[tuning_db]") {
  TestStore store(GENERATE(from_range(test_backends())));
  CAPTURE(store.backend);
  const std::string path = store.location("fresh.db");
  std::vector<pid_t> children;
  for (int i = 0; i < 3; ++i) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      auto db = TuningDatabase::open(path);
      if (!db.ok()) ::_exit(2);
      if (!db->add_workload(kWorkload, kWorkloadText).ok()) ::_exit(3);
      ::_exit(db->add_record(make_record("p" + std::to_string(i), 1e-3)).ok() ? 0 : 4);
    }
    children.push_back(child);
  }
  for (pid_t child : children) CHECK(wait_child(child) == 0);
  TuningDatabase db = open_db(path);
  CHECK(record_count(db) == 3);
}

TEST_CASE("compile finds best records in a database or a log alike", "[tuning_db]") {
  TestStore store(GENERATE(from_range(test_backends())));
  CAPTURE(store.backend);
  const TempDir &dir = store.dir;
  const std::string db_path = store.location("tessel.db");
  const std::string log_path = dir.file("tuning.jsonl");
  {
    TuningDatabase db = db_with(db_path, {make_record("h2", 2e-3), make_record("h1", 1e-3)});
    std::ofstream log(log_path);
    REQUIRE(db.export_jsonl(log).ok());
  }
  for (const std::string &path : {db_path, log_path}) {
    auto source = open_best_record_source(path);
    INFO(path << ": " << (source.ok() ? std::string() : source.error().message));
    REQUIRE(source.ok());
    auto best = source.value()->best(kWorkload, "llvm");
    REQUIRE(best.ok());
    REQUIRE(best->has_value());
    CHECK((*best)->schedule_hash == "h1");
    CHECK_FALSE(source.value()->best(kWorkload, "cuda").value().has_value());
  }
  auto absent = open_best_record_source(dir.file("absent.jsonl"));
  REQUIRE_FALSE(absent.ok());
  CHECK_THAT(absent.error().message, Catch::Contains("absent.jsonl"));
  {
    std::ofstream junk(dir.file("junk.bin"));
    junk << "\x01\x02 not a log\n";
  }
  auto junk = open_best_record_source(dir.file("junk.bin"));
  REQUIRE_FALSE(junk.ok());
  CHECK_THAT(junk.error().message, Catch::StartsWith(dir.file("junk.bin") + ":1:"));
}

TEST_CASE("prune deletes failed records and all but the fastest per workload and target", "[tuning_db]") {
  TestStore store(GENERATE(from_range(test_backends())));
  CAPTURE(store.backend);
  TuningDatabase db = db_with(store.location("tessel.db"),
                              {
                                  make_record("h3", 3e-3),
                                  make_record("h1", 1e-3),
                                  make_record("crash", std::nullopt, RecordStatus::Crash),
                                  make_record("h2", 2e-3),
                                  make_record("cuda_slow", 5e-3, RecordStatus::Ok, "cuda"),
                                  make_record("cuda_fast", 1e-5, RecordStatus::Ok, "cuda"),
                              });
  PruneOptions failed_only;
  failed_only.failed = true;
  auto pruned = db.prune(failed_only);
  REQUIRE(pruned.ok());
  CHECK(pruned->removed == 1);
  CHECK(pruned->remaining == 5);
  PruneOptions keep_one;
  keep_one.keep_best = 1;
  pruned = db.prune(keep_one);
  REQUIRE(pruned.ok());
  CHECK(pruned->removed == 3);
  auto llvm = db.top_k(kWorkload, "llvm", 10);
  REQUIRE(llvm.ok());
  CHECK(hashes_of(llvm.value()) == std::vector<std::string>{"h1"});
  auto cuda = db.top_k(kWorkload, "cuda", 10);
  REQUIRE(cuda.ok());
  CHECK(hashes_of(cuda.value()) == std::vector<std::string>{"cuda_fast"});
}
