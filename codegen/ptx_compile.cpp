#include <Halide.h>

#include "codegen/ptx_compile.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "codegen/halide_errors.h"
#include "compute/node_pipeline_internal.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

/// A scratch directory removed when it goes out of scope.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() / ("tessel_ptx_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  fs::path file(const std::string &name) const { return path_ / name; }

 private:
  fs::path path_;
};

std::string read_file(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Decodes an LLVM IR string constant body (after c"): printable characters as they are,
/// everything else as \XX.
std::string decode_llvm_string(const std::string &text, size_t start) {
  std::string out;
  for (size_t i = start; i < text.size() && text[i] != '"'; ++i) {
    if (text[i] == '\\' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

}  // namespace

Result<std::string> compile_to_ptx(const NodePipeline &pipeline, const Target &target) {
  install_halide_handlers();
  if (target.kind != Target::Kind::Cuda)
    return make_error(ErrorKind::InvalidInput, "PTX needs a cuda target, not '" + target.to_string() + "'");
  std::vector<Halide::Argument> arguments;
  for (size_t i = 0; i < pipeline.parameters.size(); ++i)
    if (pipeline.parameter_used[i]) arguments.push_back(pipeline.parameters[i]);
  ScratchDir scratch;
  const fs::path ll = scratch.file("kernel.ll");
  try {
    // The host module embeds the PTX as a string constant; no runtime keeps it small.
    const Halide::Target t = Halide::Target(target.halide_target()).with_feature(Halide::Target::NoRuntime);
    Halide::Pipeline p = pipeline.pipeline;
    p.compile_to({{Halide::OutputFileType::llvm_assembly, ll.string()}}, arguments, "tessel_gpu_kernel", t);
  } catch (const Halide::Error &e) {
    return make_error(ErrorKind::Internal, std::string("CUDA code generation failed: ") + e.what());
  }
  const std::string text = read_file(ll);
  const size_t global = text.find("gpu_source_kernels");
  if (global == std::string::npos)
    return make_error(ErrorKind::InvalidInput, "the pipeline has no GPU kernel (every stage runs on the host)");
  const size_t body = text.find("c\"", global);
  if (body == std::string::npos) return make_error(ErrorKind::Internal, "Halide's output holds no PTX string");
  std::string ptx = decode_llvm_string(text, body + 2);
  if (ptx.find(".entry") == std::string::npos)
    return make_error(ErrorKind::Internal, "the PTX module has no kernel entry");
  return ptx;
}

std::vector<std::string> ptx_kernel_names(const std::string &ptx) {
  std::vector<std::string> names;
  static const std::regex entry(R"(\.entry\s+([A-Za-z_$][A-Za-z0-9_$]*))");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), entry); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  return names;
}

std::optional<std::string> find_ptxas() {
  std::vector<std::string> candidates;
  if (const char *home = std::getenv("CUDA_HOME")) candidates.push_back(std::string(home) + "/bin/ptxas");
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  if (const char *path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty()) candidates.push_back(dir + "/ptxas");
  }
  for (const std::string &c : candidates)
    if (access(c.c_str(), X_OK) == 0) return c;
  return std::nullopt;
}

Result<PtxasReport> assemble_ptx(const std::string &ptxas, const std::string &ptx, const std::string &arch) {
  if (arch.rfind("sm_", 0) != 0)
    return make_error(ErrorKind::InvalidInput, "bad architecture '" + arch + "' (expected sm_XY)");
  ScratchDir scratch;
  const fs::path in = scratch.file("kernel.ptx"), out = scratch.file("kernel.cubin"), log = scratch.file("ptxas.log");
  std::ofstream(in, std::ios::binary) << ptx;
  const std::string command = "'" + ptxas + "' -arch=" + arch + " -v '" + in.string() + "' -o '" + out.string() +
                              "' > '" + log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  PtxasReport report;
  report.arch = arch;
  report.log = read_file(log);
  if (status != 0) return make_error("ptxas -arch=" + arch + " failed: " + report.log);
  // ptxas -v prints, per kernel: "Compiling entry function 'NAME' for 'sm_90'", then
  // "N bytes stack frame, N bytes spill stores, N bytes spill loads" and
  // "Used N registers, ... N bytes smem ...".
  static const std::regex function(R"(Compiling entry function '([^']+)')");
  static const std::regex spills(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::istringstream lines(report.log);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, function)) {
      report.kernels.push_back(PtxasKernelReport{m[1]});
      continue;
    }
    if (report.kernels.empty()) continue;
    PtxasKernelReport &k = report.kernels.back();
    if (std::regex_search(line, m, spills)) {
      k.spill_store_bytes = std::stoll(m[1]);
      k.spill_load_bytes = std::stoll(m[2]);
    }
    if (std::regex_search(line, m, used)) k.registers = std::stoi(m[1]);
    if (std::regex_search(line, m, smem)) k.shared_bytes = std::stoll(m[1]);
  }
  return report;
}

}  // namespace tessel
