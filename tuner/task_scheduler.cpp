#include "tuner/task_scheduler.h"

#include <algorithm>

namespace tessel {

/// A task's part of the model's latency: weight x its best measured latency, or the built-in
/// one before any round (0: unknown).
static double share_of(const TaskProgress &t) {
  return t.weight * (t.best_seconds > 0 ? t.best_seconds : t.baseline_seconds);
}

int TaskScheduler::next_task(int budget_left) const {
  if (budget_left < 1 || tasks_.empty()) return -1;
  // Warm-up: every task gets one round before any gets two, the heaviest first, so that a
  // budget that ends during the warm-up has spent it where the model's time is (ResNet-18's
  // two stage-4 convs, 40% of its GPU time, come last in model order).
  int heaviest = -1;
  double heaviest_share = -1;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const TaskProgress &t = tasks_[i];
    if (t.retired || !t.history.empty()) continue;
    const double share = share_of(t);
    if (share > heaviest_share) {
      heaviest_share = share;
      heaviest = static_cast<int>(i);
    }
  }
  if (heaviest >= 0) return heaviest;
  int best = -1;
  double best_gain = -1;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const TaskProgress &t = tasks_[i];
    if (t.retired) continue;
    // Relative improvement over the last two rounds; a floor keeps stalled tasks alive
    // in proportion to their share of the latency.
    double recent = 0;
    if (t.history.size() >= 2) {
      const double before = t.history[t.history.size() - 2], now = t.history.back();
      if (before > 0 && now > 0) recent = std::max(0.0, (before - now) / before);
    } else {
      recent = 0.5;  // one round only: still much to learn
    }
    const double gain = t.weight * t.best_seconds * (recent + 0.05) / (1.0 + 0.01 * t.trials);
    if (gain > best_gain) {
      best_gain = gain;
      best = static_cast<int>(i);
    }
  }
  return best;
}

int TaskScheduler::round_size(int task, int batch) const {
  const TaskProgress &t = tasks_.at(task);
  if (!t.history.empty() || batch <= 2) return batch;
  // Measured on ResNet-18 (26 tasks, batches of 8): 200 trials were the warm-up alone, nine
  // records per task, the Slices, pooling and 1x1 convs of 1-30 us as many as the 0.15 ms
  // convs that hold the model's time.
  double total = 0;
  for (const TaskProgress &other : tasks_) {
    if (other.retired) continue;
    if (share_of(other) <= 0) return batch;  // a task of unknown latency: no comparison
    total += share_of(other);
  }
  return share_of(t) < kLightShare * total ? std::max(2, batch / 4) : batch;
}

void TaskScheduler::record_round(int task, int measured, double best_seconds) {
  TaskProgress &t = tasks_.at(task);
  t.trials += measured;
  if (best_seconds > 0 && (t.best_seconds == 0 || best_seconds < t.best_seconds)) t.best_seconds = best_seconds;
  t.history.push_back(t.best_seconds);
}

double TaskScheduler::estimated_latency() const {
  double total = 0;
  for (const TaskProgress &t : tasks_) total += t.weight * t.best_seconds;
  return total;
}

}  // namespace tessel
