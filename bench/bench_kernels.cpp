// tessel_bench_kernels: GFLOP/s of matmul 1024^3 and the ResNet-18 3x3 conv for each row (peers:
// OpenBLAS, oneDNN, Halide's Adams2019 autoscheduler; tessel's own schedules are rows too), as
// markdown tables. See bench/README.md for how to run it and what the columns mean.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/tessel_rows.h"
#include "peers/fma_peak.h"
#include "peers/halide_adams2019_peer.h"
#include "peers/kernel_row.h"
#include "peers/onednn_peer.h"
#include "peers/openblas_peer.h"
#include "peers/problems.h"
#include "peers/process_env.h"
#include "peers/report.h"
#include "peers/timing.h"

using namespace tessel::bench;

namespace {

struct Options {
  std::string out_file;
  std::string schedule_dir;
  std::string openblas_coretype = "SkylakeX";  // see DESIGN.md: 0.3.21 misdetects Zen 5
  int threads = 2;
  bool matmul = true, conv = true;
  bool halide = true;
  int samples = 64;  // random schedules tessel measures for its "best of N" row
  std::string db_path;  // non-empty: a "tessel tuned" row from (and tuning into) this database
  int trials = 1000;
  TimingOptions timing;
};

const char *const kUsage =
    "usage: tessel_bench_kernels [--out FILE] [--kernels matmul,conv] [--threads N] [--rounds N]\n"
    "                            [--openblas-coretype NAME (default SkylakeX)]\n"
    "                            [--min-time S] [--min-runs N] [--gap S] [--skip-halide] [--schedule-dir DIR]\n"
    "                            [--samples N (tessel's random schedules, default 64; 0: no such row)]\n"
    "                            [--db FILE [--trials N (default 1000)]]  (a tuned row; tunes into FILE until it\n"
    "                            holds N searched records per kernel)\n";

bool parse_options(int argc, char **argv, Options &options, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        error = arg + " needs a value";
        return nullptr;
      }
      return argv[++i];
    };
    auto number = [&](double &out) {
      const char *text = value();
      if (!text) return false;
      char *end = nullptr;
      out = std::strtod(text, &end);
      if (*text == '\0' || *end != '\0' || !(out >= 0)) {
        error = arg + ": '" + text + "' is not a non-negative number";
        return false;
      }
      return true;
    };
    auto fail = [&](const std::string &message) {
      error = message;
      return false;
    };
    double n = 0;
    if (arg == "--out") {
      const char *text = value();
      if (!text) return false;
      options.out_file = text;
    } else if (arg == "--schedule-dir") {
      const char *text = value();
      if (!text) return false;
      options.schedule_dir = text;
    } else if (arg == "--openblas-coretype") {
      const char *text = value();
      if (!text) return false;
      options.openblas_coretype = text;
    } else if (arg == "--kernels") {
      const char *text = value();
      if (!text) return false;
      const std::string list = text;
      options.matmul = list.find("matmul") != std::string::npos;
      options.conv = list.find("conv") != std::string::npos;
      if (!options.matmul && !options.conv)
        return fail("--kernels: expected matmul, conv or matmul,conv, got '" + list + "'");
    } else if (arg == "--threads") {
      if (!number(n)) return false;
      if (n < 1) return fail("--threads must be >= 1");
      options.threads = int(n);
    } else if (arg == "--rounds") {
      if (!number(n)) return false;
      if (n < 1) return fail("--rounds must be >= 1");
      options.timing.rounds = int(n);
    } else if (arg == "--min-time") {
      if (!number(options.timing.min_seconds)) return false;
    } else if (arg == "--min-runs") {
      if (!number(n)) return false;
      if (n < 1) return fail("--min-runs must be >= 1");
      options.timing.min_runs = int(n);
    } else if (arg == "--gap") {
      if (!number(options.timing.gap_seconds)) return false;
    } else if (arg == "--samples") {
      if (!number(n)) return false;
      options.samples = int(n);
    } else if (arg == "--db") {
      const char *text = value();
      if (!text) return false;
      options.db_path = text;
    } else if (arg == "--trials") {
      if (!number(n)) return false;
      if (n < 1) return fail("--trials must be >= 1");
      options.trials = int(n);
    } else if (arg == "--skip-halide") {
      options.halide = false;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      return fail("unknown argument '" + arg + "'");
    }
  }
  return true;
}

std::string joined_command(int argc, char **argv) {
  std::string text;
  for (int i = 0; i < argc; ++i) text += (i ? " " : "") + std::string(argv[i]);
  return text;
}

// A row that fails or throws on its first run is reported as unavailable instead of timed.
RowResult verify(KernelRow &row) {
  RowResult result;
  if (!row.unavailable.empty()) return result;
  try {
    row.run();
    result.error = row.check_error ? row.check_error() : std::nan("");
  } catch (const std::exception &e) {
    row.unavailable = std::string("first run failed: ") + e.what();
  }
  return result;
}

}  // namespace

int main(int argc, char **argv) {
  Options options;
  std::string error;
  if (!parse_options(argc, argv, options, error)) {
    std::fprintf(stderr, "tessel_bench_kernels: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  ensure_bench_environment(argv, options.threads, options.openblas_coretype);

  Adams2019Options adams;
  adams.threads = options.threads;
  adams.schedule_dir = options.schedule_dir;

  const std::string load_at_start = load_average();
  TesselRowOptions tessel_options;
  tessel_options.samples = options.samples;
  tessel_options.db_path = options.db_path;
  tessel_options.trials = options.trials;
  std::vector<KernelRow> rows;
  // The problems own the inputs and references every row points at; they live until the end.
  std::fprintf(stderr, "making inputs and naive references...\n");
  const MatmulProblem matmul = make_matmul_problem(1024, 1024, 1024, 1);
  const ConvProblem conv = make_resnet18_conv_problem(2);
  if (options.matmul) {
    rows.push_back(make_fma_peak_row(matmul.title(), options.threads));
    rows.push_back(make_openblas_matmul(matmul, options.threads));
    rows.push_back(make_onednn_matmul(matmul));
    if (options.halide) rows.push_back(make_adams2019_matmul(matmul, adams));
    for (KernelRow &row : make_tessel_matmul_rows(matmul, tessel_options)) rows.push_back(std::move(row));
  }
  if (options.conv) {
    rows.push_back(make_fma_peak_row(conv.title(), options.threads));
    for (KernelRow &row : make_onednn_conv(conv)) rows.push_back(std::move(row));
    if (options.halide) rows.push_back(make_adams2019_conv(conv, adams));
    for (KernelRow &row : make_tessel_conv_rows(conv, tessel_options)) rows.push_back(std::move(row));
  }

  std::vector<RowResult> results;
  for (KernelRow &row : rows) results.push_back(verify(row));
  const std::vector<Samples> samples = time_rows_interleaved(rows, options.timing);
  for (size_t i = 0; i < rows.size(); ++i) results[i].samples = samples[i];

  std::string environment;
  for (const std::string &line : bench_environment_summary())
    environment += (environment.empty() ? "" : ", ") + line;
  std::vector<std::string> extra = {
      std::to_string(options.threads) + " threads for every row; " + environment,
      "load average (1/5/15 min) at start: " + load_at_start + ", at end: " + load_average() +
          " (other jobs share the 2 cores; min-time GFLOP/s is the less disturbed figure)",
      "Halide target: " + adams2019_default_target(),
      "timing: " + options.timing.describe(),
      "GFLOP/s = FLOPs (2 per multiply-add) / time; 'vs best peer' = median GFLOP/s / best peer's median GFLOP/s",
      "max rel. error = max |out - ref| / max |ref| against a naive double-accumulated reference, inputs uniform "
      "in [-1, 1)",
  };
  std::ostringstream report;
  report << "## Kernel benchmark\n\n" << report_header(joined_command(argc, argv), extra);
  print_table(rows, results, report);
  std::cout << report.str() << std::flush;
  if (!options.out_file.empty()) {
    std::ofstream file(options.out_file);
    file << report.str();
    if (!file) {
      std::fprintf(stderr, "tessel_bench_kernels: cannot write %s\n", options.out_file.c_str());
      return 1;
    }
  }
  return 0;
}
