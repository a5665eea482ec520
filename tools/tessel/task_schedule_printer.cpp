// `tessel inspect model.onnx --task N --schedule FILE|default`: one task's schedule as text and
// as the loop nest (schedule tree) it stands for.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "codegen/target.h"
#include "graph/fusion/fuse.h"
#include "schedule/schedule_tree.h"
#include "search/cpu/sampler.h"
#include "task/task.h"
#include "tools/tessel/commands.h"

namespace tessel {

int print_task_schedule(const Graph &graph, int task_index, const std::string &schedule_source,
                        const std::string &target_text) {
  auto target = parse_target(target_text);
  if (!target.ok()) return fail(target.error().message);
  auto shared = std::make_shared<const Graph>(graph);
  const std::vector<Workload> tasks = distinct_workloads(*shared, partition_graph(*shared));
  if (task_index < 0 || task_index >= static_cast<int>(tasks.size()))
    return fail("--task " + std::to_string(task_index) + " is out of range: the model has " +
                std::to_string(tasks.size()) + " tasks (0.." + std::to_string(static_cast<int>(tasks.size()) - 1) + ")");
  const Workload &chosen = tasks[task_index];
  auto task = make_task(shared, chosen.group);
  if (!task.ok()) return fail(task.error().message);

  Schedule schedule;
  if (schedule_source == "default") {
    schedule = default_cpu_schedule(task->compute, cpu_target_desc(target.value()));
  } else {
    std::ifstream in(schedule_source);
    if (!in) return fail("cannot read schedule file '" + schedule_source + "'");
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = parse_schedule(text.str());
    if (!parsed.ok()) return fail(schedule_source + ": " + parsed.error().message);
    schedule = parsed.value();
  }
  auto tree = validate_and_replay(task->compute, schedule);
  if (!tree.ok()) return fail("the schedule does not apply to task " + std::to_string(task_index) + ": " + tree.error().message);

  const std::string ops = group_ops_text(graph, chosen.group);
  std::printf("task %d  key %s  %s  weight %d\n\n", task_index, chosen.workload_key.c_str(), ops.c_str(), chosen.weight);
  std::printf("schedule (%s, hash %s):\n%s\n", schedule_source.c_str(), schedule_hash(schedule).c_str(),
              to_text(schedule).c_str());
  std::printf("loop nest:\n%s", tree->to_text().c_str());
  return 0;
}

}  // namespace tessel
