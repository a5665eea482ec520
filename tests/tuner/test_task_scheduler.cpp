// Tests of the task scheduler that splits a model's trial budget over its tasks.
#include <catch2/catch.hpp>

#include "tuner/task_scheduler.h"

using namespace tessel;

TEST_CASE("the task scheduler warms every task up, then follows the expected gain", "[tuner][scheduler]") {
  TaskScheduler s({TaskProgress{1}, TaskProgress{3}});
  CHECK(s.next_task(10) == 0);
  s.record_round(0, 8, 1e-3);
  CHECK(s.next_task(10) == 1);
  s.record_round(1, 8, 1e-3);
  // Task 1 runs three times per model run: a round there promises three times the drop.
  CHECK(s.next_task(10) == 1);
  CHECK(s.next_task(0) == -1);
  CHECK(s.estimated_latency() == Approx(4e-3));
}

TEST_CASE("a retired task is never picked again and the others get the budget", "[tuner][scheduler]") {
  TaskScheduler s({TaskProgress{1}, TaskProgress{5}, TaskProgress{1}});
  for (int t = 0; t < 3; ++t) s.record_round(t, 8, 1e-3);
  REQUIRE(s.next_task(100) == 1);
  s.retire(1);  // its schedule space is used up
  for (int round = 0; round < 50; ++round) {
    const int t = s.next_task(100);
    REQUIRE(t >= 0);
    CHECK(t != 1);
    s.record_round(t, 8, 1e-3);
  }
  s.retire(0);
  s.retire(2);
  CHECK(s.next_task(100) == -1);
  // A task retired before its warm-up round is skipped too.
  TaskScheduler fresh({TaskProgress{1}, TaskProgress{1}});
  fresh.retire(0);
  CHECK(fresh.next_task(10) == 1);
}

TEST_CASE("the warm-up goes to the heaviest tasks first: weight x latency before tuning", "[tuner][scheduler]") {
  std::vector<TaskProgress> tasks(4);
  tasks[0].baseline_seconds = 1e-3;
  tasks[1].baseline_seconds = 5e-3;
  tasks[2].baseline_seconds = 2e-3;
  tasks[2].weight = 3;            // 6 ms of the model's time
  tasks[3].baseline_seconds = 9e-3;
  tasks[3].best_seconds = 0.5e-3;  // tuned before: its records say 0.5 ms
  TaskScheduler s(tasks);
  std::vector<int> order;
  for (int round = 0; round < 4; ++round) {
    const int t = s.next_task(100);
    order.push_back(t);
    s.record_round(t, 8, s.tasks()[t].best_seconds > 0 ? s.tasks()[t].best_seconds : s.tasks()[t].baseline_seconds);
  }
  CHECK(order == std::vector<int>{2, 1, 0, 3});
}

TEST_CASE("a light task's warm-up round is a quarter batch; heavy and later rounds are whole", "[tuner][scheduler]") {
  std::vector<TaskProgress> tasks(3);
  tasks[0].baseline_seconds = 150e-6;  // a conv
  tasks[1].baseline_seconds = 1e-6;    // a Slice: under 2% of the model
  tasks[2].baseline_seconds = 1e-6;
  tasks[2].weight = 2;                 // 2 us of the model's 153
  TaskScheduler s(tasks);
  CHECK(s.round_size(0, 8) == 8);
  CHECK(s.round_size(1, 8) == 2);
  CHECK(s.round_size(2, 8) == 2);
  CHECK(s.round_size(1, 2) == 2);
  s.record_round(1, 2, 1e-6);
  CHECK(s.round_size(1, 8) == 8);  // warmed up: the gain decides from here on, whole rounds
  // A task whose latency is unknown leaves nothing to compare against: whole rounds.
  std::vector<TaskProgress> unknown(2);
  unknown[0].baseline_seconds = 1e-3;
  TaskScheduler u(unknown);
  CHECK(u.round_size(0, 8) == 8);
  CHECK(u.round_size(1, 8) == 8);
}
