#include "peers/onednn_peer.h"

#include "peers/onednn_task_peer.h"

namespace tessel::bench {

// The kernel benchmark's two problems as PeerProblems: one oneDNN peer serves both it and
// `tessel bench` (onednn_task_peer.cpp). Rows keep pointers into `problem`, not the PeerProblem.

KernelRow make_onednn_matmul(const MatmulProblem &problem) {
  return make_onednn_rows(as_peer_problem(problem)).front();
}

std::vector<KernelRow> make_onednn_conv(const ConvProblem &problem) {
  return make_onednn_rows(as_peer_problem(problem));
}

}  // namespace tessel::bench
