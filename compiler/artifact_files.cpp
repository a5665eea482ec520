// The artifact compiler's last passes: the files of the artifact directory
// (deploy/ARTIFACT.md), written into the staging directory.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "base/version.h"
#include "codegen/link_shared_library.h"
#include "compiler/artifact_build.h"

namespace tessel {

namespace {

/// GCC's __builtin_cpu_supports names for the ISA features in a Halide x86 target string.
std::vector<std::string> required_cpu_features(const std::string &halide_target) {
  static const std::map<std::string, std::vector<std::string>> features = {
      {"sse41", {"sse4.1"}},
      {"avx", {"avx"}},
      {"avx2", {"avx2"}},
      {"fma", {"fma"}},
      {"f16c", {"f16c"}},
      {"avx512", {"avx512f", "avx512cd"}},
      {"avx512_knl", {"avx512f", "avx512cd", "avx512pf", "avx512er"}},
      {"avx512_skylake", {"avx512f", "avx512vl", "avx512bw", "avx512dq"}},
      {"avx512_cannonlake", {"avx512ifma", "avx512vbmi"}},
      {"avx512_sapphirerapids", {"avx512bf16", "avx512vnni"}},
  };
  std::set<std::string> out;
  std::stringstream in(halide_target);
  std::string token;
  while (std::getline(in, token, '-'))
    if (auto it = features.find(token); it != features.end()) out.insert(it->second.begin(), it->second.end());
  return {out.begin(), out.end()};
}

std::string file_fnv(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return fnv1a64_hex(bytes.data(), bytes.size());
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

Result<void> write_file(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return make_error(ErrorKind::Io, "cannot write " + path);
  return {};
}

deploy::ArtifactFile file_entry(const std::string &name, const std::string &bytes) {
  return {name, static_cast<int64_t>(bytes.size()), fnv1a64_hex(bytes.data(), bytes.size())};
}

}  // namespace

void warn_untuned_tasks(ArtifactBuild &build) {
  if (build.options.schedules)
    for (const auto &[ops, flops] : build.untuned) {
      char share[64];
      std::snprintf(share, sizeof(share), "%.1f%%", build.total_flops ? 100.0 * flops / build.total_flops : 0.0);
      build.summary.warnings.push_back("no tuning record for " + ops + " (" + share + " of the model's FLOPs): default schedule");
    }
  if (build.options.log)
    for (const std::string &w : build.summary.warnings) build.options.log("warning: " + w);
}

Result<void> link_kernels(ArtifactBuild &build) {
  const std::string runtime_object = build.staging.file("objects/halide_runtime.o");
  if (auto rt = compile_runtime_object(build.target, runtime_object); !rt.ok()) return rt.error();
  std::vector<std::string> objects = build.object_paths;
  objects.push_back(runtime_object);
  return link_shared_library(objects, build.staging.file("kernels.so"), build.options.linker,
                             build.staging.file("objects/link.log"));
}

Result<void> write_plan(ArtifactBuild &build) {
  const std::string plan_text = deploy::to_text(build.execution_plan);
  if (auto ok = write_file(build.staging.file("plan.txt"), plan_text); !ok.ok()) return ok.error();
  build.manifest.plan = file_entry("plan.txt", plan_text);
  return {};
}

Result<void> write_plan_and_weights(ArtifactBuild &build) {
  build.execution_plan = build.plan.finish();
  TESSEL_TRY_VOID(write_plan(build));
  if (auto ok = write_file(build.staging.file("weights.bin"), build.plan.weights()); !ok.ok()) return ok.error();
  build.manifest.weights = file_entry("weights.bin", build.plan.weights());
  if (!build.host_program.nodes.empty()) {
    build.host_program.opset = build.graph.opset;
    const std::string host_text = deploy::to_json(build.host_program);
    if (auto ok = write_file(build.staging.file("host.json"), host_text); !ok.ok()) return ok.error();
    build.manifest.host = file_entry("host.json", host_text);
  }
  return {};
}

Result<void> write_manifest(ArtifactBuild &build) {
  deploy::ArtifactManifest &manifest = build.manifest;
  const Graph &g = build.graph;
  manifest.tessel_version = TESSEL_VERSION;
  manifest.target = build.target.to_string();
  manifest.halide_target = build.target.halide_target();
  manifest.required_cpu_features = required_cpu_features(manifest.halide_target);
  manifest.model_path = build.options.model_path;
  manifest.model_fnv1a64 = build.options.model_path.empty() ? "" : file_fnv(build.options.model_path);
  manifest.created_utc = utc_now();
  manifest.arena_bytes = build.plan.arena_bytes();
  for (auto [list, out] : {std::make_pair(&g.inputs, &manifest.inputs), std::make_pair(&g.outputs, &manifest.outputs)}) {
    out->clear();  // written again after choose_kernel_threads
    for (int t : *list) out->push_back({g.tensors[t].name, g.tensors[t].type.dtype, g.tensors[t].type.shape});
  }
  const std::string library = build.staging.file("kernels.so");
  manifest.kernels = {"kernels.so", static_cast<int64_t>(std::filesystem::file_size(library)), file_fnv(library)};
  return write_file(build.staging.file("manifest.json"), deploy::to_json(manifest));
}

}  // namespace tessel
