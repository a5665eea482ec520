#include "bench/tessel_rows.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "graph/fuse.h"
#include "graph/shape_inference.h"
#include "schedule/sampler.h"
#include "tuner/schedule_benchmark.h"

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
                     const TaskInstance &task, Tensor input, const std::vector<float> *reference, std::string setup) {
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

std::vector<KernelRow> rows_for(const std::string &kernel_label, double flops, std::shared_ptr<const Graph> graph,
                                Tensor input, const std::vector<float> *reference, const TesselRowOptions &options) {
  auto task = make_task_instance(graph, partition_graph(*graph).front());
  if (!task.ok()) return {unavailable_row(kernel_label, "tessel", task.error().message)};
  ScheduleBenchmarkOptions bench;
  bench.samples = options.samples;
  bench.seed = options.seed;
  std::fprintf(stderr, "tessel: measuring %d random schedules of %s...\n", options.samples, kernel_label.c_str());
  auto measured = benchmark_schedules(task.value(), Target{}, bench);
  if (!measured.ok()) return {unavailable_row(kernel_label, "tessel", measured.error().message)};
  const ScheduleBenchmarkResult &r = measured.value();

  std::vector<KernelRow> rows;
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
