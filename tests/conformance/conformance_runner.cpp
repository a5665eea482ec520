// Runs the ONNX backend tests in libonnx-testdata folders: every test whose ops tessel
// supports is executed in its own child process (a crash or hang costs one test), and
// outputs are compared with the stored ones at the ONNX backend defaults (rtol 1e-3,
// atol 1e-7, NaN equals NaN). Prints passed / failed / unsupported per folder and fails
// when passes drop below the committed floor or any test crashes. With --passes, each
// model first goes through the graph optimizer's default passes, so a pass that breaks a
// model shows up as a drop below the same floors.
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "executor/constant_evaluator.h"
#include "executor/graph_executor.h"
#include "graph/infer/shape_inference.h"
#include "graph/onnx/onnx_import.h"
#include "graph/onnx/tensor_proto.h"
#include "graph/passes/pass_manager.h"
#include "tests/conformance/conformance_data.h"

using namespace tessel;

namespace {

enum Outcome { kPass = 0, kFail = 1, kUnsupported = 2, kCrash = 3, kTimeout = 4 };

using tessel::testing::file_exists;
using tessel::testing::list_dir;

/// Compares one output; returns an empty string when it matches.
std::string compare(const Tensor &got, const Tensor &want, const std::string &label) {
  if (got.dtype() != want.dtype())
    return label + ": dtype " + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  if (got.shape() != want.shape())
    return label + ": shape " + shape_to_string(got.shape()) + ", expected " + shape_to_string(want.shape());
  const bool exact = !dtype_is_float(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (exact) {
      if (got.element_as_int64(i) != want.element_as_int64(i))
        return label + ": element " + std::to_string(i) + " is " + std::to_string(got.element_as_int64(i)) +
               ", expected " + std::to_string(want.element_as_int64(i));
      continue;
    }
    const double g = got.element_as_double(i), w = want.element_as_double(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w)))
      return label + ": element " + std::to_string(i) + " is " + std::to_string(g) + ", expected " +
             std::to_string(w);
  }
  return "";
}

/// The data files of ONNX 1.12's bfloat16 tests hold the 16-bit patterns as uint16
/// tensors; read against a bfloat16 declaration, they are those bfloat16 values.
Tensor as_declared(const Tensor &t, DType declared) {
  if (declared != DType::BFloat16 || t.dtype() != DType::UInt16) return t;
  Tensor bits(DType::BFloat16, t.shape());
  if (t.bytes()) std::memcpy(bits.data(), t.data(), t.bytes());
  return bits;
}

/// Runs one test in this (child) process; writes a one-line reason to `reason`.
Outcome run_test(const std::string &dir, bool optimize, std::string &reason) {
  auto graph = import_onnx_file(dir + "/model.onnx");
  if (!graph.ok()) {
    reason = graph.error().message;
    const bool unsupported = reason.find("not supported") != std::string::npos ||
                             reason.find("unsupported") != std::string::npos;
    return unsupported ? kUnsupported : kFail;
  }
  if (auto s = check_supported_ops(graph.value()); !s.ok()) {
    reason = s.error().message;
    return kUnsupported;
  }
  if (optimize) {
    auto optimized = run_passes(std::move(graph.value()), default_passes(make_constant_evaluator()));
    if (!optimized.ok()) {
      reason = optimized.error().message;
      return kFail;
    }
    graph = std::move(optimized);
  }
  auto shared = std::make_shared<const Graph>(graph.value());
  GraphExecutor executor(shared);
  int data_sets = 0;
  for (const std::string &set : list_dir(dir, "test_data_set_")) {
    const std::string set_dir = dir + "/" + set;
    std::vector<Tensor> inputs, expected;
    for (int i = 0; file_exists(set_dir + "/input_" + std::to_string(i) + ".pb"); ++i) {
      auto t = read_tensor_pb_file(set_dir + "/input_" + std::to_string(i) + ".pb");
      if (!t.ok()) { reason = t.error().message; return kUnsupported; }
      const std::vector<int> &declared = shared->inputs;
      inputs.push_back(i < static_cast<int>(declared.size()) ? as_declared(t.value(), shared->tensors[declared[i]].type.dtype)
                                                             : t.value());
    }
    for (int i = 0; file_exists(set_dir + "/output_" + std::to_string(i) + ".pb"); ++i) {
      auto t = read_tensor_pb_file(set_dir + "/output_" + std::to_string(i) + ".pb");
      if (!t.ok()) { reason = t.error().message; return kUnsupported; }
      const std::vector<int> &declared = shared->outputs;
      expected.push_back(i < static_cast<int>(declared.size())
                             ? as_declared(t.value(), shared->tensors[declared[i]].type.dtype)
                             : t.value());
    }
    auto outputs = executor.run(inputs);
    if (!outputs.ok()) {
      reason = set + ": " + outputs.error().message;
      // Types tessel does not support (bfloat16, string) are unsupported, not failures.
      return reason.find("unsupported") != std::string::npos ? kUnsupported : kFail;
    }
    if (outputs->size() != expected.size()) {
      reason = set + ": " + std::to_string(outputs->size()) + " outputs, expected " + std::to_string(expected.size());
      return kFail;
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      std::string diff = compare((*outputs)[i], expected[i], set + " output " + std::to_string(i));
      if (!diff.empty()) { reason = diff; return kFail; }
    }
    ++data_sets;
  }
  if (data_sets == 0) { reason = "no test data"; return kUnsupported; }
  return kPass;
}

struct Child {
  pid_t pid;
  int pipe_fd;
  std::string name;
  std::string output;
  std::chrono::steady_clock::time_point start;
};

}  // namespace

int main(int argc, char **argv) {
  std::string base = "/usr/share/libonnx-testdata/data", floor_file, filter;
  std::vector<std::string> folders;
  int jobs = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  int timeout_s = 300;
  bool verbose = false, optimize = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--floor-file" && i + 1 < argc) floor_file = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--jobs" && i + 1 < argc) jobs = std::stoi(argv[++i]);
    else if (a == "--base" && i + 1 < argc) base = argv[++i];
    else if (a == "--timeout" && i + 1 < argc) timeout_s = std::stoi(argv[++i]);
    else if (a == "--verbose" || a == "-v") verbose = true;
    else if (a == "--passes") optimize = true;
    else folders.push_back(a);
  }
  if (folders.empty()) folders = {"node", "pytorch-converted", "pytorch-operator", "simple"};
  std::map<std::string, int> floors;
  if (!floor_file.empty()) {
    std::ifstream in(floor_file);
    if (!in) { std::fprintf(stderr, "cannot open floor file %s\n", floor_file.c_str()); return 2; }
    std::string folder;
    int floor;
    while (in >> folder >> floor) floors[folder] = floor;
  }

  bool ok = true;
  for (const std::string &folder : folders) {
    const std::vector<std::string> tests = list_dir(base + "/" + folder);
    if (tests.empty()) { std::fprintf(stderr, "no tests in %s/%s\n", base.c_str(), folder.c_str()); ok = false; continue; }
    int counts[5] = {0, 0, 0, 0, 0};
    std::vector<Child> running;
    size_t next = 0;
    auto reap = [&](Child &c, int status, bool timed_out) {
      Outcome o;
      if (timed_out) o = kTimeout;
      else if (WIFEXITED(status) && WEXITSTATUS(status) <= kUnsupported) o = static_cast<Outcome>(WEXITSTATUS(status));
      else o = kCrash;
      counts[o]++;
      static const char *names[] = {"PASS", "FAIL", "UNSUPPORTED", "CRASH", "TIMEOUT"};
      if (o == kFail || o == kCrash || o == kTimeout || (verbose && o == kUnsupported) || (verbose && o == kPass))
        std::printf("%-12s %s/%s  %s\n", names[o], folder.c_str(), c.name.c_str(), c.output.c_str());
    };
    while (next < tests.size() || !running.empty()) {
      while (next < tests.size() && static_cast<int>(running.size()) < jobs) {
        const std::string name = tests[next++];
        if (!filter.empty() && name.find(filter) == std::string::npos) continue;
        int fds[2];
        if (pipe(fds) != 0) { std::perror("pipe"); return 2; }
        std::fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
          close(fds[0]);
          std::string reason;
          Outcome o = kFail;
          try {
            o = run_test(base + "/" + folder + "/" + name, optimize, reason);
          } catch (const std::exception &e) {
            reason = std::string("uncaught exception: ") + e.what();
          }
          reason = reason.substr(0, reason.find('\n')).substr(0, 400);
          if (write(fds[1], reason.data(), reason.size()) < 0) {}
          close(fds[1]);
          _exit(o);
        }
        close(fds[1]);
        running.push_back({pid, fds[0], name, "", std::chrono::steady_clock::now()});
      }
      // Drain pipes, reap finished children, kill ones past the timeout.
      for (size_t i = 0; i < running.size();) {
        Child &c = running[i];
        char buf[512];
        pollfd p{c.pipe_fd, POLLIN, 0};
        while (poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
          ssize_t n = read(c.pipe_fd, buf, sizeof(buf));
          if (n <= 0) break;
          c.output.append(buf, static_cast<size_t>(n));
        }
        int status = 0;
        pid_t r = waitpid(c.pid, &status, WNOHANG);
        const bool late = std::chrono::steady_clock::now() - c.start > std::chrono::seconds(timeout_s);
        if (r == 0 && late) {
          kill(c.pid, SIGKILL);
          waitpid(c.pid, &status, 0);
        }
        if (r != 0 || late) {
          ssize_t n;
          while ((n = read(c.pipe_fd, buf, sizeof(buf))) > 0) c.output.append(buf, static_cast<size_t>(n));
          close(c.pipe_fd);
          reap(c, status, r == 0 && late);
          running.erase(running.begin() + static_cast<long>(i));
        } else {
          ++i;
        }
      }
      usleep(2000);
    }
    const int floor = floors.count(folder) ? floors[folder] : -1;
    std::printf("%s: passed %d / failed %d / unsupported %d / crashed %d / timed out %d  (%zu tests%s)\n",
                folder.c_str(), counts[kPass], counts[kFail], counts[kUnsupported], counts[kCrash], counts[kTimeout],
                tests.size(), floor >= 0 ? (", floor " + std::to_string(floor)).c_str() : "");
    if (counts[kCrash] > 0) ok = false;
    if (floor >= 0 && counts[kPass] < floor) {
      std::printf("%s: %d passes is below the floor of %d\n", folder.c_str(), counts[kPass], floor);
      ok = false;
    }
  }
  return ok ? 0 : 1;
}
