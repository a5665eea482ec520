#pragma once
// One line of the kernel benchmark table: something that computes a kernel, how many FLOPs one
// run does, and how to check its output. Peers and tessel's own schedules are both rows.
#include <functional>
#include <string>
#include <utility>

namespace tessel::bench {

struct KernelRow {
  std::string kernel;                   // which table the row belongs to, e.g. "matmul 1024x1024x1024"
  std::string name;                     // e.g. "OpenBLAS cblas_sgemm"
  bool is_peer = true;                  // "vs best peer" compares against the fastest row with is_peer set
  bool is_peak = false;                 // the machine's measured ceiling: "of peak" divides by this row
  bool headline = false;                // a summary line under the table gives its ratio to every peer
  double flops = 0;                     // floating-point operations of one run (an FMA counts as 2)
  std::function<void()> run;            // one complete, synchronous execution; this is what is timed
  /// Evicts what the row reads that a model would hold constant (weights, bias) from the
  /// caches; `--cold` calls it, untimed, before every run. Null: nothing to evict.
  std::function<void()> evict_constants;
  std::function<double()> check_error;  // after run(): max |out - ref| / max |ref|
  std::string setup;                    // compile / autoschedule time as text (shown as is), empty if none
  std::string note;                     // implementation detail worth printing (oneDNN impl, OpenBLAS core)
  std::string unavailable;              // non-empty: the row could not be built; the reason is printed instead
};

/// A row that could not be built, so the table still says why it is missing.
inline KernelRow unavailable_row(std::string kernel, std::string name, std::string reason) {
  KernelRow row;
  row.kernel = std::move(kernel);
  row.name = std::move(name);
  row.unavailable = std::move(reason);
  return row;
}

}  // namespace tessel::bench
