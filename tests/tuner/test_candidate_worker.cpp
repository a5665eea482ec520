// Worker processes that compile several candidates: a candidate that crashes or hangs costs
// its own record, and the others compiled in the same process are compiled again and measured.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <set>
#include <thread>

#include "tuner/candidate_worker.h"

using namespace tessel;

namespace {

/// A job whose result is its slot's number (in compile_seconds) and the worker's pid (in
/// seconds), so a test can see which process ran it; `fault` happens at the step it names.
BuildJob job(int number, const std::string &fault = "") {
  BuildJob j;
  j.compile_timeout_seconds = 2;
  j.run_timeout_seconds = 2;
  j.compile = [number, fault] {
    if (fault == "compile_crash") ::raise(SIGSEGV);
    if (fault == "compile_hang") std::this_thread::sleep_for(std::chrono::hours(1));
    CompiledCandidate c;
    if (fault == "compile_error") {
      c.failed = measure_failure(RecordStatus::CompileError, "bad schedule " + std::to_string(number));
      return c;
    }
    c.run = [number, fault] {
      if (fault == "run_crash") ::raise(SIGSEGV);
      if (fault == "run_hang") std::this_thread::sleep_for(std::chrono::hours(1));
      MeasureResult r;
      if (fault == "run_error") r.status = RecordStatus::RuntimeError;
      r.compile_seconds = number;
      r.seconds = {static_cast<double>(::getpid())};
      r.median_seconds = r.seconds[0];
      return r;
    };
    return c;
  };
  return j;
}

std::vector<MeasureResult> measure(const std::vector<BuildJob> &jobs, size_t at_once) {
  std::vector<CandidateWorker> workers = compile_in_workers(jobs, at_once);
  for (CandidateWorker &w : workers) run_to_result(w);
  std::vector<MeasureResult> results;
  for (CandidateWorker &w : workers) results.push_back(*w.result);
  return results;
}

}  // namespace

TEST_CASE("one worker process compiles and runs several candidates", "[tuner][worker]") {
  const auto results = measure({job(0), job(1), job(2), job(3)}, 2);
  std::set<double> pids;
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(results[i].error);
    REQUIRE(results[i].status == RecordStatus::Ok);
    CHECK(results[i].compile_seconds == i);  // each result is its own candidate's
    pids.insert(results[i].median_seconds);
  }
  CHECK(pids.size() <= 2);  // two processes at most
  CHECK_FALSE(pids.count(::getpid()));

  const auto one_process = measure({job(0), job(1), job(2)}, 1);
  CHECK(one_process[0].median_seconds == one_process[1].median_seconds);
  CHECK(one_process[1].median_seconds == one_process[2].median_seconds);
}

TEST_CASE("a candidate that crashes or hangs costs its own record only", "[tuner][worker]") {
  SECTION("crash while running: the others compiled in its process are compiled again") {
    const auto results = measure({job(0), job(1, "run_crash"), job(2), job(3)}, 1);
    CHECK(results[0].status == RecordStatus::Ok);
    CHECK(results[1].status == RecordStatus::Crash);
    CHECK(results[1].error.find("SIGSEGV") != std::string::npos);
    CHECK(results[2].status == RecordStatus::Ok);
    CHECK(results[3].status == RecordStatus::Ok);
    CHECK(results[2].compile_seconds == 2);
    CHECK(results[0].median_seconds != results[2].median_seconds);  // a new process
  }
  SECTION("hang while running") {
    const auto results = measure({job(0, "run_hang"), job(1)}, 1);
    CHECK(results[0].status == RecordStatus::Timeout);
    CHECK(results[1].status == RecordStatus::Ok);
  }
  SECTION("crash while compiling") {
    const auto results = measure({job(0), job(1, "compile_crash"), job(2)}, 1);
    CHECK(results[0].status == RecordStatus::Ok);
    CHECK(results[1].status == RecordStatus::Crash);
    CHECK(results[2].status == RecordStatus::Ok);
  }
  SECTION("hang while compiling") {
    const auto results = measure({job(0), job(1, "compile_hang"), job(2)}, 1);
    CHECK(results[0].status == RecordStatus::Ok);
    CHECK(results[1].status == RecordStatus::Timeout);
    CHECK(results[1].error.find("compile timeout") != std::string::npos);
    CHECK(results[2].status == RecordStatus::Ok);
  }
  SECTION("a kernel that fails at run time leaves its process to nobody else") {
    const auto results = measure({job(0, "run_error"), job(1)}, 1);
    CHECK(results[0].status == RecordStatus::RuntimeError);
    CHECK(results[1].status == RecordStatus::Ok);
    CHECK(results[0].median_seconds != results[1].median_seconds);
  }
  SECTION("a compile error is a result, and the process goes on") {
    const auto results = measure({job(0, "compile_error"), job(1)}, 1);
    CHECK(results[0].status == RecordStatus::CompileError);
    CHECK(results[0].error == "bad schedule 0");
    CHECK(results[1].status == RecordStatus::Ok);
  }
}
