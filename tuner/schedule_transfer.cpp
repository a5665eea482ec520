#include "tuner/schedule_transfer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

namespace tessel {
namespace {

/// Where a tensor's shape is in a workload text: ":<dtype>[d0,d1,...]" (attributes are
/// "name=[...]", never after a colon).
struct ShapeSpan {
  size_t open = 0, close = 0;  // the brackets
};

std::vector<ShapeSpan> shape_spans(const std::string &text) {
  std::vector<ShapeSpan> spans;
  for (size_t colon = text.find(':'); colon != std::string::npos; colon = text.find(':', colon + 1)) {
    size_t i = colon + 1;
    while (i < text.size() && std::isalnum(static_cast<unsigned char>(text[i]))) ++i;
    if (i == colon + 1 || i >= text.size() || text[i] != '[') continue;
    const size_t close = text.find(']', i);
    if (close == std::string::npos) break;
    spans.push_back({i, close});
  }
  return spans;
}

std::vector<std::vector<double>> shapes_of(const std::string &text) {
  std::vector<std::vector<double>> shapes;
  for (const ShapeSpan &span : shape_spans(text)) {
    std::vector<double> dims;
    const std::string inside = text.substr(span.open + 1, span.close - span.open - 1);
    size_t start = 0;
    while (start < inside.size()) {
      size_t comma = inside.find(',', start);
      if (comma == std::string::npos) comma = inside.size();
      dims.push_back(std::max(1.0, std::atof(inside.substr(start, comma - start).c_str())));
      start = comma + 1;
    }
    shapes.push_back(std::move(dims));
  }
  return shapes;
}

}  // namespace

std::string workload_family(const std::string &workload_text) {
  std::string family;
  size_t from = 0;
  for (const ShapeSpan &span : shape_spans(workload_text)) {
    family += workload_text.substr(from, span.open + 1 - from);
    from = span.close;
  }
  return family + workload_text.substr(from);
}

double shape_distance(const std::string &workload_text_a, const std::string &workload_text_b) {
  const auto a = shapes_of(workload_text_a), b = shapes_of(workload_text_b);
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double distance = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    if (a[t].size() != b[t].size()) return std::numeric_limits<double>::infinity();
    for (size_t d = 0; d < a[t].size(); ++d) distance += std::fabs(std::log(a[t][d] / b[t][d]));
  }
  return distance;
}

Result<std::vector<TransferredSchedule>> transferred_schedules(const Task &task, const ScheduleSpace &space,
                                                               const TuningDatabase &db, const std::string &target,
                                                               int count) {
  std::vector<TransferredSchedule> picked;
  if (count <= 0) return picked;
  TESSEL_TRY(const auto tuned, db.tuned_workloads(target));
  const std::string family = workload_family(task.workload_text);
  std::vector<std::pair<double, std::string>> relatives;  // (distance, key)
  for (const auto &[key, text] : tuned) {
    if (key == task.workload_key || workload_family(text) != family) continue;
    const double distance = shape_distance(task.workload_text, text);
    if (std::isfinite(distance)) relatives.emplace_back(distance, key);
  }
  std::sort(relatives.begin(), relatives.end());
  std::set<std::string> taken;  // hashes of the fitted schedules
  // The nearest relatives first, at most two schedules of each (their fastest), so that the
  // list holds several shapes' choices; then what is left is filled from the nearest again.
  for (const int per_relative : {2, count}) {
    for (const auto &[distance, key] : relatives) {
      // One more than needed: a built-in record (no text: each task has its own) may be among them.
      TESSEL_TRY(const std::vector<TuningRecord> fastest, db.top_k(key, target, count + 1));
      int from_this = 0;
      for (const TuningRecord &record : fastest) {
        if (static_cast<int>(picked.size()) >= count) return picked;
        if (from_this >= per_relative) break;
        if (record.schedule_text.empty()) continue;
        auto parsed = parse_schedule(record.schedule_text);
        if (!parsed.ok()) continue;
        auto fitted = space.adapt(task.compute, parsed.value());
        if (!fitted.ok()) continue;
        ++from_this;  // taken in an earlier pass or now
        if (!taken.insert(schedule_hash(fitted.value())).second) continue;
        picked.push_back({fitted.value(), key, distance});
      }
    }
  }
  return picked;
}

}  // namespace tessel
