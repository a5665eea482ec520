#include "bench/tessel_rows.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <memory>

#include "executor/optimize_graph.h"
#include "graph/fusion/fuse.h"
#include "graph/infer/shape_inference.h"
#include "search/cpu/sampler.h"
#include "tuner/measure.h"
#include "tuner/schedule_benchmark.h"
#include "tuner/tune_model.h"

namespace tessel::bench {

namespace {

Tensor tensor_from(const std::vector<float> &data, const Shape &shape) {
  Tensor t(DType::Float32, shape);
  std::memcpy(t.data(), data.data(), data.size() * sizeof(float));
  return t;
}

/// One-node graph: the op reading a fed input and a constant weight.
std::shared_ptr<const Graph> one_node_graph(const std::string &op, const Shape &input_shape, const Tensor &weight,
                                            Attributes attrs) {
  Graph g;
  g.name = op;
  g.opset = 17;
  const int x = g.add_tensor({"x", TensorType{DType::Float32, input_shape, true}, std::nullopt});
  g.inputs.push_back(x);
  const int w = g.add_tensor({"w", weight.type(), weight});
  const int y = g.add_tensor({"y", {}, std::nullopt});
  g.add_node(Node{op, op, "", std::move(attrs)}, {x, w}, {y});
  g.outputs = {y};
  auto inferred = infer_shapes(std::move(g));
  if (!inferred.ok()) throw std::runtime_error(inferred.error().message);
  return std::make_shared<const Graph>(std::move(inferred.value()));
}

/// A row running `kernel` on `input`, checked against `reference`.
KernelRow kernel_row(const std::string &kernel_label, const std::string &name, double flops, JitKernel kernel,
                     const Task &task, Tensor input, const std::vector<float> *reference, std::string setup) {
  KernelRow row;
  row.kernel = kernel_label;
  row.name = name;
  row.is_peer = false;
  row.flops = flops;
  row.setup = std::move(setup);
  const TensorType out_type = task.signature.types[task.signature.outputs[0]];
  auto output = std::make_shared<Tensor>(out_type.dtype, out_type.shape);
  auto in = std::make_shared<Tensor>(std::move(input));
  auto weight = std::make_shared<Tensor>(*task.signature.values[task.signature.inputs[1]]);
  row.run = [kernel, in, weight, output] {
    std::vector<Tensor> outputs = {*output};
    auto ran = kernel.run({in.get(), weight.get()}, outputs);
    if (!ran.ok()) throw std::runtime_error(ran.error().message);
  };
  row.check_error = [output, reference] {
    return max_relative_error(std::vector<float>(output->data_as<float>(), output->data_as<float>() + output->numel()),
                              *reference);
  };
  return row;
}

/// The tuned schedule of the graph's one task: tunes until the database holds
/// `options.trials` searched records, then re-measures its five best and returns the
/// fastest (null: the built-in schedule won). `setup` says where the records came from.
Result<std::optional<Schedule>> tuned_schedule(std::shared_ptr<const Graph> graph, const Task &task,
                                               const TesselRowOptions &options, std::string &setup) {
  auto db = TuningDatabase::open(options.db_path);
  if (!db.ok()) return db.error();
  const Target target;
  const std::string target_text = target.to_string();
  const std::string key = distinct_workloads(*graph, partition_graph(*graph)).front().workload_key;
  auto searched = [&]() -> Result<int> {
    auto hashes = db->measured_hashes(key, target_text);
    if (!hashes.ok()) return hashes.error();
    return static_cast<int>(hashes->size() - hashes->count(kBuiltinScheduleHash));
  };
  auto before = searched();
  if (!before.ok()) return before.error();
  char text[200];
  if (before.value() < options.trials) {
    TuneOptions tune;
    tune.trials = options.trials - before.value();
    tune.seed = options.seed;
    tune.log = [](const std::string &line) { std::fprintf(stderr, "tessel tune: %s\n", line.c_str()); };
    auto summary = tune_model(*graph, target, db.value(), tune);
    if (!summary.ok()) return summary.error();
    std::snprintf(text, sizeof(text), "tuned here: %d trials in %.0f s (%.2f trials/s)", summary->measured,
                  summary->wall_seconds, summary->measured / std::max(summary->wall_seconds, 1e-9));
    setup = text;
    if (before.value() > 0) setup += " after " + std::to_string(before.value()) + " already in the database";
  } else {
    setup = std::to_string(before.value()) + " searched records already in the database";
  }
  auto top = db->top_k(key, target_text, 5);
  if (!top.ok()) return top.error();
  if (top->empty()) return make_error("the database has no successful record of " + key);
  std::vector<std::optional<Schedule>> schedules;
  for (const TuningRecord &r : top.value()) {
    if (r.schedule_text.empty()) {
      schedules.push_back(std::nullopt);
      continue;
    }
    auto s = parse_schedule(r.schedule_text);
    if (!s.ok()) return s.error();
    schedules.push_back(s.value());
  }
  // Re-measured in fresh workers: the best record's own median was the luckiest of many.
  Measurer measurer(task, target);
  auto reference = measurer.prepare_reference();
  if (!reference.ok()) return reference.error();
  std::vector<Schedule> searched_schedules;
  for (const auto &s : schedules)
    if (s) searched_schedules.push_back(*s);
  const std::vector<MeasureResult> again = measurer.measure(searched_schedules);
  // The built-in schedule competes only when it is among the top records itself.
  const bool builtin_in_top = searched_schedules.size() < schedules.size();
  std::optional<Schedule> best;
  double best_seconds = builtin_in_top ? reference->median_seconds : std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < again.size(); ++i)
    if (again[i].status == RecordStatus::Ok && again[i].median_seconds < best_seconds) {
      best = searched_schedules[i];
      best_seconds = again[i].median_seconds;
    }
  if (!best && !builtin_in_top) {
    std::string why;
    for (const MeasureResult &m : again)
      if (m.status != RecordStatus::Ok) why = std::string(to_text(m.status)) + ": " + m.error;
    return make_error("none of the best records of " + key + " ran again (" + why + ")");
  }
  setup += "; fastest of the top " + std::to_string(schedules.size()) + " records measured again" +
           (best ? "" : " is the built-in schedule");
  return best;
}

std::vector<KernelRow> rows_for(const std::string &kernel_label, double flops, std::shared_ptr<const Graph> graph,
                                Tensor input, const std::vector<float> *reference, const TesselRowOptions &options) {
  // The kernel a model's node of this shape runs: with the CPU layout passes (a conv's
  // weight blocked by output channels).
  auto laid_out = optimize_graph(*graph);
  if (!laid_out.ok()) return {unavailable_row(kernel_label, "tessel", laid_out.error().message)};
  graph = std::make_shared<const Graph>(std::move(laid_out.value()));
  auto task = make_task(graph, partition_graph(*graph).front());
  if (!task.ok()) return {unavailable_row(kernel_label, "tessel", task.error().message)};
  std::vector<KernelRow> rows;
  // Everything that forks measuring workers runs before this process runs a kernel itself.
  std::string tuned_setup;
  Result<std::optional<Schedule>> tuned = make_error("no database");
  if (!options.db_path.empty()) tuned = tuned_schedule(graph, task.value(), options, tuned_setup);
  ScheduleBenchmarkOptions bench;
  bench.samples = options.samples;
  bench.seed = options.seed;
  Result<ScheduleBenchmarkResult> measured = make_error("no samples");
  if (options.samples > 0) {
    std::fprintf(stderr, "tessel: measuring %d random schedules of %s...\n", options.samples, kernel_label.c_str());
    measured = benchmark_schedules(task.value(), Target{}, bench);
    if (!measured.ok()) rows.push_back(unavailable_row(kernel_label, "tessel random samples", measured.error().message));
  }

  auto add = [&](const std::string &name, const Schedule *schedule, const std::string &setup) {
    auto kernel = compile_task(task.value(), schedule, Target{});
    if (!kernel.ok()) {
      rows.push_back(unavailable_row(kernel_label, name, kernel.error().message));
      return;
    }
    rows.push_back(kernel_row(kernel_label, name, flops, kernel.value(), task.value(), input, reference, setup));
  };
  char setup[160];
  add("tessel built-in schedule (untuned)", nullptr, "");
  const Schedule sketch_default = default_cpu_schedule(task->compute, cpu_target_desc(Target{}));
  add("tessel sketch default schedule", &sketch_default, "");
  if (!options.db_path.empty()) {
    const std::string name = "tessel tuned, " + std::to_string(options.trials) + " trials";
    if (!tuned.ok()) rows.push_back(unavailable_row(kernel_label, name, tuned.error().message));
    else {
      add(name, tuned.value() ? &*tuned.value() : nullptr, tuned_setup);
      rows.back().headline = true;
    }
  }
  if (!measured.ok()) return rows;
  const ScheduleBenchmarkResult &r = measured.value();
  if (const MeasuredSchedule *best = r.best()) {
    auto schedule = parse_schedule(best->schedule_text);
    std::snprintf(setup, sizeof(setup), "%zu samples (%d failed, %d wrong), median JIT compile %.2f s each",
                  r.samples.size(), r.failed, r.wrong, r.median_compile_seconds());
    if (schedule.ok()) add("tessel best of " + std::to_string(options.samples) + " random samples", &schedule.value(), setup);
  }
  return rows;
}

}  // namespace

std::vector<KernelRow> make_tessel_matmul_rows(const MatmulProblem &p, const TesselRowOptions &options) {
  try {
    auto graph = one_node_graph("MatMul", {p.m, p.k}, tensor_from(p.b, {p.k, p.n}), {});
    return rows_for(p.title(), p.flops(), graph, tensor_from(p.a, {p.m, p.k}), &p.reference, options);
  } catch (const std::exception &e) {
    return {unavailable_row(p.title(), "tessel", e.what())};
  }
}

std::vector<KernelRow> make_tessel_conv_rows(const ConvProblem &p, const TesselRowOptions &options) {
  try {
    Attributes attrs;
    attrs.set("pads", std::vector<int64_t>{p.pad, p.pad, p.pad, p.pad});
    attrs.set("strides", std::vector<int64_t>{p.stride, p.stride});
    auto graph = one_node_graph("Conv", {p.batch, p.in_channels, p.height, p.width},
                                tensor_from(p.weight, {p.out_channels, p.in_channels, p.kernel_h, p.kernel_w}), attrs);
    return rows_for(p.title(), p.flops(), graph, tensor_from(p.input, {p.batch, p.in_channels, p.height, p.width}),
                    &p.reference, options);
  } catch (const std::exception &e) {
    return {unavailable_row(p.title(), "tessel", e.what())};
  }
}

}  // namespace tessel::bench
