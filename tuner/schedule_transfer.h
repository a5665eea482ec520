#pragma once
// Transfer tuning: a task the database has never seen starts from the best schedules of its
// nearest relatives there (the same fused ops and attributes at other shapes, from this or
// other models), fitted to its own shape, before any random sketch. Relatives are found by
// the workload text with its tensor shapes blanked; nearness is how far the shapes are
// apart, dimension by dimension, in log scale.
#include <string>
#include <vector>

#include "base/result.h"
#include "schedule/schedule_ir.h"
#include "search/schedule_space.h"
#include "task/task.h"
#include "tuning_db/tuning_database.h"

namespace tessel {

/// The workload text with every tensor shape left out: equal for the same ops, attributes,
/// dtypes and wiring at any shapes.
std::string workload_family(const std::string &workload_text);

/// Sum over the tensors' dimensions of |ln(a / b)|; infinite when the tensors' count or
/// ranks differ. 0 for equal shapes.
double shape_distance(const std::string &workload_text_a, const std::string &workload_text_b);

struct TransferredSchedule {
  Schedule schedule;  // fitted to the task
  std::string from_workload_key;
  double distance = 0;
};

/// Up to `count` schedules for `task`: the fastest records of its nearest relatives on
/// `target` (nearest workload first, each one's fastest first; its own key left out), each
/// fitted by `space` (those that cannot be are skipped), without repeats.
Result<std::vector<TransferredSchedule>> transferred_schedules(const Task &task, const ScheduleSpace &space,
                                                               const TuningDatabase &db, const std::string &target,
                                                               int count);

}  // namespace tessel
