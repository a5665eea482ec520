// `tessel report`: the data collected from a hand-made tuning database (curves against a
// running best computed here, trial indices, failures, loop nests, held-out predictions) and
// the page rendered from it (every section, no URL, no script, database text escaped).
#include <catch2/catch.hpp>

#include "tests/support/temp_dir.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "codegen/target.h"
#include "report/report_data.h"
#include "report/report_html.h"
#include "report/svg_plot.h"
#include "search/cpu/sampler.h"
#include "tests/support/task_test_util.h"
#include "tuner/features.h"
#include "tuner/tune_model.h"

using namespace tessel;
using namespace tessel::testing;
namespace fs = std::filesystem;

namespace {


/// Conv 3x3 + bias + Relu, then a global average pool: two tasks.
std::shared_ptr<const Graph> conv_model() {
  GraphBuilder b("conv");
  const int x = b.input("x", DType::Float32, {1, 8, 16, 16});
  Attributes attrs;
  attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
  const int conv = b.node("Conv", {x, b.weight("w", DType::Float32, {16, 8, 3, 3}, 3), b.weight("b", DType::Float32, {16}, 4)},
                          attrs);
  const int relu = b.node("Relu", {conv});
  return b.finish({b.node("GlobalAveragePool", {relu})});
}

std::string timestamp(int second) {
  char text[32];
  std::snprintf(text, sizeof(text), "2026-01-01T00:00:%02dZ", second);
  return text;
}

TuningRecord record(const Workload &task, const std::string &hash, std::optional<double> median, int second,
                    RecordStatus status = RecordStatus::Ok) {
  TuningRecord r;
  r.workload_key = task.workload_key;
  r.target = "llvm";
  r.machine = "Test CPU <b>9000</b>";
  r.schedule_hash = hash;
  r.schedule_text = "tessel-schedule v1\n# <b>sched " + hash + "</b>\n";
  r.status = status;
  if (status != RecordStatus::Ok) r.error_message = "kernel failed: <b>boom</b> & more";
  r.median_seconds = median;
  if (median) r.timings_seconds = {*median};
  r.created_at = timestamp(second);
  return r;
}

struct Fixture {
  TempDir dir{"tessel_report"};
  std::shared_ptr<const Graph> graph = conv_model();
  std::vector<Workload> tasks = distinct_workloads(*graph, partition_graph(*graph));
  std::string db_path = dir.file("tuning.db");
  // The conv task's searched trials in id order; nullopt = failed.
  std::vector<std::optional<double>> trials = {5e-3, std::nullopt, 3e-3, 3.5e-3, std::nullopt, 2e-3, 2.5e-3};
  std::string best_schedule_text;

  Fixture() {
    REQUIRE(tasks.size() == 2);
    REQUIRE(graph->nodes[tasks[0].group.nodes.front()].op_type == "Conv");
    auto instance = make_task(graph, tasks[0].group);
    REQUIRE(instance.ok());
    best_schedule_text = to_text(default_cpu_schedule(instance->compute, cpu_target_desc(Target{})));

    auto db = TuningDatabase::open(db_path);
    REQUIRE(db.ok());
    REQUIRE(db->add_workload(tasks[0].workload_key, tasks[0].workload_text).ok());
    TuningRecord builtin = record(tasks[0], kBuiltinScheduleHash, 4e-3, 0);
    builtin.schedule_text.clear();
    REQUIRE(db->add_record(builtin).ok());
    for (size_t i = 0; i < trials.size(); ++i) {
      const RecordStatus status = !trials[i] ? (i == 1 ? RecordStatus::RuntimeError : RecordStatus::Timeout) : RecordStatus::Ok;
      TuningRecord r = record(tasks[0], "h" + std::to_string(i), trials[i], static_cast<int>(i) + 1, status);
      if (i == 5) r.schedule_text = best_schedule_text;  // the best one must replay
      REQUIRE(db->add_record(r).ok());
    }
    // A workload of another model: counted in the totals, not a task of this model. Its
    // best schedule does not replay (and its text needs escaping).
    Workload other;
    other.workload_key = "00000000deadbeef";
    other.workload_text = "Bogus<b>text</b>";
    REQUIRE(db->add_workload(other.workload_key, other.workload_text).ok());
    REQUIRE(db->add_record(record(other, "o1", 1e-3, 10)).ok());
  }

  ReportData collect(bool with_model) const {
    auto db = TuningDatabase::open(db_path);
    REQUIRE(db.ok());
    ReportDataOptions options;
    options.db_path = db_path;
    options.target = "llvm";
    if (with_model) {
      options.model = graph;
      options.model_path = "conv<model>.onnx";
    }
    auto data = collect_report_data(db.value(), options);
    INFO((data.ok() ? std::string() : data.error().message));
    REQUIRE(data.ok());
    return data.value();
  }
};

void check_self_contained(const std::string &html) {
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
}

}  // namespace

TEST_CASE("report data: curves are the running best, trial of the best, failures, loop nests", "[report]") {
  Fixture f;
  const ReportData data = f.collect(true);
  CHECK(data.records == 9);  // built-in + 7 trials + the other workload's record
  CHECK(data.workloads == 2);
  CHECK(data.records_by_status.at(RecordStatus::Ok) == 7);
  CHECK(data.records_by_status.at(RecordStatus::RuntimeError) == 1);
  CHECK(data.records_by_status.at(RecordStatus::Timeout) == 1);
  CHECK(data.machine == "Test CPU <b>9000</b>");
  CHECK(data.span_seconds == 10);
  REQUIRE(data.tasks.size() == 2);

  const ReportTask &conv = data.tasks[0];
  CHECK(conv.workload_key == f.tasks[0].workload_key);
  CHECK(conv.ops == "Conv+Relu");
  CHECK(conv.output_type == "float32[1,16,16,16]");
  CHECK(conv.flops == f.tasks[0].flops);
  REQUIRE(conv.flops > 0);
  CHECK(conv.records == 8);
  CHECK(conv.searched == 7);
  CHECK(conv.failed == 2);
  REQUIRE(conv.builtin_seconds);
  CHECK(*conv.builtin_seconds == 4e-3);
  REQUIRE(conv.best);
  CHECK(conv.best->schedule_hash == "h5");
  CHECK_FALSE(conv.best_is_builtin);
  CHECK(conv.best_trial == 6);

  // The running best by hand, in GFLOP/s; failed trials repeat the previous value.
  std::vector<double> expected;
  double best = 0;
  for (const auto &seconds : f.trials) {
    if (seconds) best = std::max(best, conv.flops / *seconds / 1e9);
    expected.push_back(best);
  }
  REQUIRE(conv.curve.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) CHECK(conv.curve[i] == Approx(expected[i]));

  CHECK(conv.loop_nest_error.empty());
  CHECK(conv.loop_nest.find("for ") != std::string::npos);
  CHECK(conv.loop_nest.find("compute") != std::string::npos);
  REQUIRE(conv.errors.size() == 2);
  CHECK(conv.errors[0].first.find("<b>boom</b>") != std::string::npos);

  const ReportTask &pool = data.tasks[1];
  CHECK(pool.ops == "GlobalAveragePool");
  CHECK(pool.records == 0);
  CHECK_FALSE(pool.best);
  CHECK(pool.curve.empty());

  // The model curve: the built-in sum, then one point per searched trial of these tasks.
  REQUIRE(data.model_curve.trials.size() == 8);
  CHECK_FALSE(data.model_curve.complete);  // the pool task has no built-in record
  CHECK(data.model_curve.latency_ms.front() == Approx(4.0));
  CHECK(data.model_curve.latency_ms.back() == Approx(2.0));

  // Fewer than 50 records with features: no held-out plot.
  CHECK_FALSE(data.prediction.available);
  CHECK(data.prediction.note.find("at least 50") != std::string::npos);
}

TEST_CASE("report page: every section, self-contained, database text escaped", "[report]") {
  Fixture f;
  const std::string html = render_report_html(f.collect(true));
  for (const char *section : {"id='curves'", "id='split'", "id='costmodel'", "id='tasks'"})
    CHECK(html.find(section) != std::string::npos);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("Estimated model latency") != std::string::npos);
  CHECK(html.find("no records for this target") != std::string::npos);  // the pool task
  CHECK(html.find("at least 50") != std::string::npos);                  // the cost model's note
  CHECK(html.find("best schedule as a loop nest") != std::string::npos);
  check_self_contained(html);

  // Database and command-line strings arrive escaped.
  CHECK(html.find("<b>boom") == std::string::npos);
  CHECK(html.find("kernel failed: &lt;b&gt;boom&lt;/b&gt; &amp; more") != std::string::npos);
  CHECK(html.find("<b>9000") == std::string::npos);
  CHECK(html.find("Test CPU &lt;b&gt;9000&lt;/b&gt;") != std::string::npos);
  CHECK(html.find("conv<model>") == std::string::npos);
  CHECK(html.find("conv&lt;model&gt;.onnx") != std::string::npos);
}

TEST_CASE("report: another run's model curve from its own records, drawn over this one", "[report]") {
  Fixture f;
  ReportData data = f.collect(true);
  // Another database's run of the same model: its own built-in time, then three trials of
  // the conv (one failed) and a record of a workload outside the model, which is no trial.
  auto record = [&](const std::string &key, const std::string &hash, std::optional<double> seconds) {
    TuningRecord r;
    r.workload_key = key;
    r.schedule_hash = hash;
    r.status = seconds ? RecordStatus::Ok : RecordStatus::RuntimeError;
    r.median_seconds = seconds;
    return r;
  };
  const std::string conv = f.tasks[0].workload_key;
  const std::vector<TuningRecord> other{record(conv, kBuiltinScheduleHash, 3e-3), record(conv, "a", 2.5e-3),
                                        record("00000000deadbeef", "b", 1e-4), record(conv, "c", std::nullopt),
                                        record(conv, "d", 1e-3)};
  const ModelCurve curve = model_curve(data.tasks, other);
  CHECK(curve.trials == std::vector<double>{0, 1, 2, 3});
  REQUIRE(curve.latency_ms.size() == 4);
  CHECK(curve.latency_ms[0] == Approx(3.0));  // its own built-in time, not this database's 4 ms
  CHECK(curve.latency_ms[1] == Approx(2.5));
  CHECK(curve.latency_ms[2] == Approx(2.5));  // the failed trial holds the best
  CHECK(curve.latency_ms[3] == Approx(1.0));
  CHECK_FALSE(curve.complete);  // the pool task has no built-in record here either

  data.run_label = "today <a>";
  data.compared.push_back({"pretrained & transfer", "/tmp/c.db", curve});
  const std::string html = render_report_html(data);
  CHECK(html.find("run by run") != std::string::npos);
  CHECK(html.find("today &lt;a&gt;") != std::string::npos);
  CHECK(html.find("pretrained &amp; transfer") != std::string::npos);
  CHECK(html.find("lacks the built-in time of some tasks") != std::string::npos);
  check_self_contained(html);
}

TEST_CASE("report without a model: every workload, schedules that do not replay shown escaped", "[report]") {
  Fixture f;
  const ReportData data = f.collect(false);
  REQUIRE(data.tasks.size() == 2);
  CHECK(data.tasks[0].workload_key == f.tasks[0].workload_key);
  CHECK(data.tasks[1].workload_key == "00000000deadbeef");
  CHECK(data.tasks[1].weight == 1);
  REQUIRE(data.tasks[1].best);
  CHECK(data.tasks[1].loop_nest.empty());
  CHECK_FALSE(data.tasks[1].loop_nest_error.empty());
  const std::string html = render_report_html(data);
  CHECK(html.find("<b>sched o1") == std::string::npos);
  CHECK(html.find("&lt;b&gt;sched o1&lt;/b&gt;") != std::string::npos);
  check_self_contained(html);
  // The workload text rebuilds the conv task: the same FLOPs, curve and loop nest as with the model.
  CHECK(data.tasks[0].ops == "Conv+Relu");
  CHECK(data.tasks[0].flops == f.tasks[0].flops);
  CHECK(data.tasks[0].best_trial == 6);
  CHECK_FALSE(data.tasks[0].loop_nest.empty());
  CHECK(data.notes.size() == 1);  // the bogus workload's
}

TEST_CASE("report: held-out cost-model predictions with enough records", "[report]") {
  TempDir dir("tessel_report");
  const std::string path = dir.file("features.db");
  auto db = TuningDatabase::open(path);
  REQUIRE(db.ok());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(0, 1);
  const int width = feature_count();
  // Two workloads whose time falls with feature 0, so there is something to learn.
  for (const std::string key : {"1111111111111111", "2222222222222222"}) {
    REQUIRE(db->add_workload(key, "w" + key).ok());
  }
  for (int i = 0; i < 80; ++i) {
    TuningRecord r;
    r.workload_key = i % 2 ? "1111111111111111" : "2222222222222222";
    r.target = "llvm";
    r.schedule_hash = "s" + std::to_string(i);
    r.schedule_text = "tessel-schedule v1\n";
    std::vector<float> features(width);
    for (float &v : features) v = uniform(rng);
    r.features = features;
    r.median_seconds = 1e-3 / (0.2 + features[0]);
    r.timings_seconds = {*r.median_seconds};
    REQUIRE(db->add_record(r).ok());
  }
  ReportDataOptions options;
  options.db_path = path;
  options.target = "llvm";
  auto data = collect_report_data(db.value(), options);
  REQUIRE(data.ok());
  const PredictionSummary &p = data->prediction;
  INFO(p.note);
  REQUIRE(p.available);
  CHECK(p.feature_records == 80);
  CHECK(p.train_records == 56);
  CHECK(p.test_records == 24);
  CHECK(p.points.size() == 24);
  CHECK(p.workloads.size() == 2);
  CHECK(p.unseen_workloads == 0);
  CHECK(p.pairwise_workloads == 2);
  CHECK(p.pairwise_accuracy > 0.6);  // feature 0 decides the time
  for (const PredictionPoint &pt : p.points) {
    CHECK(pt.measured > 0);
    CHECK(pt.measured <= 1);
  }
  const std::string html = render_report_html(data.value());
  CHECK(html.find("<circle") != std::string::npos);
  CHECK(html.find("pairwise ranking accuracy") != std::string::npos);
  check_self_contained(html);
}

TEST_CASE("report data: errors and helpers", "[report]") {
  TempDir dir("tessel_report");
  const std::string path = dir.file("empty.db");
  auto db = TuningDatabase::open(path);
  REQUIRE(db.ok());
  ReportDataOptions options;
  options.db_path = path;
  options.target = "llvm";
  auto data = collect_report_data(db.value(), options);
  REQUIRE_FALSE(data.ok());
  CHECK(data.error().message.find("no records for target 'llvm'") != std::string::npos);

  const std::string text =
      "Conv(in0:float32[1,3,224,224],in1:float32[64,3,7,7],in2:float32[64]){dilations=[1,1];group=1;kernel_shape=[7,7];"
      "pads=[3,3,3,3];strides=[2,2];}->t0:float32[1,64,112,112];Relu(t0){}->t1:float32[1,64,112,112];";
  CHECK(workload_ops(text) == "Conv+Relu");
  CHECK(workload_output_type(text) == "float32[1,64,112,112]");
  CHECK(workload_ops("not a workload") == "");

  // Running best in ms when FLOPs are unknown: a running minimum, NaN before the first success.
  const auto curve = running_best_curve({std::nullopt, 2e-3, 3e-3, 1e-3}, 0);
  REQUIRE(curve.size() == 4);
  CHECK(std::isnan(curve[0]));
  CHECK(curve[1] == Approx(2.0));
  CHECK(curve[2] == Approx(2.0));
  CHECK(curve[3] == Approx(1.0));

  REQUIRE(parse_utc_timestamp("2026-11-21T13:50:35Z"));
  CHECK(*parse_utc_timestamp("2026-11-21T13:50:35Z") - *parse_utc_timestamp("2026-11-21T13:49:30Z") == 65);
  CHECK_FALSE(parse_utc_timestamp("yesterday"));
}

TEST_CASE("svg plots: escaping, ticks, charts without URLs", "[report]") {
  CHECK(svg::escape("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  CHECK(svg::linear_ticks(0, 10) == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(svg::log_ticks(1, 1000) == std::vector<double>{1, 10, 100, 1000});
  CHECK(svg::format_tick(2.5) == "2.5");
  CHECK(svg::format_tick(0) == "0");

  svg::Series s;
  s.label = "<series>";
  s.x = {1, 2, 3};
  s.y = {1, 4, 9};
  const std::string line = svg::line_chart({s}, {"x", true, std::nullopt, std::nullopt}, {"y", false, 0.0, std::nullopt}, {});
  CHECK(line.rfind("<svg", 0) == 0);
  CHECK(line.find("<path") != std::string::npos);
  CHECK(line.find("&lt;series&gt;") != std::string::npos);
  CHECK(line.find("http") == std::string::npos);

  const std::string bars = svg::bar_chart({{"a<b", {1, 2}, "note&"}}, {"ms", false, std::nullopt, std::nullopt}, {},
                                          svg::BarOptions{});
  CHECK(bars.find("a&lt;b") != std::string::npos);
  CHECK(bars.find("note&amp;") != std::string::npos);
  CHECK(bars.find("<rect") != std::string::npos);
}
