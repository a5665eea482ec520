// The work queue's own overhead: how many claims (and completions, each a record written)
// per second the database sustains when candidates cost nothing to measure. K processes
// claim one candidate at a time and complete it at once, as K workers would with no-op
// kernels; the queue must not be what limits a cluster of real workers.
// usage: tessel_bench_queue --db postgresql://... [--candidates N] [--workers 1,4,16] [--claim B] [--out FILE]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tuning_db/database_location.h"
#include "tuning_db/work_queue.h"

using namespace tessel;

namespace {

struct Options {
  std::string db;
  int candidates = 2000;
  std::vector<int> workers = {1, 4, 16};
  int claim = 1;
  std::string out;
};

[[noreturn]] void usage(const char *message) {
  std::fprintf(stderr, "tessel_bench_queue: %s\nusage: tessel_bench_queue --db URL [--candidates N] [--workers 1,4,16] "
                       "[--claim B] [--out FILE]\n", message);
  std::exit(2);
}

Options parse(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
    const std::string value = argv[++i];
    if (arg == "--db") options.db = value;
    else if (arg == "--candidates") options.candidates = std::atoi(value.c_str());
    else if (arg == "--claim") options.claim = std::atoi(value.c_str());
    else if (arg == "--out") options.out = value;
    else if (arg == "--workers") {
      options.workers.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');) options.workers.push_back(std::atoi(item.c_str()));
    } else usage(("unknown option " + arg).c_str());
  }
  if (options.db.empty()) usage("--db is required");
  if (options.candidates < 1 || options.claim < 1 || options.workers.empty()) usage("bad counts");
  return options;
}

TuningDatabase open_or_die(const std::string &location) {
  auto db = TuningDatabase::open(location);
  if (!db.ok()) {
    std::fprintf(stderr, "%s\n", db.error().message.c_str());
    std::exit(1);
  }
  return std::move(db.value());
}

/// A worker with a no-op measurer: claim, write a made-up record, repeat until empty.
[[noreturn]] void drain(const std::string &location, const std::string &name, int claim) {
  TuningDatabase db = open_or_die(location);
  WorkQueue queue(db);
  while (true) {
    auto claimed = queue.claim("llvm", name, claim, 60);
    if (!claimed.ok()) ::_exit(3);
    if (claimed->empty()) ::_exit(0);
    for (const QueuedCandidate &c : claimed.value()) {
      TuningRecord record;
      record.workload_key = c.workload_key;
      record.target = c.target;
      record.machine = "no-op";
      record.schedule_text = c.schedule_text;
      record.schedule_hash = c.schedule_hash;
      record.median_seconds = 1e-3;
      record.timings_seconds = {1e-3};
      if (!queue.complete(c, record).ok()) ::_exit(4);
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  const Options options = parse(argc, argv);
  std::ostringstream table;
  table << "| workers | candidates | claim size | seconds | completed/s |\n|---:|---:|---:|---:|---:|\n";
  int round = 0;
  for (int workers : options.workers) {
    TuningDatabase db = open_or_die(options.db);
    const std::string workload = "benchqueue" + std::to_string(::getpid() % 100000) + "_" + std::to_string(round++);
    if (!db.add_workload(workload, "bench " + workload).ok()) return 1;
    std::vector<QueuedCandidate> batch;
    for (int i = 0; i < options.candidates; ++i) {
      QueuedCandidate c;
      c.workload_key = workload;
      c.target = "llvm";
      c.schedule_hash = "noop" + std::to_string(i);
      c.schedule_text = "tessel-schedule v1\n# " + c.schedule_hash + "\n";
      batch.push_back(c);
    }
    const std::string name = new_batch_name();
    WorkQueue queue(db);
    if (auto enqueued = queue.enqueue(name, batch); !enqueued.ok()) {
      std::fprintf(stderr, "%s\n", enqueued.error().message.c_str());
      return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<pid_t> children;
    for (int w = 0; w < workers; ++w) {
      const pid_t child = ::fork();
      if (child == 0) drain(options.db, "bench" + std::to_string(w), options.claim);
      children.push_back(child);
    }
    bool failed = false;
    for (pid_t child : children) {
      int status = 0;
      ::waitpid(child, &status, 0);
      failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto left = queue.unfinished(name);
    if (failed || !left.ok() || left.value() != 0) {
      std::fprintf(stderr, "a drain process failed with %d workers\n", workers);
      return 1;
    }
    (void)queue.forget(name);
    char row[160];
    std::snprintf(row, sizeof(row), "| %d | %d | %d | %.2f | %.0f |\n", workers, options.candidates, options.claim,
                  seconds, options.candidates / seconds);
    table << row;
    std::fprintf(stderr, "%s", row);
  }
  std::printf("%s", table.str().c_str());
  if (!options.out.empty()) std::ofstream(options.out) << table.str();
  return 0;
}
