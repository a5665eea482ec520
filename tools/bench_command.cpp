// `tessel bench matmul 1024x1024x1024`: one kernel under the built-in schedule, the sketch
// default and random samples of its schedule space, in GFLOP/s.
#include <cstdio>
#include <cstdlib>

#include "graph/fuse.h"
#include "tools/commands.h"
#include "tools/json_writer.h"
#include "tuner/benchmark_problems.h"
#include "tuner/schedule_benchmark.h"

namespace tessel {

int bench_command(const BenchOptions &options) {
  if (options.threads > 0) setenv("HL_NUM_THREADS", std::to_string(options.threads).c_str(), 1);
  auto target = parse_target(options.target);
  if (!target.ok()) return fail(target.error().message);
  if (target->kind != Target::Kind::Host) return fail("`tessel bench` measures on the host CPU; use --target llvm");
  auto graph = make_benchmark_graph(options.kind, options.spec);
  if (!graph.ok()) return fail(graph.error().message);
  auto task = make_task_instance(graph.value(), partition_graph(*graph.value()).front());
  if (!task.ok()) return fail(task.error().message);
  ScheduleBenchmarkOptions bench;
  bench.samples = options.samples;
  bench.seed = options.seed;
  if (!options.json)
    std::fprintf(stderr, "compiling and timing the built-in schedule, the sketch default and %d samples...\n",
                 options.samples);
  auto result = benchmark_schedules(task.value(), target.value(), bench);
  if (!result.ok()) return fail(result.error().message);
  const ScheduleBenchmarkResult &r = result.value();
  auto gflops = [&](const MeasuredSchedule &m) { return m.timing.median > 0 ? r.flops / m.timing.median / 1e9 : 0.0; };
  const MeasuredSchedule *best = r.best();
  if (options.json) {
    JsonWriter json;
    json.begin_object();
    json.key("kernel").value(options.kind + " " + options.spec);
    json.key("flops").value(r.flops);
    json.key("builtin_gflops").value(gflops(r.builtin));
    json.key("sketch_default_gflops").value(gflops(r.sketch_default));
    json.key("best_sample_gflops").value(best ? gflops(*best) : 0.0);
    json.key("samples_measured").value(static_cast<int64_t>(r.samples.size()));
    json.key("samples_failed").value(static_cast<int64_t>(r.failed));
    json.key("samples_wrong").value(static_cast<int64_t>(r.wrong));
    json.key("median_compile_seconds").value(r.median_compile_seconds());
    json.key("best_schedule").value(best ? best->schedule_text : "");
    json.end_object();
    std::printf("%s\n", json.str().c_str());
    return 0;
  }
  std::printf("%s %s: %.3f GFLOP per run\n", options.kind.c_str(), options.spec.c_str(), r.flops / 1e9);
  std::printf("  %-28s %9.1f GFLOP/s  (median %.3f ms)\n", "built-in schedule", gflops(r.builtin),
              r.builtin.timing.median * 1e3);
  std::printf("  %-28s %9.1f GFLOP/s  (median %.3f ms)\n", "sketch default", gflops(r.sketch_default),
              r.sketch_default.timing.median * 1e3);
  if (best)
    std::printf("  %-28s %9.1f GFLOP/s  (median %.3f ms)\n", ("best of " + std::to_string(r.samples.size()) + " samples").c_str(),
                gflops(*best), best->timing.median * 1e3);
  std::printf("  samples: %zu measured, %d failed to build or run, %d wrong; median compile %.3f s\n", r.samples.size(),
              r.failed, r.wrong, r.median_compile_seconds());
  if (best) std::printf("\nbest schedule:\n%s", best->schedule_text.c_str());
  return r.wrong == 0 ? 0 : 1;
}

}  // namespace tessel
