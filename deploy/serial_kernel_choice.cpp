#include "deploy/serial_kernel_choice.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

namespace tessel {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class Rounds {
 public:
  Rounds(Module &module, const std::vector<Tensor> &inputs) : module_(module), inputs_(inputs) {}

  void use(const std::vector<bool> &serial) {
    for (size_t k = 0; k < serial.size(); ++k) module_.set_kernel_serial(static_cast<int>(k), serial[k]);
  }

  /// `runs` runs as `serial` says: each run's wall time; every call's times go to `per_call`.
  std::vector<double> run(const std::vector<bool> &serial, int runs, std::vector<std::vector<double>> &per_call) {
    use(serial);
    module_.clear_kernel_times();
    std::vector<double> wall;
    for (int r = 0; r < runs; ++r) {
      const auto start = std::chrono::steady_clock::now();
      module_.run(inputs_);
      wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    const std::vector<KernelTimes> times = module_.kernel_times();
    per_call.resize(times.size());
    for (size_t k = 0; k < times.size(); ++k)
      per_call[k].insert(per_call[k].end(), times[k].ms.begin(), times[k].ms.end());
    runs_ += runs;
    return wall;
  }

  int runs() const { return runs_; }

 private:
  Module &module_;
  const std::vector<Tensor> &inputs_;
  int runs_ = 0;
};

}  // namespace

std::vector<bool> keep_serial_in_mix(const std::vector<bool> &mix, const std::vector<double> &pool_ms,
                                     const std::vector<double> &mix_ms) {
  std::vector<bool> kept = mix;
  const size_t timed = std::min({mix.size(), pool_ms.size(), mix_ms.size()});
  for (size_t k = 0; k < mix.size(); ++k) {
    if (!mix[k]) continue;
    if (k >= timed) {
      kept[k] = false;
      continue;
    }
    double gain = pool_ms[k] - mix_ms[k];
    if (k + 1 < timed && !mix[k + 1]) gain -= mix_ms[k + 1] - pool_ms[k + 1];
    if (gain <= 0) kept[k] = false;
  }
  return kept;
}

SerialKernelChoice choose_serial_kernels(Module &module, const std::vector<Tensor> &inputs, double round_ms) {
  const size_t calls = static_cast<size_t>(module.kernel_count());
  const std::vector<bool> parallel(calls, false), serial(calls, true);
  Rounds rounds(module, inputs);
  std::vector<std::vector<double>> unused;
  // Warm-up; then as many runs per round as fill round_ms.
  const std::vector<double> first = rounds.run(parallel, 3, unused);
  const int runs = std::clamp(static_cast<int>(std::ceil(round_ms / std::max(median(first), 1e-3))), 3, 200);

  std::vector<std::vector<double>> on_pool, on_one;
  for (int round = 0; round < 2; ++round) {
    rounds.run(parallel, runs, on_pool);
    rounds.run(serial, runs, on_one);
  }
  SerialKernelChoice choice;
  choice.serial.assign(calls, false);
  for (size_t k = 0; k < calls && k < on_pool.size() && k < on_one.size(); ++k)
    choice.serial[k] = median(on_one[k]) < median(on_pool[k]);

  // A call's time moves with its neighbours' choices (whose cache holds its inputs), so the
  // mix is timed against all-parallel (keep_serial_in_mix).
  std::vector<std::vector<double>> pool_again, in_mix;
  for (int round = 0; round < 2; ++round) {
    rounds.run(parallel, runs, pool_again);
    rounds.run(choice.serial, runs, in_mix);
  }
  std::vector<double> pool_ms, mix_ms;
  for (size_t k = 0; k < calls && k < pool_again.size() && k < in_mix.size(); ++k) {
    pool_ms.push_back(median(pool_again[k]));
    mix_ms.push_back(median(in_mix[k]));
  }
  choice.serial = keep_serial_in_mix(choice.serial, pool_ms, mix_ms);

  // Then whole runs decide.
  const std::vector<std::vector<bool>> candidates = {parallel, choice.serial, serial};
  std::vector<std::vector<double>> wall(candidates.size());
  for (int round = 0; round < 3; ++round)
    for (size_t c = 0; c < candidates.size(); ++c) {
      const std::vector<double> w = rounds.run(candidates[c], runs, unused);
      wall[c].insert(wall[c].end(), w.begin(), w.end());
    }
  choice.parallel_ms = median(wall[0]);
  choice.serial_ms = median(wall[2]);
  size_t best = 0;
  for (size_t c = 1; c < candidates.size(); ++c)
    if (median(wall[c]) < median(wall[best])) best = c;
  choice.serial = candidates[best];
  choice.chosen_ms = median(wall[best]);
  choice.runs = rounds.runs();
  rounds.use(choice.serial);
  return choice;
}

std::string to_text(const SerialKernelChoice &choice) {
  std::ostringstream out;
  out << "serial-kernels ";
  for (bool s : choice.serial) out << (s ? '1' : '0');
  if (choice.serial.empty()) out << '-';
  out << ' ' << choice.parallel_ms << ' ' << choice.serial_ms << ' ' << choice.chosen_ms << ' ' << choice.runs << '\n';
  return out.str();
}

Result<SerialKernelChoice> parse_serial_kernel_choice(const std::string &text) {
  std::istringstream in(text);
  std::string tag, flags;
  SerialKernelChoice choice;
  if (!(in >> tag >> flags >> choice.parallel_ms >> choice.serial_ms >> choice.chosen_ms >> choice.runs) ||
      tag != "serial-kernels")
    return make_error(ErrorKind::InvalidInput, "malformed kernel-thread report '" + text + "'");
  if (flags != "-")
    for (char c : flags) {
      if (c != '0' && c != '1') return make_error(ErrorKind::InvalidInput, "malformed kernel-thread flags '" + flags + "'");
      choice.serial.push_back(c == '1');
    }
  return choice;
}

}  // namespace tessel
