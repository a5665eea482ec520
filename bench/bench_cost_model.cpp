// How much the pretrained cost model knows about a model it never saw: pairwise ranking
// accuracy, within each task, on the held-out model's records, for a model trained online on
// only the first N of those records (what `tessel tune` has after N trials) and for the
// pretrained model continued on the same N, at N = 0, 64, 256 (and any --at list).
//
//   tessel_bench_cost_model --db HELD_OUT.db --model held_out.onnx [--model ...]
//                           --pretrained models/cost_model/llvm.json [--at 0,64,256]
//                           [--target llvm] [--out FILE.md]
//
// HELD_OUT.db holds the held-out models' records (tuned from an empty database, in the order
// the tuner measured them); the first N are the training records, every later one is a test
// record. The pretrained model must not have been trained on these workloads
// (scripts/pretrain_cost_model.py leaves them out).
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "executor/load_model.h"
#include "graph/fusion/fuse.h"
#include "tuner/cost_model_training.h"
#include "tuner/ranking_metrics.h"
#include "tuner/xgb_cost_model.h"
#include "tuning_db/tuning_database.h"

using namespace tessel;

namespace {

struct Args {
  std::string db, pretrained, target = "llvm", out;
  std::vector<std::string> models;
  std::vector<int> at = {0, 64, 256};
};

bool parse_args(int argc, char **argv, Args &args) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--db") args.db = value;
    else if (flag == "--model") args.models.push_back(value);
    else if (flag == "--pretrained") args.pretrained = value;
    else if (flag == "--target") args.target = value;
    else if (flag == "--out") args.out = value;
    else if (flag == "--at") {
      args.at.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');) args.at.push_back(std::stoi(item));
    } else {
      return false;
    }
  }
  return !args.db.empty() && !args.pretrained.empty() && !args.models.empty();
}

/// Mean over workloads (with two or more test samples) of the pairwise accuracy of `model`.
double mean_accuracy(const CostModel &model, const std::vector<CostSample> &test) {
  if (!model.trained()) return 0.5;  // untrained: every score ties
  std::map<std::string, std::vector<size_t>> by_workload;
  for (size_t i = 0; i < test.size(); ++i) by_workload[test[i].workload_key].push_back(i);
  double sum = 0;
  int groups = 0;
  for (const auto &[key, indices] : by_workload) {
    if (indices.size() < 2) continue;
    std::vector<std::vector<float>> rows;
    std::vector<double> actual;
    for (size_t i : indices) {
      rows.push_back(test[i].features);
      actual.push_back(test[i].throughput);
    }
    auto scores = model.predict(rows);
    if (!scores.ok()) continue;
    sum += pairwise_ranking_accuracy(std::vector<double>(scores->begin(), scores->end()), actual);
    ++groups;
  }
  return groups ? sum / groups : 0.5;
}

}  // namespace

int main(int argc, char **argv) {
  Args args;
  if (!parse_args(argc, argv, args)) {
    std::fprintf(stderr, "usage: tessel_bench_cost_model --db HELD_OUT.db --model M.onnx [--model ...] "
                         "--pretrained MODEL.json [--at 0,64,256] [--target llvm] [--out FILE.md]\n");
    return 2;
  }
  auto db = TuningDatabase::open(args.db);
  if (!db.ok()) return std::fprintf(stderr, "error: %s\n", db.error().message.c_str()), 1;
  std::ostringstream table;
  table << "| model | records | N | online-only | pretrained + online |\n|---|---|---|---|---|\n";
  for (const std::string &path : args.models) {
    auto graph = load_optimized_model(path, OptimizeOptions{});
    if (!graph.ok()) return std::fprintf(stderr, "error: %s\n", graph.error().message.c_str()), 1;
    std::set<std::string> keys;
    for (const Workload &w : distinct_workloads(graph.value(), partition_graph(graph.value()))) keys.insert(w.workload_key);
    auto records = db->records_for_target(args.target);
    if (!records.ok()) return std::fprintf(stderr, "error: %s\n", records.error().message.c_str()), 1;
    std::vector<CostSample> samples;  // this model's, oldest first
    for (CostSample &s : cost_samples(records.value()))
      if (keys.count(s.workload_key)) samples.push_back(std::move(s));
    for (int n : args.at) {
      if (n >= static_cast<int>(samples.size())) continue;
      const std::vector<CostSample> train(samples.begin(), samples.begin() + n), test(samples.begin() + n, samples.end());
      XgbCostModel online, pretrained;
      if (auto started = pretrained.start_from(args.pretrained); !started.ok())
        return std::fprintf(stderr, "error: %s\n", started.error().message.c_str()), 1;
      if (train.size() >= 8) {
        static_cast<void>(online.train(train));
        static_cast<void>(pretrained.train(train));
      }
      char row[256];
      std::snprintf(row, sizeof row, "| %s | %zu | %d | %.3f | %.3f |\n", path.substr(path.find_last_of('/') + 1).c_str(),
                    samples.size(), n, mean_accuracy(online, test), mean_accuracy(pretrained, test));
      table << row;
      std::fputs(row, stdout);
      std::fflush(stdout);
    }
  }
  if (!args.out.empty()) std::ofstream(args.out) << table.str();
  return 0;
}
