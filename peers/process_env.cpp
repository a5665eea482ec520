#include "peers/process_env.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace tessel::bench {

static const char *const kThreadVariables[] = {"OMP_NUM_THREADS", "HL_NUM_THREADS", "OPENBLAS_NUM_THREADS"};
static const char *const kReexecGuard = "TESSEL_BENCH_ENV_READY";

static std::string env_or_empty(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

void ensure_bench_environment(char **argv, int threads, const std::string &openblas_coretype) {
  std::vector<std::pair<std::string, std::string>> wanted;
  const std::string count = std::to_string(threads);
  for (const char *name : kThreadVariables) wanted.emplace_back(name, count);
  wanted.emplace_back("OPENBLAS_CORETYPE", openblas_coretype);

  bool differs = false;
  for (const auto &[name, value] : wanted) differs = differs || env_or_empty(name.c_str()) != value;
  if (!differs) return;
  if (!env_or_empty(kReexecGuard).empty()) {
    std::fprintf(stderr, "warning: benchmark environment still differs after re-exec; continuing\n");
    return;
  }
  // An empty value means "unset": OpenBLAS complains about an empty OPENBLAS_CORETYPE.
  for (const auto &[name, value] : wanted)
    if (value.empty()) unsetenv(name.c_str());
    else setenv(name.c_str(), value.c_str(), 1);
  setenv(kReexecGuard, "1", 1);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr,
               "warning: could not re-exec with OPENBLAS_CORETYPE/OMP_NUM_THREADS set (%s); "
               "OpenBLAS and oneDNN may run with the wrong kernels or thread count\n",
               std::strerror(errno));
}

std::vector<std::string> bench_environment_summary() {
  std::vector<std::string> lines;
  for (const char *name :
       {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "HL_NUM_THREADS"}) {
    const std::string value = env_or_empty(name);
    lines.push_back(std::string(name) + "=" + (value.empty() ? "(unset)" : value));
  }
  return lines;
}

}  // namespace tessel::bench
