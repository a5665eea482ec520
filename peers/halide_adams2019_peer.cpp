#include "peers/halide_adams2019_peer.h"

#include <Halide.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

namespace tessel::bench {

namespace {

using Clock = std::chrono::steady_clock;

const char *const kRowName = "Halide Adams2019 autoscheduler";

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The plugin registers "Adams2019" when it is loaded, so it must be loaded exactly once.
void load_plugin_once(const std::string &path) {
  static std::string loaded;
  if (loaded == path) return;
  Halide::load_plugin(path);
  loaded = path;
}

struct HalideKernel {
  Halide::Pipeline pipeline;
  Halide::Target target;
  std::vector<Halide::ImageParam> inputs;  // bound to the problem's buffers; kept with the pipeline
  std::vector<float> output;
  Halide::Buffer<float> output_buffer;
};

// An input as a generator would declare it: an ImageParam with estimates, bound to `data`.
// (Adams2019 schedules inputs given as concrete Buffers much worse: 2 vs ~70 GFLOP/s on the matmul.)
Halide::ImageParam bound_input(const char *name, const float *data, const std::vector<int> &sizes) {
  Halide::ImageParam param(Halide::Float(32), int(sizes.size()), name);
  // The buffer aliases the problem's data, which outlives every row; Halide only reads it.
  param.set(Halide::Buffer<float>(const_cast<float *>(data), sizes));
  Halide::Region estimates;
  for (int extent : sizes) estimates.emplace_back(0, extent);
  param.set_estimates(estimates);
  return param;
}

std::string format_seconds(double s) {
  std::ostringstream text;
  text.precision(s < 10 ? 2 : 3);
  text << s << " s";
  return text.str();
}

// Autoschedules `output` (estimates already set), compiles it and wraps it as a row.
KernelRow schedule_and_wrap(const std::string &kernel_title, const std::string &what, Halide::Func output,
                            std::vector<Halide::ImageParam> inputs, std::vector<int> output_sizes,
                            const std::vector<float> *reference, double flops, const Adams2019Options &options) {
  const std::string name = kRowName;
  try {
    load_plugin_once(options.plugin_path);
    auto kernel = std::make_shared<HalideKernel>();
    kernel->target =
        Halide::Target(options.halide_target.empty() ? adams2019_default_target() : options.halide_target);
    kernel->pipeline = Halide::Pipeline(output);
    kernel->inputs = std::move(inputs);

    std::fprintf(stderr, "autoscheduling %s with Adams2019 (may take a while)...\n", what.c_str());
    auto start = Clock::now();
    const Halide::AutoSchedulerResults results = kernel->pipeline.auto_schedule(
        "Adams2019", kernel->target, Halide::MachineParams(options.threads, 16 * 1024 * 1024, 40));
    const double autoschedule_seconds = seconds_since(start);

    start = Clock::now();
    kernel->pipeline.compile_jit(kernel->target);
    const double jit_seconds = seconds_since(start);

    if (!options.schedule_dir.empty()) {
      std::ofstream(options.schedule_dir + "/adams2019_" + what + ".schedule.h") << results.schedule_source;
    }

    size_t count = 1;
    for (int s : output_sizes) count *= size_t(s);
    kernel->output.resize(count);
    kernel->output_buffer = Halide::Buffer<float>(kernel->output.data(), output_sizes);

    KernelRow row;
    row.kernel = kernel_title;
    row.name = name;
    row.flops = flops;
    // Passing the compiled target again keeps realize from recompiling for the environment's.
    row.run = [kernel] { kernel->pipeline.realize(kernel->output_buffer, kernel->target); };
    row.check_error = [kernel, reference] { return max_relative_error(kernel->output, *reference); };
    row.setup = "autoschedule " + format_seconds(autoschedule_seconds) + ", JIT " + format_seconds(jit_seconds);
    // The plugin reads these two from the environment; say which search the row measured.
    const char *beam = std::getenv("HL_BEAM_SIZE");
    const char *weights = std::getenv("HL_WEIGHTS_DIR");
    row.note = std::string("beam size ") + (beam && *beam ? beam : "32 (default)") + ", " +
               (weights && *weights ? std::string("weights from ") + weights : "built-in weights");
    return row;
  } catch (const std::exception &e) {
    return unavailable_row(kernel_title, name, std::string("Halide error: ") + e.what());
  }
}

}  // namespace

std::string adams2019_default_target() {
  return Halide::get_host_target().without_feature(Halide::Target::AVX512_SapphireRapids).to_string();
}

// Both algorithms accumulate in an intermediate Func and copy it to a pure output, as Halide's own
// apps write reductions: Adams2019 can then compute the accumulator per output tile (in registers);
// with the update stage on the output itself it finds no register blocking (~5 GFLOP/s).

KernelRow make_adams2019_matmul(const MatmulProblem &problem, const Adams2019Options &options) {
  try {
    // Halide lists dimensions innermost first: a(kk, i) is A[i][kk], b(j, kk) is B[kk][j].
    Halide::ImageParam a = bound_input("a", problem.a.data(), {problem.k, problem.m});
    Halide::ImageParam b = bound_input("b", problem.b.data(), {problem.n, problem.k});
    Halide::Var j("j"), i("i");
    Halide::RDom r(0, problem.k, "r");
    Halide::Func dot("dot"), c("matmul");
    dot(j, i) = 0.0f;
    dot(j, i) += a(r, i) * b(j, r);
    c(j, i) = dot(j, i);
    c.set_estimate(j, 0, problem.n).set_estimate(i, 0, problem.m);
    return schedule_and_wrap(problem.title(), "matmul", c, {a, b}, {problem.n, problem.m}, &problem.reference,
                             problem.flops(), options);
  } catch (const std::exception &e) {
    return unavailable_row(problem.title(), kRowName, std::string("Halide error: ") + e.what());
  }
}

KernelRow make_adams2019_conv(const ConvProblem &problem, const Adams2019Options &options) {
  try {
    // NCHW is (x, y, c, n) innermost first; OIHW weights are (s, r, c, k).
    Halide::ImageParam input = bound_input("input", problem.input.data(),
                                           {problem.width, problem.height, problem.in_channels, problem.batch});
    Halide::ImageParam weight =
        bound_input("weight", problem.weight.data(),
                    {problem.kernel_w, problem.kernel_h, problem.in_channels, problem.out_channels});
    Halide::Func padded = Halide::BoundaryConditions::constant_exterior(input, 0.0f);
    Halide::Var x("x"), y("y"), k("k"), n("n");
    Halide::RDom r(0, problem.kernel_w, 0, problem.kernel_h, 0, problem.in_channels, "r");
    Halide::Func sum("conv_sum"), conv("conv");
    sum(x, y, k, n) = 0.0f;
    sum(x, y, k, n) += weight(r.x, r.y, r.z, k) * padded(x * problem.stride + r.x - problem.pad,
                                                         y * problem.stride + r.y - problem.pad, r.z, n);
    conv(x, y, k, n) = sum(x, y, k, n);
    conv.set_estimate(x, 0, problem.out_width())
        .set_estimate(y, 0, problem.out_height())
        .set_estimate(k, 0, problem.out_channels)
        .set_estimate(n, 0, problem.batch);
    return schedule_and_wrap(problem.title(), "conv", conv, {input, weight},
                             {problem.out_width(), problem.out_height(), problem.out_channels, problem.batch},
                             &problem.reference, problem.flops(), options);
  } catch (const std::exception &e) {
    return unavailable_row(problem.title(), kRowName, std::string("Halide error: ") + e.what());
  }
}

}  // namespace tessel::bench
