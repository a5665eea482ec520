#pragma once
// Which vendor-library operation a tessel task is, if any: the bridge from a fused group
// (Conv+Relu, MatMul+Add+Relu, Softmax, an elementwise chain ...) to a bench::PeerProblem
// over the very buffers tessel's kernel reads.
#include <string>
#include <vector>

#include "base/result.h"
#include "peers/peer_problem.h"
#include "task/task.h"
#include "tensor/tensor.h"

namespace tessel {

/// The peer problem of `task`, whose kernel inputs are `inputs` (task_inputs order) and whose
/// expected output is `reference`. An error value says why no peer computes this task (for
/// example "Conv+Add+Relu: a residual add has no peer here").
Result<bench::PeerProblem> peer_problem_for_task(const Task &task, const std::vector<Tensor> &inputs,
                                                 const std::vector<float> *reference);

/// Bytes a run of the task must move at least: every input read once, every output written once.
double task_compulsory_bytes(const Task &task);

}  // namespace tessel
