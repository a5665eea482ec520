#include "peers/bench_rows.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "base/cache_eviction.h"
#include "peers/bench_peer_problem.h"
#include "peers/halide_autoschedule.h"
#include "peers/onednn_task_peer.h"
#include "peers/openblas_task_peer.h"
#include "peers/problems.h"
#include "tuner/schedule_benchmark.h"

namespace tessel {

namespace {

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f s", s);
  return text;
}

/// A row running a compiled tessel kernel on the bench's inputs into its own outputs.
bench::KernelRow kernel_row(const std::string &label, const std::string &name, JitKernel kernel,
                            const std::shared_ptr<TaskBench> &bench, const Task &task) {
  bench::KernelRow row;
  row.kernel = label;
  row.name = name;
  row.is_peer = true;
  row.flops = bench->flops;
  auto outputs = std::make_shared<std::vector<Tensor>>();
  for (int t : task.signature.outputs) outputs->emplace_back(task.signature.types[t].dtype, task.signature.types[t].shape);
  // The raw pointer is safe: rows live inside the TaskBench they read from.
  TaskBench *data = bench.get();
  row.run = [kernel, data, outputs] {
    std::vector<const Tensor *> pointers;
    for (const Tensor &t : data->inputs) pointers.push_back(&t);
    auto ran = kernel.run(pointers, *outputs);
    if (!ran.ok()) throw std::runtime_error(ran.error().message);
  };
  row.evict_constants = [task, data] { evict_task_constants(task, data->inputs); };
  row.check_error = [outputs, data] {
    const Tensor &out = outputs->front();
    std::vector<float> values(static_cast<size_t>(out.numel()));
    for (int64_t i = 0; i < out.numel(); ++i) values[i] = static_cast<float>(out.element_as_double(i));
    return bench::max_relative_error(values, data->reference);
  };
  return row;
}

/// A row running the task as a model does where the optimizer split it into several kernels:
/// the split graph's artifact on the bench's inputs (matched to its inputs by name), its
/// output written in place as a model's arena is.
Result<bench::KernelRow> as_in_model_row(const BenchTask &bt, const std::shared_ptr<TaskBench> &bench) {
  std::shared_ptr<Module> module = bt.as_in_model_run;
  const Graph &direct = *bt.task.graph;
  std::vector<const void *> inputs;
  for (const TensorDesc &d : module->inputs()) {
    const auto &ins = bt.task.signature.inputs;
    const auto at = std::find(ins.begin(), ins.end(), direct.find_tensor(d.name));
    if (at == ins.end()) return make_error(ErrorKind::Internal, "the split graph's input '" + d.name + "' is not the kernel's");
    const Tensor &t = bench->inputs[at - ins.begin()];
    if (t.shape() != d.shape || t.dtype() != d.dtype)
      return make_error(ErrorKind::Internal, "the split graph's input '" + d.name + "' has another type");
    inputs.push_back(t.data());
  }
  if (module->outputs().size() != 1) return make_error(ErrorKind::Internal, "the split graph has more than one output");
  auto output = std::make_shared<Tensor>(module->outputs()[0].dtype, module->outputs()[0].shape);
  bench::KernelRow row;
  row.name = bt.as_in_model_name;
  row.flops = bench->flops;  // the direct convolution's: the rows compare times for one result
  row.setup = bt.as_in_model_source;
  row.run = [module, inputs, output] { module->run_raw(inputs, {output->data()}); };
  row.evict_constants = [module] { module->evict_weights(); };
  TaskBench *data = bench.get();  // safe: rows live inside the TaskBench they read from
  row.check_error = [output, data] {
    std::vector<float> values(static_cast<size_t>(output->numel()));
    for (int64_t i = 0; i < output->numel(); ++i) values[i] = static_cast<float>(output->element_as_double(i));
    return bench::max_relative_error(values, data->reference);
  };
  return row;
}

}  // namespace

Result<std::shared_ptr<TaskBench>> make_task_bench(const BenchTask &bt, const BenchRowOptions &options) {
  const Task &task = bt.task;
  auto bench = std::make_shared<TaskBench>();
  bench->inputs = task_inputs(task, 7);
  bench->flops = static_cast<double>(task.flops);
  bench->bytes = task_compulsory_bytes(task);

  // The reference: the default (built-in) schedule, the schedule the conformance tests judge.
  auto builtin = compile_task(task, nullptr, options.target);
  if (!builtin.ok())
    return make_error(builtin.error().kind,
                      bt.label + ": the default schedule does not compile: " + builtin.error().message);
  auto reference = run_task(builtin.value(), task, bench->inputs);
  if (!reference.ok())
    return make_error(reference.error().kind,
                      bt.label + ": the default schedule does not run: " + reference.error().message);
  const Tensor &out = reference->front();
  bench->reference.resize(static_cast<size_t>(out.numel()));
  for (int64_t i = 0; i < out.numel(); ++i) bench->reference[i] = static_cast<float>(out.element_as_double(i));

  std::vector<bench::KernelRow> &rows = bench->rows;
  // What a model runs comes first, the row the others are compared with: the split graph
  // where the optimizer splits the kernel, then the single kernel.
  if (bt.as_in_model_run) {
    auto row = as_in_model_row(bt, bench);
    if (!row.ok()) return make_error(row.error().kind, bt.label + ": " + row.error().message);
    rows.push_back(std::move(row.value()));
    rows.back().is_peer = false;
    rows.back().headline = true;
  }
  const std::string single = bt.as_in_model_run ? "tessel one kernel" : "tessel";
  if (bt.tuned) {
    rows.push_back(kernel_row(bt.label, single + " tuned", *bt.tuned, bench, task));
    rows.back().setup = bt.tuned_source;
  } else {
    rows.push_back(kernel_row(bt.label, single + " (default schedule)", builtin.value(), bench, task));
    rows.back().setup = bt.tuned_source.empty() ? "no record in the database" : bt.tuned_source;
  }
  rows.back().is_peer = false;
  rows.back().headline = !bt.as_in_model_run;

  if (bt.tuned && options.vs.count("default")) {
    rows.push_back(kernel_row(bt.label, "tessel default schedule", builtin.value(), bench, task));
    rows.back().note = "untuned: the compute rules' own schedules";
  }

  if (options.vs.count("adams2019")) {
    AutoscheduleOptions autoschedule;
    autoschedule.parallelism = options.threads;
    autoschedule.halide_target = options.target.halide_target();
    std::fprintf(stderr, "%s: autoscheduling with Adams2019...\n", bt.label.c_str());
    auto scheduled = autoschedule_group_pipeline(*task.graph, task.group, task.signature, autoschedule);
    const std::string name = "Halide Adams2019 (same pipeline)";
    if (!scheduled.ok()) {
      rows.push_back(bench::unavailable_row(bt.label, name, scheduled.error().message));
    } else {
      auto kernel = JitKernel::compile(scheduled->pipeline, options.target);
      if (!kernel.ok()) rows.push_back(bench::unavailable_row(bt.label, name, kernel.error().message));
      else {
        rows.push_back(kernel_row(bt.label, name, kernel.value(), bench, task));
        rows.back().setup = "autoschedule " + seconds_text(scheduled->autoschedule_seconds) + ", JIT " +
                            seconds_text(kernel->compile_seconds());
        rows.back().note = "MachineParams(" + std::to_string(options.threads) + ", 16 MiB, 40)";
      }
    }
  }

  const bool want_vendor = options.vs.count("onednn") || options.vs.count("openblas");
  if (want_vendor) {
    auto problem = peer_problem_for_task(task, bench->inputs, &bench->reference);
    if (!problem.ok()) {
      bench->no_vendor_peer = problem.error().message;
    } else {
      problem->kernel = bt.label;
      bench->peer_storage = problem->storage;  // the rows keep pointers into it
      if (options.vs.count("onednn"))
        for (bench::KernelRow &row : bench::make_onednn_rows(problem.value())) rows.push_back(std::move(row));
      if (options.vs.count("openblas")) {
        std::vector<bench::KernelRow> blas = bench::make_openblas_rows(problem.value(), options.threads);
        if (blas.empty()) bench->no_vendor_peer = "OpenBLAS computes matrix products only, not " + bt.ops;
        for (bench::KernelRow &row : blas) rows.push_back(std::move(row));
      }
    }
  }
  for (bench::KernelRow &row : rows) {
    row.kernel = bt.label;
    if (row.flops == 0) row.flops = bench->flops;
  }
  return bench;
}

}  // namespace tessel
