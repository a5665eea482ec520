// The cross-core round trip `tessel run --profile` reports: a plausible time where the
// process has two CPUs, nothing where it has one, and the caller's affinity left as it was.
#include <catch2/catch.hpp>

#include <pthread.h>
#include <sched.h>

#include <optional>
#include <thread>

#include "base/cross_core_latency.h"

using namespace tessel;

namespace {

int allowed_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(::pthread_getaffinity_np(::pthread_self(), sizeof(set), &set) == 0);
  return CPU_COUNT(&set);
}

}  // namespace

TEST_CASE("cross-core round trip: measured between two CPUs, the caller's affinity kept", "[base]") {
  const int cpus = allowed_cpu_count();
  const std::optional<double> ns = cross_core_round_trip_ns();
  CHECK(allowed_cpu_count() == cpus);
  if (cpus < 2) {
    CHECK_FALSE(ns.has_value());
    return;
  }
  REQUIRE(ns.has_value());
  // A line's trip between two cores takes tens to hundreds of nanoseconds; a loaded CI
  // machine that descheduled a thread mid-batch can stretch a batch, never to a millisecond.
  CHECK(*ns > 1.0);
  CHECK(*ns < 1e6);
}

TEST_CASE("cross-core round trip: nothing to measure on one CPU", "[base]") {
  std::optional<double> ns = 0.0;
  std::thread confined([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    cpu_set_t mine;
    CPU_ZERO(&mine);
    REQUIRE(::pthread_getaffinity_np(::pthread_self(), sizeof(mine), &mine) == 0);
    int first = 0;
    while (!CPU_ISSET(first, &mine)) ++first;
    CPU_SET(first, &one);
    REQUIRE(::pthread_setaffinity_np(::pthread_self(), sizeof(one), &one) == 0);
    ns = cross_core_round_trip_ns();
  });
  confined.join();
  CHECK_FALSE(ns.has_value());
}
