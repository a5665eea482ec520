// The compile pass that runs the staged artifact to choose, by measurement inside the model,
// which kernel calls run on one thread (deploy/serial_kernel_choice.h), and writes the
// choice into plan.txt. The artifact runs in a forked child: a kernel that crashes or hangs
// here costs the choice (a warning), not the compile.
#include <cstdio>
#include <exception>

#include "base/child_process.h"
#include "base/spin_pool.h"
#include "compiler/artifact_build.h"
#include "deploy/artifact_inputs.h"
#include "deploy/serial_kernel_choice.h"

namespace tessel {

namespace {

constexpr double kChildSeconds = 300;
constexpr int64_t kMaxInputBytes = int64_t{1} << 31;

/// In the child: load, feed random inputs, measure; the report, or "error <why>".
std::string measure(const std::string &directory, int threads) {
  try {
    ModuleOptions options;
    options.profile = true;
    options.threads = threads;
    Module module = Module::load(directory, options);
    if (spin_pool_threads() < 2) return to_text(SerialKernelChoice{});  // nothing to choose
    std::vector<std::string> notes;
    auto inputs = artifact_inputs(module, {}, 1, kMaxInputBytes, notes);
    if (!inputs.ok()) return "error " + inputs.error().message;
    return to_text(choose_serial_kernels(module, inputs.value()));
  } catch (const std::exception &e) {
    return std::string("error ") + e.what();
  }
}

}  // namespace

Result<void> choose_kernel_threads(ArtifactBuild &build) {
  if (!build.options.choose_kernel_threads || build.target.kind != Target::Kind::Host ||
      build.summary.kernel_steps == 0)
    return {};
  const std::string directory = build.staging.file("");
  const int threads = build.options.threads;
  auto child = run_in_child([&]() { return measure(directory, threads); }, kChildSeconds);
  if (!child.ok()) return child.error().with_context("choosing kernel threads");
  std::string why;
  Result<SerialKernelChoice> choice = make_error(ErrorKind::Internal, "");
  if (!child->exit.finished()) why = "the trial run " + child->exit.describe();
  else if (child->output.rfind("error ", 0) == 0) why = child->output.substr(6);
  else if (choice = parse_serial_kernel_choice(child->output); !choice.ok()) why = choice.error().message;
  if (!why.empty()) {
    const std::string warning = "every kernel call runs on the pool: measuring which are faster on one thread "
                                "failed (" + why + ")";
    build.summary.warnings.push_back(warning);
    if (build.options.log) build.options.log("warning: " + warning);
    return {};
  }
  if (choice->serial.empty()) return {};  // one thread here: nothing was measured
  if (choice->serial.size() != static_cast<size_t>(build.summary.kernel_steps))
    return make_error(ErrorKind::Internal, "choosing kernel threads: " + std::to_string(choice->serial.size()) +
                                               " flags for " + std::to_string(build.summary.kernel_steps) + " kernel calls");
  size_t call = 0;
  for (deploy::PlanStep &step : build.execution_plan.steps)
    if (auto *kernel = std::get_if<deploy::KernelStep>(&step)) {
      kernel->serial = choice->serial[call++];
      build.summary.serial_kernel_steps += kernel->serial;
    }
  char line[256];
  std::snprintf(line, sizeof(line),
                "%d of %d kernel calls run on one thread (measured in the model, %d runs: median %.3f ms with every "
                "kernel on the pool, %.3f all on one thread, %.3f as chosen)",
                build.summary.serial_kernel_steps, build.summary.kernel_steps, choice->runs, choice->parallel_ms,
                choice->serial_ms, choice->chosen_ms);
  build.summary.kernel_threads = line;
  if (build.summary.serial_kernel_steps == 0) return {};
  TESSEL_TRY_VOID(write_plan(build));
  return write_manifest(build);
}

}  // namespace tessel
