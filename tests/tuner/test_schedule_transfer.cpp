// Transfer tuning: a conv new to the database starts from the best schedules of the same
// conv at other shapes, fitted to its own, and measures them first.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "graph/fusion/fuse.h"
#include "search/exact_cover.h"
#include "tuner/benchmark_problems.h"
#include "tuner/schedule_transfer.h"
#include "tuner/tune_model.h"

using namespace tessel;

namespace {

std::shared_ptr<const Graph> conv_graph(const std::string &spec) {
  auto graph = make_benchmark_graph("conv", spec);
  REQUIRE(graph.ok());
  return graph.value();
}

TuneOptions quick_tune(int trials) {
  TuneOptions options;
  options.trials = trials;
  options.batch = 4;
  options.measure.timing.min_runs = 3;
  options.measure.timing.min_seconds = 0.005;
  return options;
}

}  // namespace

TEST_CASE("workloads of one family differ only in their shapes", "[tuner][transfer]") {
  const std::string a = "Conv(in0:float32[1,32,28,28],in1:float32[64,32,3,3]){kernel_shape=[3,3];pads=[1,1,1,1];}"
                        "->t0:float32[1,64,28,28];Relu(t0){}->t1:float32[1,64,28,28];";
  const std::string b = "Conv(in0:float32[1,64,14,14],in1:float32[64,64,3,3]){kernel_shape=[3,3];pads=[1,1,1,1];}"
                        "->t0:float32[1,64,14,14];Relu(t0){}->t1:float32[1,64,14,14];";
  const std::string strided = "Conv(in0:float32[1,64,14,14],in1:float32[64,64,3,3]){kernel_shape=[3,3];pads=[1,1,1,1];"
                              "strides=[2,2];}->t0:float32[1,64,7,7];Relu(t0){}->t1:float32[1,64,7,7];";
  CHECK(workload_family(a) == workload_family(b));
  CHECK(workload_family(a).find("28") == std::string::npos);
  CHECK(workload_family(a).find("kernel_shape=[3,3]") != std::string::npos);  // attributes stay
  CHECK(workload_family(strided) != workload_family(b));
  CHECK(shape_distance(a, a) == 0);
  CHECK(shape_distance(a, b) > 0);
  CHECK(shape_distance(a, b) == Approx(shape_distance(b, a)));
  CHECK(std::isinf(shape_distance(a, "Relu(in0:float32[4]){}->t0:float32[4];")));
}

TEST_CASE("a conv new to the database first measures its relatives' best schedules", "[tuner][transfer]") {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tessel_transfer_test_" + std::to_string(::getpid()) + ".db"))
                               .string();
  std::filesystem::remove(path);
  auto db = TuningDatabase::open(path);
  REQUIRE(db.ok());
  const auto tuned = tune_model(*conv_graph("1,16,20,20,32,3,3"), Target{}, db.value(), quick_tune(8));
  REQUIRE(tuned.ok());
  CHECK(tuned->transferred_tasks() == 0);  // nothing to transfer from yet

  // The same conv at another shape: fitted schedules of the first, admitted as they are.
  const auto other = conv_graph("1,16,12,12,32,3,3");
  auto task = make_task(other, partition_graph(*other).front());
  REQUIRE(task.ok());
  const ScheduleSpace space = ScheduleSpace::for_cpu(cpu_target_desc(Target{}));
  auto transferred = transferred_schedules(task.value(), space, db.value(), Target{}.to_string(), 3);
  REQUIRE(transferred.ok());
  if (transferred->empty()) {
    auto top = db->top_k(tuned->tasks.front().workload_key, Target{}.to_string(), 8);
    REQUIRE(top.ok());
    for (const TuningRecord &r : top.value()) {
      if (r.schedule_text.empty()) continue;
      auto fitted = space.adapt(task->compute, parse_schedule(r.schedule_text).value());
      WARN(r.schedule_text << "\n=> " << (fitted.ok() ? std::string("ok") : fitted.error().message));
    }
  }
  REQUIRE_FALSE(transferred->empty());
  for (const TransferredSchedule &t : transferred.value()) {
    INFO(to_text(t.schedule));
    CHECK(space.admits(task->compute, t.schedule).ok());
    CHECK(validate_exact_cover(task->compute, t.schedule).ok());
    CHECK(t.from_workload_key == tuned->tasks.front().workload_key);
    CHECK(t.distance > 0);
  }

  // Tuning it measures them in its first round (and checks them like any candidate).
  TuneOptions options = quick_tune(4);
  options.transfer = 2;
  const auto second = tune_model(*other, Target{}, db.value(), options);
  REQUIRE(second.ok());
  CHECK(second->transferred_tasks() == 1);
  CHECK(second->tasks.front().transferred == std::min<int>(2, static_cast<int>(transferred->size())));
  auto measured = db->measured_hashes(task->workload_key, Target{}.to_string());
  REQUIRE(measured.ok());
  CHECK(measured->count(schedule_hash(transferred->front().schedule)) == 1);
  auto first_record = db->find_record(task->workload_key, Target{}.to_string(), schedule_hash(transferred->front().schedule));
  REQUIRE(first_record.ok());
  REQUIRE(first_record.value());
  CHECK(first_record.value()->status == RecordStatus::Ok);

  // Tuned once, it has records of its own: no transfer again.
  const auto third = tune_model(*other, Target{}, db.value(), quick_tune(4));
  REQUIRE(third.ok());
  CHECK(third->transferred_tasks() == 0);
  std::filesystem::remove(path);
}
