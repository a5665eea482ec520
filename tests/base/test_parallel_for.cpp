// parallel_for_each visits every index exactly once, on several threads when asked.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/parallel_for.h"

using namespace tessel;

TEST_CASE("parallel_for_each visits every index once", "[base][parallel]") {
  for (int threads : {0, 1, 3, 64}) {
    std::vector<std::atomic<int>> visits(1000);
    parallel_for_each(1000, threads, [&](int i) { ++visits[i]; });
    for (const auto &v : visits) REQUIRE(v.load() == 1);
  }
  int calls = 0;
  parallel_for_each(0, 4, [&](int) { ++calls; });
  parallel_for_each(-3, 4, [&](int) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("parallel_for_each runs on the threads it is given", "[base][parallel]") {
  std::mutex mutex;
  std::set<std::thread::id> seen;
  std::atomic<int> waiting{0};
  // Each of the first two bodies waits until both started: only two threads can get there.
  parallel_for_each(2, 2, [&](int) {
    ++waiting;
    while (waiting.load() < 2) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mutex);
    seen.insert(std::this_thread::get_id());
  });
  CHECK(seen.size() == 2);
}
