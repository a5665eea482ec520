#include "peers/report.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace tessel::bench {

static std::string command_output_line(const char *command) {
  std::string text;
  if (FILE *pipe = popen(command, "r")) {
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe)) text += buffer;
    pclose(pipe);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "unknown" : text;
}

std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(file >> one >> five >> fifteen)) return "unknown";
  return one + " " + five + " " + fifteen;
}

std::string report_header(const std::string &command, const std::vector<std::string> &extra_lines) {
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::string machine = command_output_line("lscpu | grep 'Model name' | sed 's/^Model name: *//'");
  std::ostringstream out;
  out << "- date: " << date << "\n";
  out << "- machine: " << machine << ", " << command_output_line("nproc") << " cores visible\n";
  out << "- command: `" << command << "`\n";
  for (const std::string &line : extra_lines) out << "- " << line << "\n";
  return out.str();
}

static std::string fixed(double value, int digits) {
  if (!std::isfinite(value)) return "-";
  std::ostringstream text;
  text << std::fixed << std::setprecision(digits) << value;
  return text.str();
}

static std::string scientific(double value) {
  if (std::isnan(value)) return "NaN";
  std::ostringstream text;
  text << std::scientific << std::setprecision(1) << value;
  return text.str();
}

// Pipes would break the markdown table.
static std::string cell(std::string text) {
  for (char &c : text)
    if (c == '|' || c == '\n') c = c == '|' ? '/' : ' ';
  return text;
}

void print_table(const std::vector<KernelRow> &rows, const std::vector<RowResult> &results, std::ostream &out) {
  std::vector<std::string> kernels;
  for (const KernelRow &row : rows) {
    bool seen = false;
    for (const std::string &k : kernels) seen = seen || k == row.kernel;
    if (!seen) kernels.push_back(row.kernel);
  }
  for (const std::string &kernel : kernels) {
    double best_peer = 0, peak = 0;
    std::string best_peer_name;
    double flops = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].kernel != kernel) continue;
      const double gflops = rows[i].flops / results[i].samples.median() * 1e-9;
      if (rows[i].is_peak) {
        if (rows[i].unavailable.empty() && std::isfinite(gflops)) peak = gflops;
        continue;
      }
      flops = rows[i].flops;
      if (rows[i].is_peer && rows[i].unavailable.empty() && std::isfinite(gflops) && gflops > best_peer) {
        best_peer = gflops;
        best_peer_name = rows[i].name;
      }
    }
    out << "\n### " << kernel << " (" << fixed(flops * 1e-9, 3) << " GFLOP per run)\n\n";
    out << "| kernel | median GFLOP/s | min-time GFLOP/s | vs best peer | of FMA peak | median ms | timed runs "
           "| max rel. error | compile / autoschedule | notes |\n";
    out << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const KernelRow &row = rows[i];
      if (row.kernel != kernel) continue;
      if (!row.unavailable.empty()) {
        out << "| " << cell(row.name) << " | unavailable | | | | | | | " << cell(row.setup) << " | "
            << cell(row.unavailable) << " |\n";
        continue;
      }
      const Samples &s = results[i].samples;
      const double median_gflops = row.flops / s.median() * 1e-9;
      const double min_gflops = row.flops / s.min() * 1e-9;
      std::string error = scientific(results[i].error);
      if (!(results[i].error <= kMaxRelativeError)) error += " **WRONG**";
      out << "| " << cell(row.name) << " | " << fixed(median_gflops, 1) << " | " << fixed(min_gflops, 1) << " | "
          << (best_peer > 0 && !row.is_peak ? fixed(median_gflops / best_peer, 2) : "-") << " | "
          << (peak > 0 ? fixed(median_gflops / peak, 2) : "-") << " | " << fixed(s.median() * 1e3, 3)
          << " | " << s.seconds.size() << " | " << error << " | " << cell(row.setup) << " | " << cell(row.note)
          << " |\n";
    }
    if (!best_peer_name.empty()) out << "\nbest peer (median): " << best_peer_name << "\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].kernel != kernel || !rows[i].headline || !rows[i].unavailable.empty()) continue;
      const double mine = rows[i].flops / results[i].samples.median();
      out << "\n" << rows[i].name << ", median GFLOP/s against:";
      for (size_t j = 0; j < rows.size(); ++j) {
        if (rows[j].kernel != kernel || !(rows[j].is_peer || rows[j].is_peak) || !rows[j].unavailable.empty()) continue;
        out << " " << cell(rows[j].name) << " " << fixed(mine / (rows[j].flops / results[j].samples.median()), 2) << "x;";
      }
      out << "\n";
    }
  }
}

}  // namespace tessel::bench
