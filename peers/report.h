#pragma once
// Markdown output of the kernel benchmark: a header saying when, where and how it was measured,
// then one table per kernel.
#include <ostream>
#include <string>
#include <vector>

#include "peers/kernel_row.h"
#include "peers/timing.h"

namespace tessel::bench {

struct RowResult {
  Samples samples;
  double error = 0;  // from KernelRow::check_error before timing
};

/// Rows whose output error exceeds this are marked wrong in the table.
constexpr double kMaxRelativeError = 1e-4;

/// "date, machine, command" plus the thread count and timing method, as markdown.
std::string report_header(const std::string &command, const std::vector<std::string> &extra_lines);

/// The 1/5/15-minute load averages from /proc/loadavg: how busy the shared machine was.
std::string load_average();

/// One table per distinct KernelRow::kernel, in the order the kernels first appear.
void print_table(const std::vector<KernelRow> &rows, const std::vector<RowResult> &results, std::ostream &out);

}  // namespace tessel::bench
